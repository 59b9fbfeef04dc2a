#!/usr/bin/env bash
# Session 23, call 2 (issue 21). FlashQLA's context split forced at the prefill's lengths (qla_cp.py: its cost
# model never splits below 32k tokens, predicting a negative time for the unsplit rule at 256-1,024), and its
# chunk-local cumsum done outside ("auto-g").
# Prediction: at 520 tokens the unsplit fused kernel is a chain of 9 chunks on 16 heads (16 of 132 SMs busy);
# pieces of 2-4 chunks (48-80 CTAs) take the layer from ~34 to ~20 µs (-250 µs a pp520 prefill); at 4,096 pieces
# of 8-16 chunks ~150 -> ~90 µs; auto-g saves the cumsum kernel, ~2.5 µs a layer.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 540 python3 docs/results/2026-11-26-h100-s23/qla_cp.py "$OUT/r/qla_cp" 256,520,1024,2048,4096,16384,32768 > "$OUT/r/qla_cp.txt" 2>&1
echo "qla_cp: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/qla_cp.txt" | cut -c1-200; tail -3 "$OUT/r/qla_cp.txt" | cut -c1-300; pack
true
