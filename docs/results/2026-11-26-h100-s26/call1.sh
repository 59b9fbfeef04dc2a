#!/usr/bin/env bash
# Session 26 call 1 (issue 21). (a) pipeline_pieces.py: pp520 as row pieces a layer apart on their own streams, one
# graph, against the 520-row plan in the same call. Predicted: the pieces' sequential sum ~1.2-1.3x the 520 plan (GEMMs
# at 256 rows 0.6-0.7x of 520's, the delta rule 0.55x, the small kernels ~1x); concurrent 2 pieces 0.85-1.0x of the 520
# plan (the delta rule's idle SMs, ~0.5 ms of pp520, taken by the other piece's GEMMs) — worth building below ~0.9x.
# (b) session 25's prepared ncu of our wgmma GEMM against cuBLAS (next_call_gemm_ncu.sh), if time is left.
set -u
source docs/results/device_call.sh --site
HERE=docs/results/2026-11-26-h100-s26
timeout 300 python3 $HERE/pipeline_pieces.py "$OUT/r/pieces.json" 520 256,264 320,200 192,192,136 128,128,128,136 \
    > "$OUT/r/pieces.txt" 2>&1
echo "pieces: exit $? ${SECONDS}s"; grep -v Warning "$OUT/r/pieces.txt" | tail -14 | cut -c1-200; pack
if [ $SECONDS -lt 260 ]; then
  OUT=$OUT bash docs/results/2026-11-26-h100-s25/next_call_gemm_ncu.sh 2>&1 | tail -40
fi
pack
true
