#!/usr/bin/env bash
# Session 22, call 2 (issue 21). Call 1 found that fla 0.6.0's public chunk_gated_delta_rule hands every bf16 call to
# FlashQLA once flash_qla is importable (fla.backends, FLA_FLASH_QLA): its "fla" rows were FlashQLA's (same bits,
# same µs), and its pp520 (174-176k, both variants) was the prefill on FlashQLA. The tree (COMMIT) now calls fla's
# own Triton path for "fla" (fla.ops.gated_delta_rule.chunk.chunk_gated_delta_rule_fwd) and makes FlashQLA the
# default where it can run. 1. compare delta-rule (fla's Triton kernels vs FlashQLA); 2. the prefill with each
# rule against the reference path; 3. compare ab pp520, fla vs flash-qla, interleaved; 4. compare prefill
# (breakdown, FlashQLA) at 256 / 520 / 4096 / 32768 and 256 @ d16384; 5. compare bench pp rows, megakernel and
# Triton tiers.
# Prediction: FlashQLA 33 µs a layer at pp520 (call 1) against fla's Triton ~47-50 (session 18): -0.27 ms over 18
# layers, pp520 ~160k -> ~175k (call 1's ab: 175k); pp4096 / pp32768 per layer 150 / 408 (call 1) against fla's
# ~200 / ~1,500 (session 18): pp4096 287k -> ~330k, pp32768 239k -> ~290k.
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
timeout 240 python3 -m compare delta-rule --pp 256,520,4096,32768 --out "$OUT/r/dr" > "$OUT/r/dr.txt" 2>&1
echo "delta-rule: exit $? ${SECONDS}s"; grep -E "^\| pp" "$OUT/r/dr.txt" | cut -c1-150; pack
wait $BUILD; echo "build: exit $? ${SECONDS}s"; tail -n1 "$OUT/r/build.log" | cut -c1-200
timeout 150 python3 docs/results/2026-11-26-h100-s22/prefill_rules_check.py "$OUT/r/check.json" 520 256 > "$OUT/r/check.txt" 2>&1
echo "check: exit $? ${SECONDS}s"; tail -4 "$OUT/r/check.txt" | cut -c1-400; pack
timeout 150 python3 -m compare ab fla:prefill_delta_rule=fla qla:prefill_delta_rule=flash-qla --pp 520 --tg 16 --rounds 3 --json "$OUT/r/ab.json" > "$OUT/r/ab.txt" 2>&1
echo "ab: exit $? ${SECONDS}s"; tail -5 "$OUT/r/ab.txt" | cut -c1-220; pack
timeout 200 python3 -m compare prefill --pp 256,520,4096,32768 --depth 16384 --reference-pp 0 --out "$OUT/r/prefill" > "$OUT/r/prefill.txt" 2>&1
echo "prefill: exit $? ${SECONDS}s"; tail -12 "$OUT/r/prefill.txt" | cut -c1-260; pack
timeout 200 python3 -m compare bench --tiers megakernel,triton --pp 520,4096,32768 --tg 0 --depth 0 --repeats 3 --no-progress --json "$OUT/r/bench_pp.json" > "$OUT/r/bench_pp.md" 2>&1
echo "bench: exit $? ${SECONDS}s"; grep -E "^\| (megakernel|triton)" "$OUT/r/bench_pp.md" | cut -c1-200; pack
