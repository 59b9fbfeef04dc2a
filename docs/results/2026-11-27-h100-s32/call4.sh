#!/usr/bin/env bash
# Call 4 (issue 20, a diagnostic, right after call 3): main (b70e2ba) against two more what-if trees (whatif_phase.py;
# logits not to be trusted), splitting call 3's "oth" (+1.0% batch 1, +2.5% B = 8):
#   core  the arrivals after the cores (24 barriers) red.relaxed
#   ig    the arrivals after the in-projections and gate/ups (48 barriers) red.relaxed
# tg128 at B = 1 and 8, alternating main / core / ig, two rounds.
# Predicted: at B = 8 the core's most of oth's +2.5% (its 64 KB of state stores a block the fence waits for: call 1's
# deferral moved them into the out-projection's fence, -1.1%), ig +0.5%; at batch 1 (the cores store 8 KB a block,
# the others a few hundred bytes) about even: core +0.4%, ig +0.6%.
set -u
source docs/results/device_call.sh --site
for side in new core ig; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
n=0
for side in new core ig new core ig; do
  n=$((n + 1))
  if [ $((585 - SECONDS)) -lt 50 ]; then echo "$n $side: skipped"; continue; fi
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
true
