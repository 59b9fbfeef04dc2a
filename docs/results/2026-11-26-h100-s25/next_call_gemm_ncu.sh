#!/usr/bin/env bash
# For a next session (issue 21; written at the end of session 25, NOT RUN): where our wgmma GEMM (wgmma/) loses to
# cuBLAS at 520 rows. ncu (Firecracker machines read the counters; --clock-control none, METHOD.md) on gate_up's
# 3-176-4-0 (16.1-16.7 µs against cuBLAS's 14.8-15.5), out's 3-64-4-1/2 (10.1 against 7.7) and the SwiGLU way 3-96-4-2
# (call 5's plain stores 19.6, call 6's staged 23.9-24.4: why?), each against the nvjet kernel torch.mm runs on the same
# operands: tensor-pipe activity, warp stall reasons, L2 / DRAM throughput; and the SASS of the built kernels
# (cuobjdump) to read the SwiGLU epilogue. Expected: the answer to "mainloop or epilogue", one number each.
set -u
source docs/results/device_call.sh
HERE=docs/results/2026-11-26-h100-s25
timeout 200 python3 -c "import sys; sys.path.insert(0, '$HERE/wgmma'); import gemm_wgmma; gemm_wgmma.build()" > "$OUT/r/wgmma_build.log" 2>&1
echo "build: ${SECONDS}s"; tail -2 "$OUT/r/wgmma_build.log"
so=$(find ~/.cache/torch_extensions -name 'gemm_wgmma*.so' | head -1)
cuobjdump --dump-sass "$so" > "$OUT/r/gemm_wgmma.sass" 2>&1; echo "sass: $(wc -l < "$OUT/r/gemm_wgmma.sass") lines"
for case in "gate_up 3-176-4-0/1" "out 3-64-4-1/2" "gate_up 3-96-4-2/1"; do
  set -- $case; tag="$1_${2%%/*}"
  timeout 150 ncu --clock-control none -k regex:"gemm_kernel|nvjet" --launch-skip 2 --launch-count 2 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats python3 $HERE/wgmma/profile_one.py $1 $2 > "$OUT/r/ncu_$tag.txt" 2>&1
  echo "ncu $tag: exit $? ${SECONDS}s"; grep -E "gemm_kernel|nvjet|Duration|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Issue Slots Busy|Stall" "$OUT/r/ncu_$tag.txt" | head -24 | cut -c1-160; pack
done
true
