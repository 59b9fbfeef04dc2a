#!/usr/bin/env bash
# Call 5 (issue 20, a diagnostic): fence_probe.cu (beside the results, no tier code): how long a release fence
# (fence.acq_rel.gpu) and an L2 round trip take on an SM whose other warp streams 16 KB chunks into a 12-slot ring
# (none / cp.async / TMA bulk copies), every SM streaming at once.
# Predicted (calls 3-4: the fences after the stream-bound phases cost): idle ~0.5-1k cycles for st+fence; under cp.async
# several thousand, with "fence" alone short if it is the store's acknowledgement that queues, long if the fence
# waits for the other warp's copies; TMA like cp.async for the load and st+fence.
set -u
mkdir -p "${OUT:-gpu-results}/r"; OUT=${OUT:-gpu-results}
NVCC=$(python3 -c "from megakernel.build import nvcc_path; print(nvcc_path())")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/r/device.txt"
$NVCC -O3 -arch=sm_90a -o /tmp/fence_probe docs/results/2026-11-27-h100-s32/fence_probe.cu > "$OUT/r/build.log" 2>&1
echo "build: exit $?"
timeout 60 /tmp/fence_probe > "$OUT/r/fence_probe.txt" 2>&1
echo "probe: exit $?"; cat "$OUT/r/fence_probe.txt"
