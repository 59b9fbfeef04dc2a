#!/usr/bin/env bash
# For a next session (issues 20 and 19; written at the end of session 30, NOT RUN), part 1 of 2 (part 2:
# next_call_poller_warps_tests.sh, right after it): branch variant-poller-warps, the
# grid barrier polled by 3 poller warps, as measured in call 7 (a917832: tg128 +0.2%, tg128 b8 +1.2%, bits identical,
# 22 GPU tests, synccheck / memcheck clean) and mended after a review found two bugs (NOTES v28): the barrier's number
# and target as one 64-bit word, the election by atomicMax on the number, the end flag read inside the ARRIVED wait, no
# pollers in stream-only (a613f4e), the ARRIVED wait's parity from the barrier number handled (7da30ce, after a second
# review), plus a GPU test of launches stopped after every phase in every schedule.
# (The branch's code is also docs/results/2026-11-27-h100-s30/variant_poller_warps.patch, against 483e859's sources.)
# Before the call: rm -rf .ab_poll && mkdir .ab_poll && git archive variant-poller-warps | tar -x -C .ab_poll &&
#   rm -rf .ab_poll/docs && git rev-parse --short variant-poller-warps > .ab_poll/COMMIT; add /.ab_poll/ to
#   .git/info/exclude; carry [".whl", ".qla", ".ab_poll", "COMMIT"].
# Predicted: as call 7 (the hot path is the same but for a 64-bit word and atomicMax): tg128 +0-0.5%, tg128 b8 +1-1.5%;
# bits identical; the stopped-launch test ends (before the mend: stream-only stopped at a DeltaNet core could hang).
set -u
source docs/results/device_call.sh --site
for side in new poll; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree poll 150 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 \
    "tests/test_megakernel.py::test_launches_stopped_after_any_phase_end_in_every_schedule" > "$OUT/r/stopped.txt" 2>&1
echo "stopped launches (poll): exit $? ${SECONDS}s"; tail -2 "$OUT/r/stopped.txt"; pack
n=0
for side in new poll new poll; do
  n=$((n + 1))
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
for side in poll new; do
  in_tree $side 90 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_new.pt" "$OUT/r/snap_poll.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -4 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
true
