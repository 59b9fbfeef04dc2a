#!/usr/bin/env bash
# Call 6 (right after call 5): fence_probe.cu with three more probes (the arrival as the kernel makes it, red.release;
# fence.release.gpu + red.relaxed; fence.acq_rel.cta alone), streamers none and cp.async only.
# Predicted (call 5: a fence alone 4.4 µs under cp.async streaming, 0.38 idle): the arrival as long as st+fence;
# fence.release the same (ptxas emits MEMBAR.ALL.CTA + MEMBAR.ALL.GPU for it too where shared memory is used); the
# CTA-scope fence alone long if MEMBAR.ALL.CTA is what waits for the copies into shared memory.
set -u
mkdir -p "${OUT:-gpu-results}/r"; OUT=${OUT:-gpu-results}
NVCC=$(python3 -c "from megakernel.build import nvcc_path; print(nvcc_path())")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/r/device.txt"
$NVCC -O3 -arch=sm_90a -o /tmp/fence_probe docs/results/2026-11-27-h100-s32/fence_probe.cu > "$OUT/r/build.log" 2>&1
echo "build: exit $?"
timeout 60 /tmp/fence_probe > "$OUT/r/fence_probe.txt" 2>&1
echo "probe: exit $?"; cat "$OUT/r/fence_probe.txt"
