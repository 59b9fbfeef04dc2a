#!/usr/bin/env bash
# Session 22, call 1 (issue 21: the serving engines' GDN prefill kernels as A/B rows). The tree (COMMIT) adds
# megakernel/prefill_delta_rule.py (fla's chunk_gated_delta_rule, or FlashQLA 0.1.3's with its intra-card context
# parallelism, chosen by tier.prefill_delta_rule) and `python -m compare delta-rule`. FlashQLA and its needs
# (tilelang 0.1.15, apache-tvm-ffi 0.1.12, torch-c-dlpack-ext 0.1.5, z3-solver 4.15.4) travel unpacked in one
# tar.xz (.qla/qsite.tar.xz, 45 MB: the wheels are 82.5 MB).
# 1. import flash_qla; 2. compare delta-rule at 256 / 520 / 4096 / 32768 (fresh and carried states, model-like and
# slow decays): µs a layer, error against fp32; 3. the prefill with each rule: logits / states against the reference
# path, 128 greedy tokens; 4. compare ab: pp520 with fla vs flash-qla, interleaved, 3 rounds.
# Prediction (FlashQLA's README: 2-3x fla's forward on Hopper, most at few heads): at pp520 ~15-25 µs a layer
# against fla's ~44-48 (session 18: 47.2 µs under the profiler, 48.4-49.7 in a graph); errors equal to fla's within
# 2x; pp520 end to end -0.35 to -0.5 ms of ~3.1 ms: ~180-190k tok/s against ~160k.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
echo "installed: ${SECONDS}s"
export PYTHONPATH=$ROOT:/tmp/site PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
export WORKBENCH_COMMIT=$(cat COMMIT 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1 &
BUILD=$!
timeout 90 python3 -c "import flash_qla, tilelang, torch; print('flash_qla', flash_qla.__version__, 'tilelang', tilelang.__version__, 'torch', torch.__version__)" 2>&1 | tail -5
timeout 330 python3 -m compare delta-rule --pp 256,520,4096,32768 --out "$OUT/r/dr" > "$OUT/r/dr.txt" 2>&1
echo "delta-rule: exit $? ${SECONDS}s"; tail -40 "$OUT/r/dr.txt" | cut -c1-220; pack
wait $BUILD; echo "build: exit $? ${SECONDS}s"; tail -n1 "$OUT/r/build.log" | cut -c1-200
timeout 150 python3 docs/results/2026-11-26-h100-s22/prefill_rules_check.py "$OUT/r/check.json" 520 256 > "$OUT/r/check.txt" 2>&1
echo "check: exit $? ${SECONDS}s"; tail -6 "$OUT/r/check.txt" | cut -c1-400; pack
timeout 150 python3 -m compare ab base qla:prefill_delta_rule=flash-qla --pp 520 --tg 16 --rounds 3 --json "$OUT/r/ab.json" > "$OUT/r/ab.txt" 2>&1
echo "ab: exit $? ${SECONDS}s"; tail -12 "$OUT/r/ab.txt" | cut -c1-220; pack
