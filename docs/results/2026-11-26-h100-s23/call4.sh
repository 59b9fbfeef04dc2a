#!/usr/bin/env bash
# Session 23, call 4 (issue 21). Call 3 (3781639 vs 2e81ddd): the delta rule -40 µs at pp520 and -1.0 ms at pp4096
# (FlashQLA in 4 pieces), but dn_prep's per-token chunk sums of g (each of a token's 16 x 64 softplus recomputed by
# every later token of its chunk) cost +180 µs at pp4096 and +330 µs at pp8192 ("ours"). Now "new" (COMMIT): gate
# blocks of 64 rows computing beta and g once per row, g's chunk sums by a warp scan. 1. builds; 2. the prefill GPU
# tests of new (incl. dn_prep's chunk sums at 1 / 63 / 64 / 200 rows, the rule test with 2048 / 4097 / 8190 examples);
# the family's prefill tests at tiny-megakernel and the 4B; 3. compare prefill alternating with base (2e81ddd), 2 rounds.
# Prediction: "ours" back to base's or below (the 18 dn_state_out launches gone: -20 to -40 µs); pp520 2.87 -> ~2.80 ms
# (+2.5%), pp4096 12.5 -> ~11.3 ms (+10%), pp8192 ~-0.3 ms (+1.5%: the cumsum kernels and launches).
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
in_tree new 200 python3 -m pytest -q -m gpu -x tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
for round in 1 2; do
  for side in base new; do
    in_tree $side 130 python3 -m compare prefill --pp 520,4096,8192 --reference-pp 0 --out "$OUT/r/prefill_${side}_$round" \
        > "$OUT/r/prefill_${side}_$round.txt" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${side}_$round.txt" | cut -c1-250; pack
  done
done
in_tree new $((590 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel_family.py -k "(tiny or 4b) and (prefill or every_layer)" \
    -p no:cacheprovider > "$OUT/r/tests_family.txt" 2>&1
echo "family tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_family.txt" | cut -c1-300; pack
true
