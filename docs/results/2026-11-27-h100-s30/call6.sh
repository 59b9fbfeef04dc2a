#!/usr/bin/env bash
# Session 30 call 6 (issue 20): what-if bounds. tg128 (no host sync, batch 1, 16-token prompt) of main against three
# diagnostic trees (whatif.py: the attention core, the DeltaNet core, or both doing no math), in the order main, att,
# dn, both, twice. Predicted from the anatomy (s27 call 8: attention core last arrival 5.2 µs a layer, DeltaNet core
# 3.4) and call 5 (the attention core's blocks 4.1-4.3 µs past the median): att +2-3.5% (the stream goes on during
# the core: less than its 6 x 5.2 µs), dn +1-4%; if att < 2%, no attention-core rework alone can bring the 4% that
# the 1,550 bar needs.
set -u
source docs/results/device_call.sh --site
HERE=docs/results/2026-11-27-h100-s30
for side in new att dn both; do
  in_tree $side 400 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; for side in new att dn both; do echo "$side: $(tail -n1 $OUT/r/build_$side.log | cut -c1-150)"; done
n=0
for round in 1 2; do
  for side in new att dn both; do
    n=$((n + 1))
    in_tree $side 150 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
        --batch 1 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
    echo "$n $side: exit $? ${SECONDS}s $(grep -E '\| tg128 ' $OUT/r/bench_${n}_$side.txt | head -1 | cut -c1-120)"
    pack
  done
done
true
