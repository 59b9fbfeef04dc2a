#!/usr/bin/env bash
# Device call 2 (2026-11-25, session 14): an attention core's past K/V through the weight ring
# (schedule.cuh att_kv_slice), against 6aa122a (.ab_base): the bits (must be identical: same
# positions per warp in the same order), then compare bench of base and new alternating, 2 rounds
# (tg128 at d0, d4096, d32768 and B = 8), then the split-K / schedule GPU tests, then the hazard-weight
# tests (the absolute bound dropped, the logits as their own test).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; BASE=$ROOT/.ab_base
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/r/device.txt"
(cd "$BASE" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-base PYTHONPATH=$BASE:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/r/build_base.log" 2>&1 &
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait; tail -2 "$OUT/r/build_new.log"
(cd "$BASE" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-base PYTHONPATH=$BASE:/tmp/site timeout 150 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot /tmp/snap_base.pt) &
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout 150 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_new.pt
wait
PYTHONPATH=$ROOT:/tmp/site python3 tests/gpu/ab_commits.py compare /tmp/snap_base.pt /tmp/snap_new.pt | tee "$OUT/r/bits.txt"; pack
for round in 1 2; do
  for side in base new; do
    dir=$ROOT; [ $side = base ] && dir=$BASE
    (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side PYTHONPATH=$dir:/tmp/site timeout 100 python3 -m compare bench --tiers megakernel \
        --pp 0 --tg 128 --depth 4096,32768 --batch 1,8 --repeats 3 --no-progress \
        --json "$OUT/r/bench_${side}_$round.json" > "$OUT/r/bench_${side}_$round.md" 2>&1)
    echo "$side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/bench_${side}_$round.md" | cut -c1-60
    pack
  done
done
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py \
    -k "split_k_paths or any_grid_and_schedule or alternate or teacher or prefill_then_decode or stream_only_launch or (every_layer and not hazard)" \
    > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; grep -E "passed|failed|FAILED|Error" "$OUT/r/gpu_tests.log" | tail -12; pack
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout 120 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py \
    -k "hazard" > "$OUT/r/gpu_tests_hazard.log" 2>&1
echo "hazard tests: exit $?"; grep -E "passed|failed|FAILED|logits:" "$OUT/r/gpu_tests_hazard.log" | tail -8; pack
