#!/usr/bin/env bash
# Session 30 call 2 (issue 21): gemm_t (the out-projection's and down's GEMMs transposed: the weights' 1,024 rows as
# wgmma's M side, the tokens its N side at 104 a block, split-K added in the kernel) against cuBLAS, first run.
# Predicted at 520 rows (cuBLAS out 7.3 µs, down 10.3): the 2-104 tiles split in 3 (120 blocks) out ~5.5, down ~7.5;
# split 1 (40 blocks) slower than cuBLAS; correct on the first run not certain (a new epilogue: the fixup's counters).
set -u
source docs/results/device_call.sh
HERE=docs/results/2026-11-27-h100-s30/gemm_t
timeout 300 python3 $HERE/gemm_t.py --compile > "$OUT/r/gemm_t_build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; grep -E "error|spill|registers" "$OUT/r/gemm_t_build.log" | head -20 | cut -c1-300
timeout 200 python3 $HERE/gemm_t.py "$OUT/r/gemm_t" 256,520,1024 > "$OUT/r/gemm_t.txt" 2>&1
echo "gemm_t: exit $? ${SECONDS}s"; grep -v Warning "$OUT/r/gemm_t.txt" | grep -v "ok$" | tail -30 | cut -c1-400
grep -c "ok$" "$OUT/r/gemm_t.txt"; grep -E "WRONG|Error" "$OUT/r/gemm_t.txt" | head -5
pack
true
