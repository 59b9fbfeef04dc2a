#!/usr/bin/env bash
# Session 35, call 6 (issue 19): a batch's producer asks the L2 for the next layer chunks while the ring is full
# (cp.async.bulk.prefetch.L2 with the weights' evict-first policy, from the chunk waiting for a slot on), so that its
# copies hit the L2 once slots free up. main (.ab_main); la8 (.ab_la8, branch variant-lookahead-8: 8 chunks, 128 KB a
# block, ~17 MB over the grid); new (branch variant-lookahead-4: 4 chunks). Batch 1 compiles without it (the v9 / v10
# look-ahead lost 1.4-3.5% there: requests in flight delay the chain's round trips). At B = 8 the ring stops ~190 µs a
# step (s33's anatomy), 3x batch 1's, and call 5 said the HBM is busy filling the ring at a core's start, so the idle
# time is after the ring is full: what this uses. At sm_90a B = 8's one-step kernel spills 64 / 28 B with it (0 on
# main); B = 2-7 none. Alternating main la8 new, twice. Predicted: B = 8 -2 to +3%, B = 4 -1 to +2%, batch 1 equal.
set -u
source docs/results/device_call.sh --site
for side in new main la8; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,4,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 la8; bench 3 new; bench 4 main; bench 5 la8; bench 6 new
true
