#!/usr/bin/env bash
# Device call 4 (2026-11-25, session 14; the last ~300 s of device time): the fast prefill after
# earlier tokens with a lower-right causal bias (flash, no materialised mask) and a shape's graph
# captured at its second prefill, not its first: the prefill GPU tests, then pp256 fresh and on top
# of a 16k context (call 1 measured 6aa122a: 86,639 and 6,348 tok/s).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT:/tmp/site QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; tail -1 "$OUT/r/build.log"
timeout 75 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py > "$OUT/r/gpu_tests.log" 2>&1
echo "prefill gpu tests: exit $?"; grep -E "passed|failed|FAILED|Error" "$OUT/r/gpu_tests.log" | tail -6; pack
timeout 60 python3 -m compare bench --tiers megakernel --pp 256 --tg 0 --depth 16384 --repeats 3 --no-progress \
    --json "$OUT/r/bench_pp.json" > "$OUT/r/bench_pp.md" 2>&1
echo "pp bench: exit $?"; grep -E "^\| megakernel" "$OUT/r/bench_pp.md"; pack
