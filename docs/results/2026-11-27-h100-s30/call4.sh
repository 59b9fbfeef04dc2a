#!/usr/bin/env bash
# Session 30 call 4 (issue 21): where gemm_t's ~10 µs a call go. Calls 1-3: at 520 rows every way of ours takes
# 9.4-12.4 µs (out) whatever its steps a block (40 blocks x 32 steps ≈ 80 x 16), cuBLAS 6.9-7.3; neither deeper
# pipelines nor pre-tiled weights change it. ncu (no clock control, each kernel alone, the second of two calls) of
# cuBLAS's nvjet and three of ours: 2-104/1 (40 blocks, 32 steps), 2-104/2 (80, 16; the L2 fixup), 2-104c/2 (80, 16;
# the cluster). Predicted: if the blocks are busy the whole time, SM active cycles ≈ elapsed and the stall reasons name
# the mainloop's wait (long scoreboard / barrier on "full"); if not, the time is outside the blocks (launch, tail).
set -u
source docs/results/device_call.sh
HERE=docs/results/2026-11-27-h100-s30/gemm_t
timeout 300 python3 $HERE/gemm_t.py --compile > "$OUT/r/gemm_t_build.log" 2>&1
echo "build: exit $? ${SECONDS}s"
timeout 200 ncu --clock-control none -k regex:"gemm_t_kernel|nvjet" --launch-skip 4 --launch-count 4 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis \
    --metrics sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,gpu__time_duration.sum,smsp__cycles_active.avg \
    python3 $HERE/profile_t.py 2-104/1 2-104/2 2-104c/2 > "$OUT/r/ncu_out_520.txt" 2>&1
echo "ncu: exit $? ${SECONDS}s"
grep -E "gemm_t_kernel|nvjet|Duration|Elapsed Cycles|SM Active Cycles|sm__cycles_active|Issue Slots Busy|Warp Cycles Per Issued|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|Stall" "$OUT/r/ncu_out_520.txt" | head -90 | cut -c1-170
pack
true
