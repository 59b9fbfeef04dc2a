#!/usr/bin/env bash
# Session 30 call 3 (issue 21): gemm_t, third run. Call 2: every way again correct, and every way near a ~10 µs floor
# whatever its steps a block (out at 520 rows: 2-104c/2 10.95 µs, cuBLAS 7.33): a fixed cost, not the mainloop. Two
# guesses tested: the pipeline too shallow for the weights' HBM latency (cuBLAS's kernel here keeps 11 stages, ours 4:
# ways "-7", "-8"), and the weights' DRAM locality (each 64-deep step reads 128-byte pieces of 128 rows 4-7 KB apart:
# ways "p" read W pre-tiled as [K / 64][N][64], each TMA box one contiguous 16 KB piece). Predicted: if locality, the
# "p" ways at 520 rows ~7 / ~9.5 µs (out / down; cuBLAS 7.3 / 10.1); deeper stages alone +0-1 µs.
set -u
source docs/results/device_call.sh
HERE=docs/results/2026-11-27-h100-s30/gemm_t
timeout 300 python3 $HERE/gemm_t.py --compile > "$OUT/r/gemm_t_build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; grep -E "error|spill|registers" "$OUT/r/gemm_t_build.log" | head -20 | cut -c1-300
timeout 200 python3 $HERE/gemm_t.py "$OUT/r/gemm_t" 520,1024 > "$OUT/r/gemm_t.txt" 2>&1
echo "gemm_t: exit $? ${SECONDS}s"; grep -v Warning "$OUT/r/gemm_t.txt" | grep -v "ok$" | tail -30 | cut -c1-400
grep -c "ok$" "$OUT/r/gemm_t.txt"; grep -E "WRONG|Error" "$OUT/r/gemm_t.txt" | head -5
pack
true
