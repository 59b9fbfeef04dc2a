#!/usr/bin/env bash
# Session 16, call 8: side "new" = main, side "var" = branch attn-group in .ab_var (call 7's core +
# the batch kernels' global path loading two groups' K and V rows before scoring). Tests, then
# tg128 (loop, stream) at d0 / d32768, B = 1, 8, alternating, and the many-token launch at B = 1, 8
# (many_batch_timing.py) on both trees.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
in_tree var 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py tests/test_batch_gpu.py tests/test_many_tokens_gpu.py \
    -k "split_k_paths or any_grid or decode_as_alone or one_launch_equals or nan_in_one_row" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "gpu tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -8; pack
ab_bench bench 120 --pp 0 --tg 128 --depth 0,32768 --batch 1,8 --stream
for side in new var var new; do
  in_tree $side 90 python3 "$ROOT/docs/results/2026-11-26-h100-s16/many_batch_timing.py" 1,8 >> "$OUT/r/many_batch_$side.txt" 2>&1
  echo "many batch $side: exit $?"; tail -2 "$OUT/r/many_batch_$side.txt"; pack
done
