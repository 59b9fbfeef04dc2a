#!/usr/bin/env bash
# Session 23, call 1 (issue 21). 1. the prefill's GEMM shapes every way torch / cuBLAS / a plain Triton tl.dot kernel
# offer (gemm_shapes.py), while the megakernel builds; 2. compare prefill of the tree (COMMIT = 2e81ddd) at
# 256 / 520 / 4096 with its breakdown; 3. the prefill GPU tests written after session 22's device time (FlashQLA installed).
# Prediction: the N = 1,024 GEMMs (out, down; 64x88 tiles, ~353 TFLOP/s in s22's breakdown) have 20-40% headroom
# through split-K (bmmS2 / a Triton split): down at M = 520 ~9.5 -> ~6.5 µs; the wide ones (dn_in, gate_up,
# ~530 TFLOP/s) little (<10%). The prefill tests pass.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site
export WORKBENCH_COMMIT=$(cat COMMIT 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
D=docs/results/2026-11-26-h100-s23
timeout 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1 &
timeout 220 python3 $D/gemm_shapes.py "$OUT/r/gemm_shapes" > "$OUT/r/gemm_shapes.txt" 2>&1
echo "gemm: exit $? ${SECONDS}s"; cat "$OUT/r/gemm_shapes.txt" | grep -v "^triton" | cut -c1-200; pack
wait; echo "build: ${SECONDS}s"; tail -n1 "$OUT/r/build.log" | cut -c1-200
timeout 100 python3 -m compare prefill --pp 256,520,4096 --reference-pp 0 --out "$OUT/r/prefill" > "$OUT/r/prefill.txt" 2>&1
echo "prefill: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill.txt" | cut -c1-260; pack
timeout $((590 - SECONDS)) python3 -m pytest -q -m gpu -x tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
true
