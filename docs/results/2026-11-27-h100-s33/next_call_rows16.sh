#!/usr/bin/env bash
# Prepared in session 33, NOT YET RUN (after next_call_conv_first.sh, only if that variant is kept): branch
# variant-core-rows16 (on variant-core-conv-first; patch variant_core_rows16_on_conv_first.patch): a batch's DeltaNet
# core at 16 lanes a state row, 8 k a lane: 4 passes of 2 rows a warp, each dot a 4-level shuffle sum over a half-warp
# (32 shuffles a warp, not 80; NOTES v31: B = 8's rows take 2.6 µs of its unit's 6.35). Batch rows' bits change (the
# dots' order), batch 1's kernels are untouched. sm_90a: registers and spills of all kernels unchanged except B = 2's
# one-step kernel (0 → 52 / 60 B, under build.py's bound; a review read them in head_inputs, the gate thread and the
# state prefetch, not in the recurrence; if kept, build.py's "~24 B" line needs it); sm_80 / 86 / 89 build within the bounds.
# Run from a checkout of the branch ("new"), with the conv-first branch archived as .ab_cf (carry .whl, .qla, COMMIT, .ab_cf):
#   git checkout variant-core-rows16 && rm -rf .ab_cf && mkdir .ab_cf && git archive variant-core-conv-first | tar -x -C .ab_cf \
#     && rm -rf .ab_cf/docs && git rev-parse --short variant-core-conv-first > .ab_cf/COMMIT && git rev-parse --short HEAD > COMMIT
# Predicted: the batch GPU tests pass (rows within the bf16 bounds of the same row alone, a row's bits independent of
# its neighbours and of the grid, repeatable, poison-proof); B = 8's unit "rows updated" − "convolved" 2.6 → ~1.5 µs,
# tg128 b8 +1.5 to +3% against cf, B = 2 within ±1% (its spills), batch 1 equal.
set -u
source docs/results/device_call.sh --site
for side in new cf; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 240 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 tests/test_batch_gpu.py \
    -k "megakernel" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests.txt" | cut -c1-200; pack
n=0
for side in cf new cf new; do
  n=$((n + 1))
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$n $side: skipped"; continue; fi
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,2,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
if [ $((585 - SECONDS)) -gt 45 ]; then
  in_tree new 60 python3 -m megakernel anatomy --batch 8 --context 16 > "$OUT/r/anatomy_b8_new.txt" 2>&1
  echo "anatomy: exit $? ${SECONDS}s"; grep "DeltaNet core" "$OUT/r/anatomy_b8_new.txt"; pack
fi
true
