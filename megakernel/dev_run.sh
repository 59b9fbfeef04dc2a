#!/usr/bin/env bash
# The megakernel's development run in ONE device call: JIT build, phase-by-phase and
# layer-by-layer checks + tg128 timing of every schedule variant (python -m megakernel.dev_check),
# the GPU tests, and (stage "sanitize") compute-sanitizer memcheck, synccheck and racecheck. From the repo root:
#     bash megakernel/dev_run.sh [all|check|tests|sanitize|prefill|ab]...     (default: check tests)
# Stage "prefill": the fast-prefill GPU tests (tests/test_megakernel_prefill.py, memcheck included)
# and python -m megakernel.bench_prefill (prefill_tests.log, prefill_bench.{md,json}); fla is
# installed from ./.whl (carried) when it is not importable.
# Stage "ab": python -m megakernel.ab $AB_ARGS (variants timed interleaved in one process; ab.log, ab.json).
# Writes to $OUT: run.log (device, build, stage times), dev_check.log / .json, tests.log,
# sanitize.log (pytest), sanitizers.log (every sanitizer run's whole report) and the prefill
# and ab stages' files.
# Test tools missing on the GPU machine are installed from ./.mkwhl (carried) when present.
set -uo pipefail
export PYTHONPATH=$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1
OUT=${OUT:-mk-results}
mkdir -p "$OUT"
export OUT
export QWEN35_MEGAKERNEL_CACHE=${QWEN35_MEGAKERNEL_CACHE:-/tmp/qwen35-megakernel}
stages=${*:-check tests}
[[ " $stages " == *" all "* ]] && stages="check tests sanitize"

for mod in pytest:pytest,pluggy,iniconfig,packaging,pygments hypothesis:hypothesis,attrs,sortedcontainers; do
    name=${mod%%:*}
    if ! python3 -c "import $name" 2>/dev/null && ls .mkwhl/*.whl >/dev/null 2>&1; then
        for w in ${mod#*:}; do
            python3 -c "import $w" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --no-compile \
                --no-cache-dir --target /tmp/site .mkwhl/$w-*.whl
        done
        export PYTHONPATH=$PYTHONPATH:/tmp/site
    fi
done

if ! python3 -c "import fla" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
    # one pip call: fla-core and flash-linear-attention share the fla/ package folder
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fla .whl/*.whl
    export PYTHONPATH=$PYTHONPATH:/tmp/site-fla
fi

log() { echo "$*" | tee -a "$OUT/run.log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee -a "$OUT/run.log"
t0=$(date +%s)
python3 -c "import megakernel.build as b; m = b.load(); print('built', b.archs_for_device(), b.cache_dir(b.archs_for_device()))" \
    2>&1 | tail -5 | tee -a "$OUT/run.log"
log "build: $(( $(date +%s) - t0 )) s"

if [[ " $stages " == *" check "* ]]; then
    timeout 240 python3 -m megakernel.dev_check 2>&1 | tee "$OUT/dev_check.log"
    log "check done: $(( $(date +%s) - t0 )) s"
fi
if [[ " $stages " == *" tests "* ]]; then
    timeout 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py -k "not sanitizer" 2>&1 \
        | tee "$OUT/tests.log" | tail -40
    log "tests done: $(( $(date +%s) - t0 )) s"
fi
if [[ " $stages " == *" sanitize "* ]]; then
    rm -f "$OUT/sanitizers.log"
    timeout 330 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py -k sanitizer 2>&1 \
        | tee "$OUT/sanitize.log" | tail -60
    log "sanitize done: $(( $(date +%s) - t0 )) s"
fi
if [[ " $stages " == *" prefill "* ]]; then
    timeout ${PREFILL_TEST_LIMIT:-300} python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py \
        2>&1 | tee "$OUT/prefill_tests.log" | tail -40
    log "prefill tests done: $(( $(date +%s) - t0 )) s"
    timeout ${PREFILL_BENCH_LIMIT:-200} python3 -m megakernel.bench_prefill --out "$OUT" ${PREFILL_BENCH_ARGS:-} 2>&1 | tail -30
    log "prefill bench done: $(( $(date +%s) - t0 )) s"
fi
if [[ " $stages " == *" ab "* ]]; then
    timeout ${AB_LIMIT:-300} python3 -m megakernel.ab ${AB_ARGS:-base} --json "$OUT/ab.json" 2>&1 | tee "$OUT/ab.log"
    log "ab done: $(( $(date +%s) - t0 )) s"
fi
log "total: $(( $(date +%s) - t0 )) s"
