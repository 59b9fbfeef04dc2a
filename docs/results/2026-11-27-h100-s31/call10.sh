#!/usr/bin/env bash
# Call 10 (issue 20, a diagnostic): main against the what-if tree `whatif_exit.py` (the grid barrier's arrival
# red.relaxed instead of red.release: no fence waiting for the block's own writes before it counts; the logits not to
# be trusted), tg128 at B = 1 and 8, alternating main / rlx / main / rlx.
# Predicted: if the release's fence is ~0.3-0.5 µs of each ~1.1 µs exit and half of it shows in the step, tg128 +2-5%;
# if the exits are queueing behind the ring's copies (v5: 0.8 µs quiet, 4.3 with 32 chunks in flight), +0-1%.
set -u
source docs/results/device_call.sh --site
for side in new rlx; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
n=0
for side in new rlx new rlx; do
  n=$((n + 1))
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
true
