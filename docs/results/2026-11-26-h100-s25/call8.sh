#!/usr/bin/env bash
# Session 25 call 8 (issue 21): call 7 measured every way slower by ~0.4 µs a K step, clustered or not: the stage release (one arrival a warp group) was `mbarrier.arrive.release.cluster`, a cluster-scope fence each K step. Now the default release (CUTLASS's remote arrive). Predicted: the unclustered ways back to call 6's (gate_up 16.1, out 9.4, down 13.5 µs) or better; the clusters as call 7 predicted. Was: our wgmma GEMM with clusters sharing one operand by TMA multicast (call 6: L2 traffic
# ~87 MB for gate_up at 192 x 176, ~6.7 TB/s over its ~13 µs: the L2's rate). Predicted: gate_up with the 3 M tiles
# of an N tile sharing B (W read once from L2, not 3 times: 87 -> 58 MB) 16.1 -> ~13-14 µs, under cuBLAS's 14.8
# (if 43 clusters of 3 do not fit one wave, 168 loses and 192's 38 clusters win); out / down with 2-4 N tiles sharing
# A (34 -> 17 / 8.5 MB) 9.4 / 13.1 -> ~7.5 / ~11; SwiGLU sharing B 23.9 -> ~18. A hang (a barrier count wrong) is cut by
# each shape's own timeout.
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
for shape in gate_up out down; do
  timeout 60 python3 $HERE/wgmma/gemm_wgmma.py "$OUT/r/gemm_wgmma_$shape" $shape > "$OUT/r/gemm_wgmma_$shape.txt" 2>&1
  echo "$shape: exit $? ${SECONDS}s"; grep -v Warning "$OUT/r/gemm_wgmma_$shape.txt" | tail -9 | cut -c1-400; pack
done
true
