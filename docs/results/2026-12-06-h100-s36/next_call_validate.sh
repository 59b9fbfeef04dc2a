#!/usr/bin/env bash
# Prepared in session 36, NOT YET RUN: the first call of the next session. The review mends after call 4 (the later
# units' L2 prefetch at B = 4-8 restored: their kernels' SASS is no longer the measured one; batch_ring_slots' default
# clamped to what fits; the 4B's static_assert) on a GPU: the batch GPU file, the family's GPU tests, memcheck at B = 8,
# tg128 at B = 1, 4, 8 against 17d34a7 (the measured kernels, as .ab_base) alternating twice, then the Triton tier at
# B = 8 in the same run as the megakernel (10 ring slots now the default). Predicted: every test passes; b8 / b4 equal to
# 17d34a7 within 0.5% (at full grid the restored loop runs no iteration); Triton ~5,370, megakernel ~9,700-9,800: ~1.82x.
# Run from main's checkout with 17d34a7 archived:
#   rm -rf .ab_base && mkdir .ab_base && git archive 17d34a7 | tar -x -C .ab_base && rm -rf .ab_base/docs \
#     && echo 17d34a7 > .ab_base/COMMIT && git rev-parse --short HEAD > COMMIT   (carry .whl .qla COMMIT .ab_base)
set -u
source docs/results/device_call.sh --site
for side in new base; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 270 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=260 tests/test_batch_gpu.py \
    > "$OUT/r/tests_batch.txt" 2>&1
echo "batch: exit $? ${SECONDS}s"; tail -2 "$OUT/r/tests_batch.txt" | cut -c1-300; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 50 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 70 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,4,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 base; bench 2 new; bench 3 base; bench 4 new
# then, in a second call: tests/test_megakernel_family.py -m gpu (the 4B), memcheck-ring-8, and
#   compare bench --tiers triton,megakernel --batch 8 (the ratio with 10 slots)
true
