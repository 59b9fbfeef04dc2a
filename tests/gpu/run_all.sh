#!/usr/bin/env bash
# The GPU report in one device call: GPU tests, `compare diff` and `compare bench --layers`
# on the built-in 0.8B model, every tier. Run from the repo root on the GPU machine:
#     WORKBENCH_COMMIT=<sha> bash tests/gpu/run_all.sh
# fla is installed from ./.whl when present (the lent H100 has none). Results go to
# $OUT (or ./gpu-results); copy them into docs/results/ with tests/gpu/collect.sh.
set -uo pipefail
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/device.txt"
python3 -m pytest -q -m gpu -rs tests 2>&1 | tee "$OUT/gpu_tests.log"
python3 -m compare diff --json "$OUT/diff.json" --png "$OUT/diff.png" 2>&1 | tee "$OUT/diff.txt"
python3 -m compare bench --layers --json "$OUT/bench.json" --png "$OUT/bench_layers.png" 2>&1 | tee "$OUT/bench.md"
