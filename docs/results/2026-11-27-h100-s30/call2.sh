#!/usr/bin/env bash
# Session 30 call 2 (issue 21): gemm_t again. Call 1: every way correct, but split-K slower than no split (out at
# 520 rows, split 3: 16.1 µs, cuBLAS 7.35): the last block's loads of the other splits' tiles were issued one at a time
# (each behind a branch). Now batched a split at a time, one release / acquire atomic; and a second way, the S blocks
# of a tile as a cluster adding through distributed shared memory (each 1 / S of the tokens). Predicted at 520 rows:
# the cluster 2-104c/3 out ~6 µs, down ~9 (cuBLAS 7.35 / 10.07; the mainloop ran ~0.4 µs a 64-deep step in call 1,
# 11 / 19 steps, + ~2 µs ramp and reduction); the L2 way ~1 µs behind it.
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
