#!/usr/bin/env bash
# Session 16, call 6: side "new" = main, side "var" = branch device-sampling in .ab_var with the
# lm_head's pass instantiated twice (sampled / greedy: call 1 measured the per-row temperature test
# at -0.45% on the greedy stream). The branch's many-token + sampling GPU tests, then tg128 (loop,
# stream) at B = 1, 8, alternating, 2 rounds.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
in_tree var 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_many_tokens_gpu.py > "$OUT/r/gpu_tests_many_var.log" 2>&1
echo "many-token + sampling tests (branch): exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_many_var.log" | tail -6; pack
ab_bench bench 90 --pp 0 --tg 128 --depth 0 --batch 1,8 --stream
