#!/usr/bin/env bash
# Call 1: two variants of the grid barrier's cost against main (b70e2ba), built side by side, alternating:
#   new  branch variant-core-state-after-arrival (2e49301): a DeltaNet core's last unit arrives at the core's barrier
#        before it stores its new state rows, so the arrival's release no longer waits for them (64 KB a block at B = 8)
#   rlx  branch variant-relaxed-poll (d7831a4, on top of new): the barrier polled with relaxed loads and one
#        fence.acquire once open (an ld.acquire is also an L1 invalidation, CCTL.IVALL, on every poll)
# Predicted: new: tg128 b8 +1.5-3% (the DeltaNet core's last arrival -1 to -1.5 µs at B = 8, 18 layers), tg128 0 to
# +0.5% (8 KB a block); rlx over new: 0 to +0.5% at both; bits identical for all three.
set -u
source docs/results/device_call.sh --site
for side in new main rlx; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
n=0
for side in main new rlx main new rlx; do
  n=$((n + 1))
  if [ $((560 - SECONDS)) -lt 70 ]; then echo "$n $side: skipped"; continue; fi
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
for side in main new rlx; do
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "snap $side: skipped"; continue; fi
  in_tree $side 60 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
for side in new rlx; do
  [ -f "$OUT/r/snap_$side.pt" ] && python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_$side.pt" > "$OUT/r/bits_$side.txt" 2>&1
  echo "bits $side: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits_$side.txt" 2>/dev/null
done
rm -f "$OUT"/r/snap_*.pt; pack
true
