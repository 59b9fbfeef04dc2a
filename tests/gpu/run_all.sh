#!/usr/bin/env bash
# The GPU report in one device call: `compare bench --layers` and `compare diff` on the
# built-in 0.8B model with every tier, then the GPU tests. From the repo root on the GPU
# machine:
#     WORKBENCH_COMMIT=<sha> bash tests/gpu/run_all.sh
# fla (and pytest/hypothesis, where missing) are installed from ./.whl and ./.mkwhl when
# present (the lent H100 has no fla). Each step has its own time limit so the results of
# the earlier ones always come back. Results go to $OUT (default ./gpu-results); copy
# them into docs/results/.
set -uo pipefail
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
# one pip call per folder: fla-core and flash-linear-attention share the fla/ package folder
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
missing=()
for whl in .mkwhl/*.whl; do
    [ -e "$whl" ] || continue
    python3 -c "import $(basename "$whl" | cut -d- -f1)" 2>/dev/null || missing+=("$whl")
done
if [ ${#missing[@]} -gt 0 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-tools "${missing[@]}"
fi
export PYTHONPATH=$PWD:/tmp/site:/tmp/site-tools:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export QWEN35_MEGAKERNEL_CACHE=${QWEN35_MEGAKERNEL_CACHE:-/tmp/qwen35-megakernel}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/device.txt"
timeout ${BENCH_LIMIT:-240} python3 -m compare bench --layers --repeats 3 --layer-steps 5 --hf-repeats 1 --no-progress \
    --json "$OUT/bench.json" --png "$OUT/bench_layers.png" > "$OUT/bench.md" 2>&1
echo "bench: exit $?"; cat "$OUT/bench.md"
timeout ${DIFF_LIMIT:-90} python3 -m compare diff --json "$OUT/diff.json" --png "$OUT/diff.png" > "$OUT/diff.txt" 2>&1
echo "diff: exit $?"; cat "$OUT/diff.txt"
timeout ${TEST_LIMIT:-150} python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests -k "${TEST_K:-not nothing}" \
    > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; tail -15 "$OUT/gpu_tests.log"
