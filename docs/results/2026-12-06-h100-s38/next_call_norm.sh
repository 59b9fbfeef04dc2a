#!/usr/bin/env bash
# Prepared in session 38, NOT YET RUN: the first call of the next session. Trees: new (main's checkout: 4f0e4e6's
# kernels) and norm (.ab_norm: branch s38-norm-on-main, 2f4c088: a batch's in-projections and gate/up read the norm's
# x (1 + w) unscaled and scale each dot by its row's 1 / rms in the tiles' epilogue, one block barrier before the
# tiles, not two; what session 38 measured +1.54% over the ring-swizzle tree, there without the swizzles, which
# measured −1.15%).
# Predicted: tg128 b8 norm +1 to +2% over new, batch 1 equal (its kernels' SASS identical to main's, sm_90a); the
# Triton tier and norm's megakernel at B = 8 in one run (the 2x bar: ~1.9x expected); the batch GPU file on
# norm passes (its bits differ from main's by one rounding a dot: within the bounds every batch test checks).
# Setup (from main's checkout):
#   rm -rf .ab_norm && mkdir .ab_norm && git archive s38-norm-on-main | tar -x -C .ab_norm && rm -rf .ab_norm/docs \
#     && git rev-parse --short s38-norm-on-main > .ab_norm/COMMIT; git rev-parse --short HEAD > COMMIT
#   (carry .whl .qla COMMIT .ab_norm)
set -u
source docs/results/device_call.sh --site
build_trees new norm
n=0
for side in new norm norm new new norm; do n=$((n + 1)); tg_bench $n $side 1,8 320; done
if [ $((585 - SECONDS)) -gt 130 ]; then
  in_tree norm 120 python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
  echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| tg128' "$OUT/r/bench_triton_b8.txt" | cut -c1-110; pack
fi
if [ $((585 - SECONDS)) -gt 60 ]; then
  in_tree norm $((575 - SECONDS)) python3 -m pytest -q tests/test_batch_gpu.py -k megakernel > "$OUT/r/tests_norm.txt" 2>&1
  echo "tests norm: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_norm.txt"; pack
fi
true
