#!/usr/bin/env bash
# Prepared in session 38, NOT YET RUN: the first call of the next session. Four trees, each on the one before:
#   new   main's checkout (4f0e4e6's kernels)
#   norm  .ab_norm, branch s38-norm-on-main (8196446): a batch's in-projections and gate/up read the norm's x (1 + w)
#         unscaled and scale each dot by its row's 1 / rms in the tiles' epilogue (one block barrier before the tiles,
#         not two): session 38 measured it +1.54% on the ring-swizzle tree, whose swizzles measured −1.15%
#   p1    .ab_p1, branch s38-lm-pass1-chains (6d39ccb): the int8 lm_head's pass 1 at a batch sums a warp's 64 mmas an
#         item in four independent chains, not one (each mma.sync waits for its accumulator's last)
#   kdc   .ab_kdc, branch s38-kd-chains (476b6a6): the K = D tiles and
#         pass 2 in two chains (the hi and lo planes'); its B = 8 one-step kernel spills 80 / 68 B (over compile_check's
#         72 B bound; the spills are stores at the launch's start and ~12 reloads a launch)
# Predicted: tg128 b8 norm +1 to +2% over new; p1 +0 to +0.5% over norm (pass 1 is ~15 items a block a step, each
# chain ~2,100 cycles → its issue bound, ~1,600; nothing if the lm_head runs at its stream's pace); kdc −0.5 to +0.5%
# over p1 (the K = D phases run at 74-98% of the copy rate, NOTES v36: their tiles' chains hardly on the path; its
# spills); batch 1 not run (its kernels' SASS identical in all four trees, sm_90a); the Triton tier and kdc's
# megakernel at B = 8 in one run (the 2x bar); the batch GPU file (its megakernel tests) on kdc, which holds all three.
# Setup (from main's checkout):
#   for s in norm:s38-norm-on-main p1:s38-lm-pass1-chains kdc:s38-kd-chains; do n=${s%%:*}; rm -rf .ab_$n && mkdir .ab_$n \
#     && git archive ${s#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs && git rev-parse --short ${s#*:} > .ab_$n/COMMIT; done
#   git rev-parse --short HEAD > COMMIT   (carry .whl .qla COMMIT .ab_norm .ab_p1 .ab_kdc)
set -u
source docs/results/device_call.sh --site
build_trees new norm p1 kdc
n=0
for side in new norm p1 kdc kdc p1 norm new; do n=$((n + 1)); tg_bench $n $side 8 330; done
triton_b8 kdc 120
if [ $((585 - SECONDS)) -gt 60 ]; then
  in_tree kdc $((575 - SECONDS)) python3 -m pytest -q tests/test_batch_gpu.py -k megakernel > "$OUT/r/tests_kdc.txt" 2>&1
  echo "tests kdc: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_kdc.txt"; pack
fi
true
