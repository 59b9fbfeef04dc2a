#!/usr/bin/env bash
# Session 34, call 5: a batch's greedy argmax from the int8 lm_head (branch variant-lm-int8-batch, "new":
# lm_head.cuh lm_head_bounded_batch) against main (.ab_main: ceb83d6, batches read every bf16 row). Carry .whl .qla
# COMMIT .ab_main. Pass 1 on the tensor cores (int8 bytes turned into bf16 exactly, the hi/lo planes' mma sequence),
# candidates per batch row, the exact pass in the bf16 batch pass's lanes and mma order (the same logits' bits).
# Predicted: the batch GPU tests pass (the int8 argmax against every bf16 row at B = 2, 3, 8, one launch a step and
# one many-token launch, 132 and 96 blocks; poison; bits on any grid); bits identical to main (the snapshot's batch
# tokens); B = 8: the lm_head ~175 → ~95 µs, tg128 b8 8,800 → 9,400-9,700 (+7 to +10%; its one-step kernel now spills
# 68 / 40 B, which may take some of it), B = 2 +9 to +12%, batch 1 equal (its code is main's).
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 200 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=190 tests/test_batch_gpu.py \
    -k "int8_argmax_of_a_batch or poison_proof or bits_on_any_grid" > "$OUT/r/tests_batch.txt" 2>&1
echo "tests batch: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_batch.txt" | cut -c1-200; pack
for side in main new; do
  in_tree $side 90 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_new.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -4 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,2,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
true
