#!/usr/bin/env bash
# Session 16, call 7: side "new" = main (device sampling merged), side "var" = branch attn-group in
# .ab_var: one q head per warp, TWO positions a group (calls 4-5 had four: spills), the new k/v
# written after the RoPE. Tests, anatomy @ d0 and d32768, then tg128 (loop, stream) at d0 / d32768,
# B = 1, 8, alternating.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
in_tree var 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py tests/test_batch_gpu.py tests/test_many_tokens_gpu.py \
    -k "split_k_paths or any_grid or teacher or (every_layer and not hazard) or poison or decode_as_alone or nan_in_one_row or one_launch_equals or sampled" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "gpu tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -8; pack
for d in 0 32768; do
  in_tree var 60 python3 -m megakernel anatomy --context $((d > 0 ? d : 64)) > "$OUT/r/anatomy_d${d}_var.txt" 2>&1
  echo "anatomy d$d var: exit $?"; grep -E "attention core |back-to-back" "$OUT/r/anatomy_d${d}_var.txt"; pack
done
ab_bench bench 120 --pp 0 --tg 128 --depth 0,32768 --batch 1,8 --stream
