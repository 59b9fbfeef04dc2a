#!/usr/bin/env bash
# Session 15, call 4 (an H100: call 3 ran on an H200): many tokens per launch against main. Side
# "new" = main (one launch a step), side "var" = branch many-tokens in .ab_var. The branch's
# many-token GPU tests (the poison test now compares the cache rows the steps wrote), then compare
# bench alternating, 2 rounds: tg128 and tg128 stream at B = 1.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
in_tree var 90 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_many_tokens_gpu.py > "$OUT/r/gpu_tests_many.log" 2>&1
echo "many-token tests: exit $?"; grep -E "passed|failed|FAILED|Error" "$OUT/r/gpu_tests_many.log" | tail -8; pack
ab_bench bench 60 --pp 0 --tg 128 --depth 0 --batch 1 --stream
