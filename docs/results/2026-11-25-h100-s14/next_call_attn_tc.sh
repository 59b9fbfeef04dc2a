#!/usr/bin/env bash
# For the next session (not run): the attention core on the tensor cores (branch attn-tc, c2d63dd:
# compiles, no ring kernel spills, never ran). Main against the branch
# (.ab_var): the branch's split-K / schedule / grid / every-layer / teacher-forced GPU tests (its
# bits differ from main's: P in bf16, the mma's sums), then tg128 at d0, d4096, d32768 and B = 8 of
# both, alternating (session 14, bf341ca: d32768 1,012 tok/s; the bar 1,100). Prepare .ab_var:
#   rm -rf .ab_var && mkdir .ab_var && git archive attn-tc reference compare triton_kernels megakernel \
#     pyproject.toml tests | tar -x -C .ab_var
# then `git rev-parse --short HEAD > COMMIT` (main) and the variant's commit into .ab_var/COMMIT (the bench
# headers name them: WORKBENCH_COMMIT; the device copy's own git HEAD is stale), and run with carry
# [".whl", ".ab_var"].
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; VAR=$ROOT/.ab_var
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
(cd "$VAR" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-var PYTHONPATH=$VAR:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/r/build_var.log" 2>&1 &
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait; tail -1 "$OUT/r/build_var.log"
(cd "$VAR" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-var PYTHONPATH=$VAR:/tmp/site timeout 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py \
    -k "split_k_paths or any_grid_and_schedule or teacher or prefill_then_decode or (every_layer and not hazard)" > "$OUT/r/gpu_tests_var.log" 2>&1)
echo "gpu tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/gpu_tests_var.log" | tail -6; pack
for round in 1 2; do
  for side in new var; do
    dir=$ROOT; [ $side = var ] && dir=$VAR
    (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side PYTHONPATH=$dir:/tmp/site timeout 100 python3 -m compare bench --tiers megakernel \
        --pp 0 --tg 128 --depth 4096,32768 --batch 1,8 --repeats 3 --no-progress --json "$OUT/r/bench_${side}_$round.json" > "$OUT/r/bench_${side}_$round.md" 2>&1)
    echo "$side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/bench_${side}_$round.md" | cut -c1-60; pack
  done
done
