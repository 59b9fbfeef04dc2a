#!/usr/bin/env bash
# Session 23, call 6 (issue 21: pp256, and the time to first token of a chat turn). Tree "new" (COMMIT): a plan of at
# most 256 rows runs its out-projections and downs (N = 1,024) as one batched GEMM over 2 slices of K into fp32
# partials, summed by the next add_rms_norm (call 1: at 256 rows out 7.25 -> 5.55 µs, down 9.91 -> 6.97; no gain at
# 520); "prev" = .ab_prev (f68ec23, call 5's kernels). 1. builds; 2. the prefill GPU tests of new; 3. compare prefill
# alternating, 2 rounds: 64 / 128 / 256 / 520 fresh and 256 @ d16384 (a chat turn on a long conversation).
# Prediction: -4 µs a layer (-4.6 for the two GEMMs, +0.6 for the norms reading 2 MB of fp32 instead of 0.5 MB of
# bf16): pp256 2.03 -> ~1.93 ms (+5%), pp256 @ d16384 ~4.0 -> ~3.9 ms (+2.5%), pp64 / pp128 +5-8% (fewer tiles still),
# pp520 unchanged (no split there).
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
for side in prev new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
in_tree new 230 python3 -m pytest -q -m gpu -x tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
for round in 1 2; do
  for side in prev new; do
    in_tree $side 100 python3 -m compare prefill --pp 64,128,256,520 --depth 0,16384 --reference-pp 0 \
        --out "$OUT/r/prefill_${side}_$round" > "$OUT/r/prefill_${side}_$round.txt" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${side}_$round.txt" | cut -c1-150; pack
  done
done
true
