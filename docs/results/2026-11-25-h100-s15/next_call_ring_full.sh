#!/usr/bin/env bash
# For the next session (not run): where B = 8's step waits (issue 19). Branch ring-full-by-phase-s15 (3c2adb8, on main after the many-token launch)
# (the producer's waits for a free slot attributed to the phase holding the slot; timing mode only,
# but every ring kernel's SASS is rescheduled, so A/B it against main before it lands). Prepare:
#   rm -rf .ab_var && mkdir .ab_var && git archive ring-full-by-phase-s15 reference compare triton_kernels \
#     megakernel pyproject.toml tests | tar -x -C .ab_var && git rev-parse --short ring-full-by-phase-s15 > .ab_var/COMMIT
#   git rev-parse --short HEAD > COMMIT
# and run with carry [".whl", ".ab_var"].
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
for B in 8 1; do
  in_tree var 120 python3 -m megakernel anatomy --batch $B > "$OUT/r/anatomy_b${B}_by_phase.txt" 2>&1
  echo "anatomy B=$B: exit $?"; cat "$OUT/r/anatomy_b${B}_by_phase.txt"; pack
done
in_tree var 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_batch_gpu.py tests/test_megakernel.py \
    -k "anatomy or timed or clock" > "$OUT/r/gpu_tests_var.log" 2>&1
echo "gpu tests var: exit $?"; tail -1 "$OUT/r/gpu_tests_var.log"; pack
ab_bench bench 90 --pp 0 --tg 128 --depth 0 --batch 1,8
