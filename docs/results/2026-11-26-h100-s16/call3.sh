#!/usr/bin/env bash
# Session 16, call 3: side "new" = main, side "var" = branch attn-group in .ab_var (the attention
# core scores two positions at a time per warp: a transposing butterfly, one exp per lane, q read
# once per group). Its correctness tests, its anatomy at d32768, then tg128 at d0 / d32768, B = 1, 8.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
in_tree var 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py \
    -k "split_k_paths or any_grid_and_schedule or teacher or every_layer or poison or every_phase" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "gpu tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -8; pack
in_tree var 60 python3 -m megakernel anatomy --context 32768 > "$OUT/r/anatomy_d32768_var.txt" 2>&1
echo "anatomy var: exit $?"; grep -E "attention core|ring full" "$OUT/r/anatomy_d32768_var.txt"; pack
ab_bench bench 100 --pp 0 --tg 128 --depth 0,32768 --batch 1,8
