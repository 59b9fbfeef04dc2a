#!/usr/bin/env bash
# Call 3 (issue 20, a diagnostic): main (b70e2ba) against two what-if trees (whatif_phase.py; logits not to be trusted):
#   res  the arrivals after the out-projections and downs (the phases that write the residual, 48 of 120 barriers)
#        red.relaxed, the rest red.release
#   oth  the arrivals after the in-projections, cores and gate/ups (72 barriers) red.relaxed, the rest red.release
# tg128 at B = 1 and 8, alternating main / res / oth, two rounds.
# Predicted (s31 call 10: all relaxed +2.5% at batch 1, +4.5% at B = 8): if the fence costs the same a barrier, res
# ~2/5 of it (+1.0%, +1.8%) and oth ~3/5 (+1.5%, +2.7%); at B = 8 oth more (the cores write the state: 64 KB a block).
set -u
source docs/results/device_call.sh --site
for side in new res oth; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
n=0
for side in new res oth new res oth; do
  n=$((n + 1))
  if [ $((585 - SECONDS)) -lt 50 ]; then echo "$n $side: skipped"; continue; fi
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
true
