#!/usr/bin/env bash
# Session 25 call 4 (issue 21). gemm_tl3.py: TileLang GEMMs with tiles sized for one wave of 132 SMs (calls 1 and 3
# ran one block an SM with 140 or 40 blocks). Predicted: gate_up at cuBLAS's 192 x 176 within 10% of cuBLAS (15.4 µs);
# SwiGLU fused at 192 x 88-112 ~16-17 µs against mm + silu_mul's 19.6-19.8 (−3 µs a layer, −70 µs at pp520); the
# N = 1,024 shapes at 96-99 blocks ~cuBLAS's (6.9 / 10.2 µs), not better (a split's fp32 partials cost their writes).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s25
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1 &
timeout 200 python3 $HERE/gemm_tl3.py --compile > "$OUT/r/gemm_tl3_compile.txt" 2>&1 &
wait
echo "build + compile: ${SECONDS}s"; tail -n1 "$OUT/r/build.log"; grep -v INFO "$OUT/r/gemm_tl3_compile.txt" | grep -v Parallel | cut -c1-200
mkdir -p "$OUT/r/src"
timeout 150 python3 $HERE/gemm_tl3.py "$OUT/r/src/gemm_tl3" > "$OUT/r/gemm_tl3.txt" 2>&1
echo "gemm_tl3: exit $? ${SECONDS}s"; grep -v INFO "$OUT/r/gemm_tl3.txt" | grep -v Parallel | grep -v 'wgmma True' | tail -14 | cut -c1-500
mv "$OUT/r/src/gemm_tl3.json" "$OUT/r/src/gemm_tl3.md" "$OUT/r/" 2>/dev/null; pack
true
