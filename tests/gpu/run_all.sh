#!/usr/bin/env bash
# Everything the GPU machine runs, by stage, one device call per stage or two (each stage has its
# own time limits so the earlier results always come back). From the repo root on the GPU machine:
#     WORKBENCH_COMMIT=<sha> bash tests/gpu/run_all.sh [report] [tests] [family] [sanitize] [long] [ab] [batch]
# (default: report tests long). Results go to $OUT (default ./gpu-results); copy them into
# docs/results/<date>-h100-<commit>/ with a README (docs/results/README.md says how).
#   report    compare bench --layers and compare diff on the built-in 0.8B model, every tier; then
#             compare bench --batch 1,2,4,8 and compare diff --batch 8 of the triton and megakernel tiers
#   batch     tests/gpu/batch_check.py: a batch against its rows alone (bitwise), the megakernel's
#             per-phase µs at B = 1, 2, 4, 8 and tg128 per B for the megakernel and triton; batch.json
#   tests     every GPU test but the sanitizers and the family's (TEST_K selects: pytest -k)
#   family    tests/test_megakernel_family.py: the megakernel at tiny-megakernel, 2B, 4B, 9B (each size's
#             build first, four at once; FAMILY_K selects, e.g. "tiny or 4b"); its memcheck runs in sanitize
#   sanitize  the compute-sanitizer tests (memcheck, synccheck, initcheck, racecheck) of decode (both
#             schedules, with a step the device-side check refuses) and of the fast prefill
#   soak      python -m megakernel soak: SOAK_STEPS (default 100000) fed-back decode steps across
#             state resets, per-token p50/p99; soak.json, soak.log
#   long      pp520, pp4096, pp32768 for the fast tiers, the megakernel prefill's breakdown
#             (compare prefill) and compare generate with the triton and megakernel tiers
#   ab        this tree against a base commit's tree in $AB_BASE (default ./.ab_old, a `git archive`
#             copy, carried): the same bits (tests/gpu/ab_commits.py snapshot / compare) and
#             compare bench of the megakernel (tg128, tg128 @ d4096, pp520), base and new alternating
#             AB_ROUNDS times (default 2) in separate processes; ab.json, ab.log
# flash-linear-attention (not in the GPU image) is installed from ./.whl when present.
set -uo pipefail
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
ROOT=$PWD
# one pip call per folder: fla-core and flash-linear-attention share the fla/ package folder
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=$ROOT:/tmp/site:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export QWEN35_MEGAKERNEL_CACHE=${QWEN35_MEGAKERNEL_CACHE:-/tmp/qwen35-megakernel}
stages=" ${*:-report tests long} "
prebuild() { timeout 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/build.log" 2>&1 || tail -5 "$OUT/build.log"; }
FAMILY="tiny-megakernel qwen3.5-2b qwen3.5-4b qwen3.5-9b"
prebuild_family() {  # every size's build at once (each ~25 s), so no test builds inside its time limit
  for size in $FAMILY; do
    timeout 300 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" \
        > "$OUT/build_$size.log" 2>&1 &
  done
  wait
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$OUT/device.txt"
if [[ $stages == *" report "* ]]; then
timeout ${BENCH_LIMIT:-240} python3 -m compare bench --layers --repeats 3 --layer-steps 5 --slow-repeats 1 --no-progress \
    --json "$OUT/bench.json" --png "$OUT/bench_layers.png" > "$OUT/bench.md" 2>&1
echo "bench: exit $?"; cat "$OUT/bench.md"
timeout ${DIFF_LIMIT:-90} python3 -m compare diff --json "$OUT/diff.json" --png "$OUT/diff.png" > "$OUT/diff.txt" 2>&1
echo "diff: exit $?"; cat "$OUT/diff.txt"
timeout ${BATCH_BENCH_LIMIT:-240} python3 -m compare bench --tiers triton,megakernel --batch 1,2,4,8 --pp 0 --depth 0 \
    --repeats 3 --no-progress --json "$OUT/bench_batch.json" > "$OUT/bench_batch.md" 2>&1
echo "batch bench: exit $?"; cat "$OUT/bench_batch.md"
timeout ${BATCH_DIFF_LIMIT:-150} python3 -m compare diff --batch 8 --json "$OUT/diff_batch.json" > "$OUT/diff_batch.txt" 2>&1
echo "batch diff: exit $?"; tail -30 "$OUT/diff_batch.txt"
fi
if [[ $stages == *" batch "* ]]; then
timeout ${BATCH_LIMIT:-300} python3 tests/gpu/batch_check.py --json "$OUT/batch.json" > "$OUT/batch.log" 2>&1
echo "batch check: exit $?"; tail -16 "$OUT/batch.log"
fi
if [[ $stages == *" tests "* ]]; then
timeout ${TEST_LIMIT:-330} python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests \
    -k "not sanitizer and not test_megakernel_family and (${TEST_K:-not nothing})" \
    > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; tail -25 "$OUT/gpu_tests.log"
fi
if [[ $stages == *" family "* ]]; then
prebuild_family
timeout ${FAMILY_LIMIT:-540} python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py \
    -k "not sanitizer and (${FAMILY_K:-not nothing})" > "$OUT/family_tests.log" 2>&1
echo "family tests: exit $?"; tail -15 "$OUT/family_tests.log"
fi
if [[ $stages == *" sanitize "* ]]; then
rm -f "$OUT/sanitizers.log"
prebuild; prebuild_family  # (not inside an instrumented process)
timeout ${SANITIZE_LIMIT:-420} python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests -k sanitizer \
    > "$OUT/sanitize_tests.log" 2>&1
echo "sanitizer tests: exit $?"; tail -15 "$OUT/sanitize_tests.log"
fi
if [[ $stages == *" soak "* ]]; then
prebuild
timeout ${SOAK_LIMIT:-240} python3 -m megakernel soak --steps ${SOAK_STEPS:-100000} --json "$OUT/soak.json" \
    > "$OUT/soak.log" 2>&1
echo "soak: exit $?"; tail -6 "$OUT/soak.log"
fi
if [[ $stages == *" long "* ]]; then
timeout ${LONG_BENCH_LIMIT:-200} python3 -m compare bench --tiers triton,megakernel --pp 520,4096,32768 --tg 0 --depth 0 \
    --repeats 3 --no-progress --json "$OUT/bench_long.json" > "$OUT/bench_long.md" 2>&1
echo "long bench: exit $?"; cat "$OUT/bench_long.md"
timeout ${PREFILL_BENCH_LIMIT:-150} python3 -m compare prefill --pp 1,63,65,520,4097,32768 --out "$OUT" \
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
if [[ $stages == *" ab "* ]]; then
BASE=${AB_BASE:-$ROOT/.ab_old}
tmp=$(mktemp -d)
{
    echo "base tree: $BASE ($(cat "$BASE/COMMIT" 2>/dev/null || echo 'no COMMIT file')), new tree: $ROOT (${WORKBENCH_COMMIT:-?})"
    # both builds at once (the JIT cache is keyed by the sources' hash): neither run waits for the other's
    (cd "$BASE" && PYTHONPATH=$BASE:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$tmp/build_base.log" 2>&1 &
    python3 -c "import megakernel.build as b; b.load()" > "$tmp/build_new.log" 2>&1
    wait
    tail -3 "$tmp/build_base.log" "$tmp/build_new.log"
    (cd "$BASE" && PYTHONPATH=$BASE:/tmp/site WORKBENCH_COMMIT=$(cat "$BASE/COMMIT" 2>/dev/null || echo base) \
        timeout 150 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$tmp/snap_base.pt")
    timeout 150 python3 tests/gpu/ab_commits.py snapshot "$tmp/snap_new.pt"
    python3 tests/gpu/ab_commits.py compare "$tmp/snap_base.pt" "$tmp/snap_new.pt"
    runs=()
    for round in $(seq 1 ${AB_ROUNDS:-2}); do
        for side in base new; do
            dir=$ROOT commit=${WORKBENCH_COMMIT:-new}
            [ $side = base ] && dir=$BASE commit=$(cat "$BASE/COMMIT" 2>/dev/null || echo base)
            (cd "$dir" && PYTHONPATH=$dir:/tmp/site WORKBENCH_COMMIT=$commit timeout ${AB_BENCH_LIMIT:-150} python3 -m compare bench --tiers megakernel \
                --pp 520 --tg 128 --depth 4096 --repeats 3 --no-progress --json "$tmp/$side$round.json" > "$tmp/$side$round.md" 2>&1)
            echo "bench $side $round: exit $?"; grep -E "megakernel" "$tmp/$side$round.md"
            runs+=("$tmp/$side$round.json")
        done
    done
    python3 tests/gpu/ab_commits.py summary "$OUT/ab.json" "${runs[@]}"
} 2>&1 | tee "$OUT/ab.log"
fi
