#!/usr/bin/env bash
# Session 15, call 3: many tokens per launch (issue 20, part 1). Side "new" = main (eeccc27: one
# launch a step), side "var" = branch many-tokens in .ab_var (decode_greedy: all steps in ONE
# persistent launch; each step's ids to pinned host memory as it ends; the one-step kernels keep
# their own instantiation). 1. the one-step path's bits of both (tests/gpu/ab_commits.py: must be
# identical); 2. the branch's many-token GPU tests, the one-step regression tests and memcheck (the
# sanitizer run adds two many-token launches); 3. compare bench alternating, 2 rounds: tg128 at B = 1
# and 8, and tg128 stream (main: stream_greedy, a launch a step; branch: the one launch).
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
(in_tree var 150 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot /tmp/snap_var.pt > "$OUT/r/snap_var.log" 2>&1) &
in_tree new 150 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_new.pt > "$OUT/r/snap_new.log" 2>&1
wait
PYTHONPATH=$ROOT:/tmp/site python3 tests/gpu/ab_commits.py compare /tmp/snap_new.pt /tmp/snap_var.pt > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $?"; tail -5 "$OUT/r/bits.txt"; pack
in_tree var 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_many_tokens_gpu.py > "$OUT/r/gpu_tests_many.log" 2>&1
echo "many-token tests: exit $?"; grep -E "passed|failed|FAILED|Error|stop ids" "$OUT/r/gpu_tests_many.log" | tail -12; pack
in_tree var 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py \
    -k "split_k_paths or any_grid_and_schedule or teacher or (every_layer and not hazard) or poison or memcheck-ring or synccheck-ring" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "one-step + memcheck tests: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -8; pack
ab_bench bench 70 --pp 0 --tg 128 --depth 0 --batch 1,8 --stream
# main's prefill: the graph-replay test (a shape's graph captured at its second prefill), which call 2's
# prefill test runs did not reach before their limits
in_tree new 120 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py -k "graph_replay" > "$OUT/r/prefill_graph_tests_new.log" 2>&1
echo "prefill graph-replay tests (main): exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/prefill_graph_tests_new.log" | tail -4; pack
