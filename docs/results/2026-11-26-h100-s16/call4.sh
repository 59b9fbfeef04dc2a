#!/usr/bin/env bash
# Session 16, call 4: side "new" = main, side "var" = branch attn-group in .ab_var (the attention
# core: one q head per warp, four positions a group through a transposing butterfly, q in
# registers, a one-stage warp merge). Its GPU tests (one-step, batch rows, many tokens), its anatomy
# at d32768, then tg128 (loop and stream) at d0 / d32768, B = 1, 8, alternating.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
in_tree var 240 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py tests/test_batch_gpu.py tests/test_many_tokens_gpu.py \
    -k "split_k_paths or any_grid_and_schedule or teacher or every_layer or poison or every_phase or decode_as_alone or any_grid or nan_in_one_row or one_launch_equals" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "gpu tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -8; pack
in_tree var 60 python3 -m megakernel anatomy --context 32768 > "$OUT/r/anatomy_d32768_var.txt" 2>&1
echo "anatomy var: exit $?"; grep -E "attention core|ring full" "$OUT/r/anatomy_d32768_var.txt"; pack
ab_bench bench 120 --pp 0 --tg 128 --depth 0,32768 --batch 1,8 --stream
