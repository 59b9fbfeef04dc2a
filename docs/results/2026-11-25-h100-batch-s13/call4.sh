#!/usr/bin/env bash
# Device call 4 (2026-11-25, session 13; the session's last device minutes): compare bench --batch of
# the committed tree (the state rows loaded at the core's start), then the B = 8 megakernel batch tests
# as far as the time allows.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/r/device.txt"
timeout 110 python3 -m compare bench --tiers megakernel --batch 1,2,4,8 --pp 0 --depth 0 --repeats 3 --no-progress \
    --json "$OUT/r/bench_batch.json" > "$OUT/r/bench_batch.md" 2>&1
echo "batch bench: exit $?"; grep -E "^\|" "$OUT/r/bench_batch.md" | head -8; pack
timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_batch_gpu.py -k "megakernel and 8 and not triton" -x > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; tail -3 "$OUT/r/gpu_tests.log"; pack
