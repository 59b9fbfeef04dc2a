#!/usr/bin/env bash
# The GPU report: `compare bench --layers` and `compare diff` on the built-in 0.8B model
# with every tier, the GPU tests, and the long-prompt / generate stage. From the repo root
# on the GPU machine:
#     WORKBENCH_COMMIT=<sha> bash tests/gpu/run_all.sh [report] [tests] [long]   (default: all three)
# Stages: report = bench --layers + diff; tests = every GPU test; long = bench of pp520,
# pp4096, pp32768 for the fast tiers, the megakernel prefill breakdown
# (python -m megakernel.bench_prefill) and `compare generate` with the triton and megakernel
# tiers. All three take ~15 minutes on the lent H100, more than one 10-minute device call:
# run `report`, `tests` and `long` as three calls.
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
stages=" ${*:-report tests long} "
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/device.txt"
if [[ $stages == *" report "* ]]; then
timeout ${BENCH_LIMIT:-240} python3 -m compare bench --layers --repeats 3 --layer-steps 5 --hf-repeats 1 --no-progress \
    --json "$OUT/bench.json" --png "$OUT/bench_layers.png" > "$OUT/bench.md" 2>&1
echo "bench: exit $?"; cat "$OUT/bench.md"
timeout ${DIFF_LIMIT:-90} python3 -m compare diff --json "$OUT/diff.json" --png "$OUT/diff.png" > "$OUT/diff.txt" 2>&1
echo "diff: exit $?"; cat "$OUT/diff.txt"
fi
if [[ $stages == *" tests "* ]]; then
timeout ${TEST_LIMIT:-330} python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests -k "${TEST_K:-not nothing}" \
    > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; tail -15 "$OUT/gpu_tests.log"
fi
if [[ $stages == *" long "* ]]; then
timeout ${LONG_BENCH_LIMIT:-200} python3 -m compare bench --tiers triton,megakernel --pp 520,4096,32768 --tg 0 --depth 0 \
    --repeats 3 --no-progress --json "$OUT/bench_long.json" > "$OUT/bench_long.md" 2>&1
echo "long bench: exit $?"; cat "$OUT/bench_long.md"
timeout ${PREFILL_BENCH_LIMIT:-150} python3 -m megakernel.bench_prefill --pp 1,63,65,520,4097,32768 --out "$OUT" \
    > "$OUT/prefill_bench.log" 2>&1
echo "prefill breakdown: exit $?"; tail -9 "$OUT/prefill_bench.log"
for tier in triton megakernel; do
    for sampling in "" "--temperature 0.8 --top-k 50 --seed 3"; do
        timeout ${GENERATE_LIMIT:-100} python3 -m compare generate --tier $tier --prompt-ids 1,2,3,4,5 \
            --max-new-tokens 40 $sampling >> "$OUT/generate.txt" 2>&1
        echo "generate --tier $tier $sampling: exit $?" | tee -a "$OUT/generate.txt"
    done
done
tail -24 "$OUT/generate.txt"
fi
