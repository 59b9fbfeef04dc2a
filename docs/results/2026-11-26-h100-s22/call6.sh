#!/usr/bin/env bash
# Session 22, call 6 (issue 21). A/B of the kept prefill against fe8cb66 (both FlashQLA) with compare prefill's steadier
# timing (5 prefills after 2 untimed, per length), alternating, 2 rounds: "base" = .ab_base (fe8cb66), "new" = the tree
# (COMMIT: dn_prep a block per (token, pass), the last layer's last row alone). Then the family's prefill-then-decode
# and every-layer tests at tiny-megakernel and the 4B (dn_prep at other widths: 4B's 32 value heads).
# Prediction: pp256 -0.02 ms (dn_prep 128 -> 107 µs) and -0.04 (the last layer's row), pp520 -0.06, pp4096 -0.2 ms.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in base new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
(cd "$ROOT" && PYTHONPATH=$ROOT:/tmp/site timeout 240 python3 -c "
import megakernel.build as b
from reference import ModelConfig
for n in ('tiny-megakernel', 'qwen3.5-4b'): b.load(config=ModelConfig.named(n))" > "$OUT/r/build_family.log" 2>&1) &
wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
for round in 1 2; do
  for side in base new; do
    in_tree $side 100 python3 -m compare prefill --pp 256,520,4096 --reference-pp 0 --out "$OUT/r/prefill_${side}_$round" > "$OUT/r/prefill_${side}_$round.txt" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^\| pp" "$OUT/r/prefill_${side}_$round.txt" | cut -c1-70; pack
  done
done
in_tree new 200 python3 -m pytest -q -m gpu tests/test_megakernel_family.py -k "(tiny or 4b) and (prefill or every_layer)" -p no:cacheprovider > "$OUT/r/tests_family.txt" 2>&1
echo "family tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_family.txt" | cut -c1-300; pack
