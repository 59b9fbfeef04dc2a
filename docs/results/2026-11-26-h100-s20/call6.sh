#!/usr/bin/env bash
# Session 20, call 6 (issue 22). The working tree (COMMIT): the K = D chunk of 4 whole rows at the 4B (call 4),
# call 5's variant taken back out (the 0.8B's and 4B's SASS are af9030e's). compare bench of the megakernel and
# the Triton tier at the 4B (tg128, pp520: the family table's row in one run), then its anatomy (ring).
# Prediction: megakernel tg128 ~320 tok/s (~90% of the byte floor, call 4), ~1.24x the Triton tier (258.6 in
# call 2); pp520 unchanged (~53k: the prefill does not use the ring).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
SECONDS=0
timeout 240 python3 -m compare bench --config qwen3.5-4b --tiers megakernel,triton --pp 520 --tg 128 --depth 0 --repeats 3 \
    --no-progress --json "$OUT/r/bench_qwen3.5-4b.json" > "$OUT/r/bench_qwen3.5-4b.md" 2>&1
echo "bench 4B: exit $? ${SECONDS}s"; grep -E "^\| (megakernel|triton)" "$OUT/r/bench_qwen3.5-4b.md" | cut -c1-150; pack
SECONDS=0
timeout 150 python3 -m megakernel anatomy --config qwen3.5-4b --context 16 --steps 8 > "$OUT/r/anatomy_qwen3.5-4b_ring.txt" 2>&1
echo "anatomy 4B: exit $? ${SECONDS}s"; tail -n 16 "$OUT/r/anatomy_qwen3.5-4b_ring.txt" | cut -c1-160; pack
