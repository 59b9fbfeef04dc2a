#!/usr/bin/env bash
# For a next session (written at the end of session 30, NOT RUN), part 2 of 2, right after next_call_poller_warps.sh
# (the same .ab_poll tree and carry; a warm machine keeps its build): the GPU tests and sanitizers of branch
# variant-poller-warps. Each step's limit is guarded (never `timeout 0`); faulthandler names a test that hangs.
# Predicted: everything passes, as the measured version's 22 tests and two sanitizers did in session 30 (calls 7-8).
set -u
source docs/results/device_call.sh --site
in_tree poll 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_poll.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
step() {  # step NAME BUDGET_END pytest-args...: runs while at least 60 s are left before BUDGET_END
  local name=$1 end=$2 left
  shift 2
  left=$((end - SECONDS))
  if [ $left -lt 60 ]; then echo "$name: skipped (${left}s left)"; return; fi
  in_tree poll $left python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=120 "$@" > "$OUT/r/$name.txt" 2>&1
  echo "$name: exit $? ${SECONDS}s"; tail -2 "$OUT/r/$name.txt" | cut -c1-200; pack
}
step tests_many_tokens 260 tests/test_many_tokens_gpu.py
step tests_batch 360 tests/test_batch_gpu.py -k "not triton"
step tests_megakernel 460 tests/test_megakernel.py \
    -k "(grid or schedule or stream_only or refused or refusal or timed or anatomy or teacher or stopped) and not sanitizer"
step sanitizers 585 "tests/test_megakernel.py::test_compute_sanitizer_clean[synccheck-ring-1]" \
    "tests/test_megakernel.py::test_compute_sanitizer_clean[memcheck-ring-8]"
true
