#!/usr/bin/env bash
# Session 30 call 7 (issue 20): the grid barrier polled by poller warps (branch variant-poller-warps). Today one thread
# a block polls the barrier counter with ld.acquire, one poll in flight (an acquire orders the next load after it), so
# after the last arrival lands a block waits on average half a poll's round trip before its next poll even leaves.
# Now 3 poller warps (16 compute + producer + 3 = 20 warps: 5 a sub-partition, the same 96-register cap) each poll
# with ld.acquire from starts 250 ns apart; the first to see the barrier open arrives on a shared-memory mbarrier that
# every compute thread waits on (release / acquire at CTA scope hand the grid acquire on, as bar.sync did); and the
# warp that polled before now also prefetches the next phase before the wait. Same arithmetic: bits must be identical.
# Predicted: the barrier's exit ~0.2 µs shorter (~120 a token): tg128 +2.5-4% (1,485-1,490 → ~1,530-1,550); tg128 b8
# +1.5-3%; a risk: 3x the polls on one L2 line slow the arrivals' red.
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; for side in new main; do echo "$side: $(tail -n1 $OUT/r/build_$side.log | cut -c1-150)"; done; pack
n=0
for side in main new main new; do
  n=$((n + 1))
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
for side in new main; do
  in_tree $side 90 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
  echo "snapshot $side: exit $? ${SECONDS}s"
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_new.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -4 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
left=$((560 - SECONDS))
[ $left -gt 60 ] && in_tree new $left python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_many_tokens_gpu.py \
    "tests/test_megakernel.py::test_any_grid_and_schedule_gives_the_same_bits" \
    "tests/test_megakernel.py::test_stream_only_launch_leaves_the_next_decode_exact" \
    "tests/test_megakernel.py::test_an_id_out_of_range_is_refused_on_the_device" \
    "tests/test_megakernel.py::test_a_pending_refusal_stops_the_next_checked_call" \
    "tests/test_megakernel.py::test_timed_steps_back_to_back" > "$OUT/r/tests_new.txt" 2>&1
echo "tests (new): exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_new.txt" | cut -c1-200; pack
true
