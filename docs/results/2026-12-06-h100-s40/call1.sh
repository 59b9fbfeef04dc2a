#!/usr/bin/env bash
# Session 40, call 1: session 39's call 2 (prepared there, not run: no machine), run unchanged from docs/results/2026-12-06-h100-s39/call2.sh (its copy).
#   new  main (a batch's in-projections and gate/up read the norm's x (1 + w) unscaled, each dot times its row's 1 / rms
#        in the epilogue: merged this session, +3.23% at B = 8 in call 1)
#   bf   .ab_bf, branch s39-dn-butterfly (5563f60, on main): a batch DeltaNet unit's warp sums its 8 rows' 16 dots
#        (alpha S.k, alpha S.q) in one transposing butterfly (warp_sum's tree: S.k, du and the state keep their bits) and
#        takes o = alpha S.q + du (k.q), so o waits for no second sum after the update; B = 8 one-step spills 68 / 56 ->
#        8 / 32 B; batch-1 SASS identical
#   att  .ab_att, branch s39-att-warp-qk (3b480e1, on bf): an attention unit's q, k RMSNorm and partial RoPE within each
#        warp (no block barrier before the scores: 4 fewer); batch 1's attention core too (its bits change)
# Runs: tg128 b8 new, bf, att, att, bf, new; tg128 b1 new, att, att, new; the batch GPU file's megakernel tests on att
# (it holds both changes; tolerance tests against the fp32 reference, a batch against its rows alone); the Triton tier
# and main's megakernel at B = 8 in one run (issue 19's ratio); if time is left, `compare ab` at B = 8 of the tier's
# free attributes on main: 9 and 8 ring slots from 4 rows on (batch_ring_slots; s36: 10 +1.00%, 9 +1.24% against 11),
# 64 and 160 attention positions per split (s31: 16 and 8 slower at B = 8; never more than 32).
# Predicted: bf +0.5 to +1.5% over new at B = 8 (the core's rows update ~2.3 µs at B = 8, v35; 18 a step); att +0.3 to
# +0.8% over bf at B = 8 and over new at batch 1 (~1 µs of the 2.19 before the scores, 6 layers); the ratio ~1.86x.
# Setup (from main's checkout):
#   for s in bf:s39-dn-butterfly att:s39-att-warp-qk; do n=${s%%:*}; rm -rf .ab_$n && mkdir .ab_$n \
#     && git archive ${s#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs && git rev-parse --short ${s#*:} > .ab_$n/COMMIT; done
#   git rev-parse --short HEAD > COMMIT   (carry .whl .qla COMMIT .ab_bf .ab_att)
set -u
source docs/results/device_call.sh --site
build_trees new bf att
n=0
for side in new bf att att bf new; do n=$((n + 1)); tg_bench $n $side 8 330; done
for side in new att att new; do n=$((n + 1)); tg_bench $n $side 1 450; done
in_tree att 90 python3 -m pytest -q -x tests/test_batch_gpu.py -k megakernel > "$OUT/r/tests_att.txt" 2>&1
echo "tests att: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_att.txt"; pack
triton_b8 new 90
if [ $((585 - SECONDS)) -gt 60 ]; then
  in_tree new $((580 - SECONDS)) python3 -m compare ab --tiers megakernel --batch 8 --rounds 3 --reps 3 --tg 128 \
      base s9:batch_ring_slots=9 s8:batch_ring_slots=8 p64:positions_per_split=64 p160:positions_per_split=160 \
      --json "$OUT/r/ab_attrs_b8.json" > "$OUT/r/ab_attrs_b8.txt" 2>&1
  echo "ab attrs: exit $? ${SECONDS}s"; tail -12 "$OUT/r/ab_attrs_b8.txt" | cut -c1-160; pack
fi
true
