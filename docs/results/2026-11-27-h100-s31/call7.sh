#!/usr/bin/env bash
# Call 7 (right after call 6, the builds kept): branch variant-poller-warps at 2a3ba03 against main (new), alternating
# tg128 at B = 1 and 8; bits (one step, 128 greedy tokens, a batch of 8); then the batch file's megakernel tests, the
# rest of test_megakernel's schedule tests and synccheck, as far as the call's time goes.
# Predicted: as call 1 (the hot path is the same but one compare): tg128 −0.5 to +0.5%, b8 +0.5-1.2%; bits identical.
set -u
source docs/results/device_call.sh --site
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
step() {  # step NAME BUDGET_END pytest-args...: runs while at least 60 s are left before BUDGET_END
  local name=$1 end=$2 left
  shift 2
  left=$((end - SECONDS))
  if [ $left -lt 60 ]; then echo "$name: skipped (${left}s left)"; return; fi
  in_tree poll $left python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 "$@" > "$OUT/r/$name.txt" 2>&1
  echo "$name: exit $? ${SECONDS}s"; tail -1 "$OUT/r/$name.txt" | cut -c1-200; pack
}
step sanitizer 420 "tests/test_megakernel.py::test_compute_sanitizer_clean[synccheck-ring-1]"
step tests_batch 585 tests/test_batch_gpu.py -k "not triton"
true
