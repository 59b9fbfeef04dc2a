#!/usr/bin/env bash
# Device call 3 (2026-11-25, session 14): the attention core's counted merge with grouped loads (new)
# against bf341ca (.ab_base: K/V through the ring, the serial merge): bits (must be identical), the
# anatomy at a 32,768-token context of both, compare bench of base and new alternating (2 rounds:
# tg128 at d0 and d32768, B = 1 and 8), then new alone over the contexts issue 20 asks for (d0,
# d4096, d16384, d32768, d131072, each with its own byte floor), then the split-K GPU tests.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; BASE=$ROOT/.ab_base
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/r/device.txt"
(cd "$BASE" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-base PYTHONPATH=$BASE:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/r/build_base.log" 2>&1 &
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait; tail -1 "$OUT/r/build_new.log"
(cd "$BASE" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-base PYTHONPATH=$BASE:/tmp/site timeout 150 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot /tmp/snap_base.pt) &
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout 150 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_new.pt
wait
PYTHONPATH=$ROOT:/tmp/site python3 tests/gpu/ab_commits.py compare /tmp/snap_base.pt /tmp/snap_new.pt | tee "$OUT/r/bits.txt"; pack
for side in base new; do
  dir=$ROOT; [ $side = base ] && dir=$BASE
  (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side PYTHONPATH=$dir:/tmp/site timeout 60 python3 -m megakernel anatomy --context 32768 --steps 4 \
      > "$OUT/r/anatomy_d32768_$side.txt" 2>&1)
  echo "anatomy $side: exit $?"; grep -E "attention|ring full" "$OUT/r/anatomy_d32768_$side.txt" | cut -c1-120
done; pack
for round in 1 2; do
  for side in base new; do
    dir=$ROOT; [ $side = base ] && dir=$BASE
    (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side PYTHONPATH=$dir:/tmp/site timeout 80 python3 -m compare bench --tiers megakernel \
        --pp 0 --tg 128 --depth 32768 --batch 1,8 --repeats 3 --no-progress \
        --json "$OUT/r/bench_${side}_$round.json" > "$OUT/r/bench_${side}_$round.md" 2>&1)
    echo "$side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/bench_${side}_$round.md" | cut -c1-60
    pack
  done
done
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout 120 python3 -m compare bench --tiers megakernel \
    --pp 0 --tg 128 --depth 4096,16384,32768,131072 --repeats 3 --no-progress \
    --json "$OUT/r/bench_depths.json" > "$OUT/r/bench_depths.md" 2>&1
echo "depths: exit $?"; grep -E "^\| megakernel" "$OUT/r/bench_depths.md"; pack
QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout 100 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py \
    -k "split_k_paths or any_grid_and_schedule or prefill_then_decode" > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; grep -E "passed|failed|FAILED|Error" "$OUT/r/gpu_tests.log" | tail -8; pack
