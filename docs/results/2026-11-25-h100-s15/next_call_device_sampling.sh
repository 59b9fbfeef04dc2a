#!/usr/bin/env bash
# For the next session (not run). Side "new" = main (the many-token launch with session 15's review
# mends, ecc83d5 + the NaN-row test: neither ran on a GPU), side "var" = branch device-sampling in
# .ab_var (decode_sample: reference/sampling.py's draw inside the many-token kernel's argmax).
# 1. main's many-token GPU tests (the NaN-row test and the on_step ids are new); 2. the branch's
# (incl. the sampled launch against the spec step by step and the chi-square of 2,000 draws);
# 3. bench alternating: tg128 and tg128 stream (the greedy many-token kernel now holds the sampling
# branch: must not be slower); 4. `compare generate --temperature 1` on the branch (sampled, one launch).
# Prepare:
#   rm -rf .ab_var && mkdir .ab_var && git archive device-sampling reference compare triton_kernels megakernel \
#     pyproject.toml tests | tar -x -C .ab_var && git rev-parse --short device-sampling > .ab_var/COMMIT
#   git rev-parse --short HEAD > COMMIT
# and run with carry [".whl", ".ab_var"] on nvidia-h100-x1.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
in_tree new 120 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_many_tokens_gpu.py > "$OUT/r/gpu_tests_many_new.log" 2>&1
echo "many-token tests (main): exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_many_new.log" | tail -6; pack
in_tree var 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_many_tokens_gpu.py > "$OUT/r/gpu_tests_many_var.log" 2>&1
echo "many-token + sampling tests (branch): exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_many_var.log" | tail -6; pack
ab_bench bench 60 --pp 0 --tg 128 --depth 0 --batch 1 --stream
for T in 0 1; do
  in_tree var 60 python3 -m compare generate --tier megakernel --temperature $T --max-new-tokens 512 --seed 3 \
      > "$OUT/r/generate_T${T}.out" 2> "$OUT/r/generate_T${T}.err"
  echo "generate T=$T: exit $?"; tail -3 "$OUT/r/generate_T${T}.err"; pack
done
