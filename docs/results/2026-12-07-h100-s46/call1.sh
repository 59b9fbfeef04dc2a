#!/usr/bin/env bash
# Session 46, call 1 (issue 21): cuBLASLt's algorithms for the prefill's GEMM shapes at 520 rows, timed against
# torch's own call (gemm_lt_search.py). The N = 1,024 out-projections and downs (cuBLAS's 64 x 88 tiles: 108 tiles
# for 132 SMs, ~347 TFLOP/s, 398 µs of pp520's 2,378 µs of kernels in s45's table) first.
# Predicted: if any algorithm the heuristic or the enumeration offers fills the SMs better, out / down 7.2 / 10.2
# -> ~5.5 / ~8 µs (s23's split-K batched GEMMs found nothing past 5% at 520 rows; the library's own split-K and
# tile lists were never searched); the wide shapes within ~5% of torch's.
# Run as bash docs/results/2026-12-07-h100-s46/call1.sh
set -u
source docs/results/device_call.sh
D=docs/results/2026-12-07-h100-s46
timeout 200 python3 $D/gemm_lt_search.py --rows 520 --shapes out,down --budget 45 --json $OUT/r/lt520_nk1024.json 2>&1 | tee $OUT/r/lt520_nk1024.txt
echo "search 1: ${SECONDS}s"; pack
timeout 200 python3 $D/gemm_lt_search.py --rows 520 --shapes gate_up,dn_in,attn_in --budget 30 --json $OUT/r/lt520_wide.json 2>&1 | tee $OUT/r/lt520_wide.txt
echo "search 2: ${SECONDS}s"; pack
true
