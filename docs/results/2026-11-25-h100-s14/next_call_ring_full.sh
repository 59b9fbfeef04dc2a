#!/usr/bin/env bash
# For the next session (not run): where B = 8's step waits (issue 19). Branch ring-full-by-phase
# (the producer's waits for a free slot attributed to the phase holding the slot; timing mode only,
# but every ring kernel's SASS is rescheduled, so A/B it against main before it lands). Prepare:
#   rm -rf .ab_var && mkdir .ab_var && git archive ring-full-by-phase reference compare triton_kernels \
#     megakernel pyproject.toml tests | tar -x -C .ab_var && git rev-parse --short ring-full-by-phase > .ab_var/COMMIT
#   git rev-parse --short HEAD > COMMIT
# and run with carry [".whl", ".ab_var"].
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; VAR=$ROOT/.ab_var
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
(cd "$VAR" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-var PYTHONPATH=$VAR:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/r/build_var.log" 2>&1 &
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
for B in 8 1; do
  (cd "$VAR" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-var PYTHONPATH=$VAR:/tmp/site timeout 120 python3 -m megakernel anatomy --batch $B \
      > "$OUT/r/anatomy_b${B}_by_phase.txt" 2>&1)
  echo "anatomy B=$B: exit $?"; cat "$OUT/r/anatomy_b${B}_by_phase.txt"; pack
done
(cd "$VAR" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-var PYTHONPATH=$VAR:/tmp/site timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/test_batch_gpu.py tests/test_megakernel.py -k "anatomy or timed or clock" > "$OUT/r/gpu_tests_var.log" 2>&1)
echo "gpu tests var: exit $?"; tail -1 "$OUT/r/gpu_tests_var.log"; pack
for round in 1 2; do
  for side in new var; do
    dir=$ROOT; [ $side = var ] && dir=$VAR
    (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side PYTHONPATH=$dir:/tmp/site \
        timeout 90 python3 -m compare bench --tiers megakernel --pp 0 --tg 128 --depth 0 --batch 1,8 --repeats 3 --no-progress \
        --json "$OUT/r/bench_${side}_$round.json" > "$OUT/r/bench_${side}_$round.md" 2>&1)
    echo "$side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/bench_${side}_$round.md" | cut -c1-60; pack
  done
done
