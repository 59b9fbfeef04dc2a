#!/usr/bin/env bash
# Session 20, call 5 (issue 20 part 3 / issue 22): smaller K = D work items at D <= 2048. Call 4 took the 4B
# from 2 to 4 whole rows a ring chunk: 259 -> 320 tok/s (74 -> 91% of its byte floor), its ring holding 2.5
# items (of 4 chunks) instead of 1.5 (of 8). The 0.8B's and 2B's K = D items (in-projections, lm_head: 58% of
# the 0.8B's bytes) are 8 chunks of 16 KB, 1.5 items in 12 slots: while the warps read one item the producer
# can land only half of the next. "new" (COMMIT): a warp takes 2 pieces of 1024 (0.8B: 2 rows; 2B: 1 row), an
# item 4 chunks, 3 items in the ring (gate/up, down, out-proj and the batch kernels unchanged). "base" =
# .ab_base (af9030e).
# 1. builds: 0.8B and 2B, base and new;
# 2. A/B, alternating, two rounds: the 0.8B's tg128 b1 and b8 (b8: its kernels are the same SASS, a control);
#    the 2B's tg128;
# 3. the 0.8B's GPU tests on the new tree (every layer, split-K, schedules x grids, many tokens).
# Prediction: 0.8B tg128 +2-6% (1,490 -> 1,520-1,580: the in-proj / lm_head streams as the 4B's now do, but
# twice the items' block barriers), b8 equal; 2B +3-6%.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
SECONDS=0
for side in base new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('qwen3.5-2b'))" \
      > "$OUT/r/build_${side}_2b.log" 2>&1 &
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_${side}_08b.log" 2>&1 &
done
wait; echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
for round in 1 2; do
  for side in base new; do
    in_tree $side 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --depth 0 --pp 0 --tg 128 --batch 1,8 \
        --json "$OUT/r/dec_${side}_$round.json" > "$OUT/r/dec_${side}_$round.md" 2>&1
    echo "0.8B $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/dec_${side}_$round.md" | cut -c1-70; pack
  done
done
for round in 1 2; do
  for side in base new; do
    in_tree $side 90 python3 -m compare bench --config qwen3.5-2b --tiers megakernel --repeats 3 --no-progress --depth 0 --pp 0 --tg 128 \
        --json "$OUT/r/tg2b_${side}_$round.json" > "$OUT/r/tg2b_${side}_$round.md" 2>&1
    echo "2B $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/tg2b_${side}_$round.md" | cut -c1-70; pack
  done
done
SECONDS=0
in_tree new 200 python3 -m pytest -q -m gpu -rs -x -p no:cacheprovider tests/test_megakernel.py \
    -k "not sanitizer and not synccheck and not initcheck and not racecheck" > "$OUT/r/tests_08b.txt" 2>&1
echo "0.8B tests: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  " "$OUT/r/tests_08b.txt" | tail -8 | cut -c1-300; pack
