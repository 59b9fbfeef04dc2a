#!/usr/bin/env bash
# For the next session (not run): the attention core on the tensor cores (branch attn-tc, c2d63dd:
# compiles, no ring kernel spills, never ran). Main against the branch
# (.ab_var): the branch's split-K / schedule / grid / every-layer / teacher-forced GPU tests (its
# bits differ from main's: P in bf16, the mma's sums), then tg128 at d0, d4096, d32768 and B = 8 of
# both, alternating (session 14, bf341ca: d32768 1,012 tok/s; the bar 1,100). Prepare .ab_var:
#   rm -rf .ab_var && mkdir .ab_var && git archive attn-tc reference compare triton_kernels megakernel \
#     pyproject.toml tests | tar -x -C .ab_var
# then `git rev-parse --short HEAD > COMMIT` (main) and the variant's commit into .ab_var/COMMIT (the bench
# headers name them: WORKBENCH_COMMIT; the device copy's own git HEAD is stale), and run with carry
# [".whl", ".ab_var"].
source "$(dirname "$0")/next_call_common.sh"
build_both
# main first: the poison-proof, NaN-row and memcheck tests that session 14 did not rerun on bf341ca (K/V through the ring)
in_tree new 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py tests/test_batch_gpu.py \
    -k "poison or nan_in_one_row or memcheck-ring-8" > "$OUT/r/gpu_tests_main_poison.log" 2>&1
echo "main poison tests: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_main_poison.log" | tail -6; pack
in_tree var 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py \
    -k "split_k_paths or any_grid_and_schedule or teacher or prefill_then_decode or (every_layer and not hazard)" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "gpu tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -6; pack
ab_bench bench 100 --pp 0 --tg 128 --depth 4096,32768 --batch 1,8
