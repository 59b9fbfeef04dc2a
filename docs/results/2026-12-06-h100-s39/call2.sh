#!/usr/bin/env bash
# Session 39, call 2, prepared, NOT RUN (no machine could be started from ~17:25 on): the next session's first call.
#   new  main after the merge of s38-norm-on-main (a batch's in-projections and gate/up read the norm's x (1 + w)
#        unscaled, each dot times its row's 1 / rms in the epilogue)
#   bf   .ab_bf, branch s39-dn-butterfly (5563f60, on main; d4961aa + comments): a batch DeltaNet unit's warp sums its 8 rows' 16 dots
#        (alpha S.k, alpha S.q) in one transposing butterfly (16 shuffles, not 80) and takes o = alpha S.q + du (k.q), so
#        o waits for no second sum after the state's update; B = 8 one-step kernel spills 68 / 56 -> 8 / 32 B; batch-1
#        SASS identical
# Runs: tg128 b8 new, bf, bf, new; the batch GPU file on bf (its bits differ: tolerance tests against the fp32
# reference, a batch against its rows alone); the Triton tier and main's megakernel at B = 8 in one run (issue 19's
# ratio); `compare ab` at B = 8 of the tier's free attributes on main: 9 and 8 ring slots from 4 rows on
# (batch_ring_slots; s36: 10 +1.00%, 9 +1.24% against 11), 64 and 160 attention positions per split (s31: 16 and 8
# slower at B = 8; at tg128 after a 16-token prompt a row's positions run 16..144: 32 gives 1-5 units a kv head, 64 1-3,
# 160 one).
# Predicted: bf +0.5 to +1.5% over new (the core's rows update ~2.3 µs at B = 8, v35; 18 a step); the ratio ~1.86x;
# slots 9 / 8 within ±0.5% of 10; positions per split 64 −0.5 to +1%, 160 −2 to +1%.
# Setup: .ab_bf = git archive s39-dn-butterfly (docs removed, COMMIT); git rev-parse --short HEAD > COMMIT
#   (carry .whl .qla COMMIT .ab_bf)
set -u
source docs/results/device_call.sh --site
build_trees new bf
n=0
for side in new bf bf new; do n=$((n + 1)); tg_bench $n $side 8 300; done
in_tree bf 100 python3 -m pytest -q -x tests/test_batch_gpu.py -k megakernel > "$OUT/r/tests_bf.txt" 2>&1
echo "tests bf: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_bf.txt"; pack
if [ $((420 - SECONDS)) -gt 90 ]; then triton_b8 new 100; fi
if [ $((420 - SECONDS)) -gt 60 ]; then
  in_tree new $((420 - SECONDS)) python3 -m compare ab --tiers megakernel --batch 8 --rounds 3 --reps 3 --tg 128 \
      base s9:batch_ring_slots=9 s8:batch_ring_slots=8 p64:positions_per_split=64 p160:positions_per_split=160 \
      --json "$OUT/r/ab_attrs_b8.json" > "$OUT/r/ab_attrs_b8.txt" 2>&1
  echo "ab attrs: exit $? ${SECONDS}s"; tail -12 "$OUT/r/ab_attrs_b8.txt" | cut -c1-160; pack
fi
true
