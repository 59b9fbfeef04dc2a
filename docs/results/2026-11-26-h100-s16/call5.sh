#!/usr/bin/env bash
# Session 16, call 5: side "new" = main, side "var" = branch attn-group in .ab_var (call 4's core,
# with the global path's past K/V rows through L1). The anatomy at d0 of both sides (where call 4's
# one-step B = 1 lost 1.3%), the batch / poison / many-token tests, then tg128 (loop, stream) at
# d0 / d32768, B = 1, 8, alternating.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
for side in new var; do
  in_tree $side 60 python3 -m megakernel anatomy > "$OUT/r/anatomy_d0_$side.txt" 2>&1
  echo "anatomy d0 $side: exit $?"; grep -E "attention core |DeltaNet core |ring full|back-to-back" "$OUT/r/anatomy_d0_$side.txt"; pack
done
in_tree var 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_batch_gpu.py tests/test_many_tokens_gpu.py tests/test_megakernel.py \
    -k "decode_as_alone or any_grid or poison or nan_in_one_row or one_launch_equals or split_k_paths or repeatable" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "gpu tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -8; pack
ab_bench bench 120 --pp 0 --tg 128 --depth 0,32768 --batch 1,8 --stream
