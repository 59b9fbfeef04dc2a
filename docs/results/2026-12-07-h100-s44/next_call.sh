#!/usr/bin/env bash
# Prepared in session 44, NOT RUN (issue 21; the session's device time was spent): what bounds each of our prefill
# kernels at 520 rows and FlashQLA's two, by ncu (--clock-control none: METHOD.md), one launch each (layer 0's; the
# lm_head's one), from a plan's first (eager) call: SpeedOfLight (SM / L2 / DRAM throughput), Occupancy, LaunchStats
# and WarpStateStats (the stall reasons). What it is for: dn_prep is 8.7 µs a layer (s44 call 1's breakdown) against
# ~3-4 estimated for its bytes and one round trip, and neither 8-token blocks (v21) nor wider gate blocks (v22) moved
# it; silu_mul 4.1 µs a layer on ~11 MB (its input and output; L2-resident: inferred, not measured); dn_out_norm 3.3;
# FlashQLA's fused kernel 24 µs a layer (s43 call 2) on ~1.8 GFLOP (computed from its chunk products). Expected: per kernel the
# share of its time stalled on memory (long scoreboard), on the launch ramp (waves, occupancy) or issuing: which of the
# v21 / v22 leads (fewer blocks, more bytes in flight a thread, fusing) each kernel calls for.
# Session 45 ran it (call 1, docs/results/2026-12-07-h100-s45/) with --cache-control none added: each kernel's inputs
# stay in the L2 as the kernel before left them, as in the graph (ncu flushes the caches by default).
# Run as END=570 bash docs/results/2026-12-07-h100-s44/next_call.sh (carry .whl .qla COMMIT)
set -u
source docs/results/device_call.sh --site
build_trees new
in_tree new 150 python3 docs/results/2026-12-07-h100-s44/prefill_once.py 520 1 > "$OUT/r/warmup.txt" 2>&1
echo "warm-up (FlashQLA's compile): exit $? ${SECONDS}s"; tail -1 "$OUT/r/warmup.txt"; pack
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in dn_prep_kernel silu_mul_kernel dn_out_norm_kernel lm_head_kernel fused_chunk_gdr_fwd kkt_solve; do
  [ $((END - SECONDS)) -lt 70 ] && { echo "ncu $k: skipped"; continue; }
  in_tree new 90 "$NCU" --clock-control none --cache-control none -k regex:"$k" --launch-count 1 --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      python3 docs/results/2026-12-07-h100-s44/prefill_once.py 520 1 > "$OUT/r/ncu_$k.txt" 2>&1
  echo "ncu $k: exit $? ${SECONDS}s"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|Waves Per SM|Registers Per|Stall Long|Warp Cycles Per Issued" "$OUT/r/ncu_$k.txt" | cut -c1-120
  pack
done
true
