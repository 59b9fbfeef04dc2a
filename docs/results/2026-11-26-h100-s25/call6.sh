#!/usr/bin/env bash
# Session 25 call 6 (issue 21): call 5 measured our GEMM correct (every way), 1.3-1.5x slower than cuBLAS; its epilogue stored 4-8 bytes a thread, rows apart. Now the tile goes through shared memory and out in 16-byte row pieces. Predicted: −2 to −4 µs where the output is big (gate_up 7.4 MB: 21.8 -> ~18; out / down fp32 partials 4-8.5 MB -> −1 to −2 µs), SwiGLU (3.7 MB) 19.6 -> ~18, at or under mm + silu_mul (18.6). Was: correct on the first
# run is not certain (hand-built descriptors, swizzle, barriers: a hang is cut by the timeout); if correct, gate_up
# at 192 x 176 (123 blocks) ~14-16 µs against cuBLAS's 15.2; SwiGLU fused at 192 x 96-112 ~16-18 against mm +
# silu_mul's 19.4; out / down split into fp32 partials at 96 blocks ~5.5 / ~8.5 µs against 7.0 / 10.4.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s25
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1 &
timeout 240 python3 $HERE/wgmma/gemm_wgmma.py --compile > "$OUT/r/wgmma_build.log" 2>&1 &
wait
echo "builds: ${SECONDS}s"; tail -n1 "$OUT/r/build.log"; tail -n5 "$OUT/r/wgmma_build.log" | cut -c1-300
timeout 150 python3 $HERE/wgmma/gemm_wgmma.py "$OUT/r/gemm_wgmma" > "$OUT/r/gemm_wgmma.txt" 2>&1
echo "gemm_wgmma: exit $? ${SECONDS}s"; grep -v Warning "$OUT/r/gemm_wgmma.txt" | tail -25 | cut -c1-400; pack
true
