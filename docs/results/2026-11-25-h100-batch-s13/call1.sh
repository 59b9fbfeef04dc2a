#!/usr/bin/env bash
# Device call 1 (2026-11-25, session 13): what session 12 could not run on its final tree (c478a06):
# batch_check (with the back-to-back lines: the 150 µs), the batch GPU tests, the GPU state machine,
# the poison-proof and timed-steps tests, initcheck + memcheck at B = 8 on the tensor-core code.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$ROOT:/tmp/site PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/r/device.txt"
timeout 200 python3 tests/gpu/batch_check.py --check-steps 6 --json "$OUT/r/batch.json" > "$OUT/r/batch.log" 2>&1
echo "batch check: exit $?"; grep -E "phases B=8|back to back|^check|^tg" "$OUT/r/batch.log" | sed -E "s/'positions'[^]]*], //"
timeout 240 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests -k "not sanitizer and (batch or machine or timed or poison)" \
    > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; grep -E "passed|failed|FAILED|Error" "$OUT/r/gpu_tests.log" | tail -12
OUT=$OUT/r timeout 130 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "initcheck-ring-8 or memcheck-ring-8" > "$OUT/r/sanitize.log" 2>&1
echo "sanitizers B=8: exit $?"; tail -2 "$OUT/r/sanitize.log"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
