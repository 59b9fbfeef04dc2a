#!/usr/bin/env bash
# Session 23, call 3 (issue 21). Tree "new" (COMMIT = 3781639): dn_prep writes g summed within FlashQLA's 64-row
# chunks (FlashQLA's cumsum kernel gone), dn_out_norm copies the layer's final state (dn_state_out gone: 18 launches),
# FlashQLA's prompt in 4 pieces at 2k-8k rows; "base" = .ab_base (2e81ddd). 1. builds; 2. compare prefill
# alternating, 2 rounds, 520 / 4096 / 8192; 3. qla_cp at 6144 / 8192 / 12288 (where the four-piece rule ends).
# (The prefill GPU tests of new: call 4.)
# Prediction: pp520 -40 µs (cumsum) - ~30 µs (18 launches) = 2.87 -> ~2.80 ms (+2.5%); pp4096 -0.9 ms (18 x 47 µs
# split, call 2) = 12.28 -> ~11.4 ms (+8%); pp8192: the split unmeasured at 128 chunks, within +-3%.
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
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
for round in 1 2; do
  for side in base new; do
    in_tree $side 130 python3 -m compare prefill --pp 520,4096,8192 --reference-pp 0 --out "$OUT/r/prefill_${side}_$round" \
        > "$OUT/r/prefill_${side}_$round.txt" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${side}_$round.txt" | cut -c1-250; pack
  done
done
in_tree new $((590 - SECONDS)) python3 docs/results/2026-11-26-h100-s23/qla_cp.py "$OUT/r/qla_cp" 6144,8192,12288 > "$OUT/r/qla_cp.txt" 2>&1
echo "qla_cp: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/qla_cp.txt" | cut -c1-200; pack
true
