#!/usr/bin/env bash
# Device call 2 (2026-11-25, session 13): the batch DeltaNet core by (row, head) with the gated norm
# fused, the out-projections reading their inputs from global memory, the attention merge in the
# core (a batch), 12-13 ring slots: bits against c478a06 (.ab_base: must be identical, one traced
# step and 32 greedy steps at B = 8, and batch 1), then batch_check (megakernel, no checks) of base and new
# alternating, 2 rounds; then the megakernel batch GPU tests and memcheck at B = 8.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; BASE=$ROOT/.ab_base
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/r/device.txt"
(cd "$BASE" && PYTHONPATH=$BASE:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/r/build_base.log" 2>&1 &
PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
(cd "$BASE" && PYTHONPATH=$BASE:/tmp/site timeout 150 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot /tmp/snap_base.pt)
PYTHONPATH=$ROOT:/tmp/site timeout 150 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_new.pt
PYTHONPATH=$ROOT:/tmp/site python3 tests/gpu/ab_commits.py compare /tmp/snap_base.pt /tmp/snap_new.pt | tee "$OUT/r/bits.txt"
for round in 1 2; do
  for side in base new; do
    dir=$ROOT; [ $side = base ] && dir=$BASE
    (cd "$dir" && PYTHONPATH=$dir:/tmp/site timeout 120 python3 tests/gpu/batch_check.py --tiers megakernel --skip-checks \
        --json "$OUT/r/batch_${side}_$round.json" > "$OUT/r/batch_${side}_$round.log" 2>&1)
    echo "$side $round: exit $?"; grep -E "ring slots|phases B=8|back to back|^tg" "$OUT/r/batch_${side}_$round.log" | sed -E "s/'seconds'[^,]*, //; s/, 'tier'[^}]*//"
  done
done
PYTHONPATH=$ROOT:/tmp/site timeout 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_batch_gpu.py tests/test_megakernel.py \
    -k "not sanitizer and (batch or rows) and not triton" > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; grep -E "passed|failed|FAILED|Error" "$OUT/r/gpu_tests.log" | tail -12
PYTHONPATH=$ROOT:/tmp/site OUT=$OUT/r timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "memcheck-ring-8" > "$OUT/r/sanitize.log" 2>&1
echo "memcheck B=8: exit $?"; tail -1 "$OUT/r/sanitize.log"
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
