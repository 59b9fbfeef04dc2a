#!/usr/bin/env bash
# Session 28 call 6 (issue 21): FlashQLA's fused forward kernel with block_DV forced to 16 / 32 / 64 / 128 at 256, 520
# and 1,024 rows (qla_block_dv.py). Predicted: 16 (128 blocks) 10-20% faster than 32 at 256-520 rows if the per-chunk
# chain is the V-dependent half, equal if it is the K / A products every block repeats; 64 and 128 slower.
set -u
source docs/results/device_call.sh --site
timeout 400 python3 docs/results/2026-11-27-h100-s28/qla_block_dv.py > "$OUT/r/block_dv.txt" 2>&1
echo "block_dv: exit $? ${SECONDS}s"; grep -v TileLang "$OUT/r/block_dv.txt" | tail -20
pack
true
