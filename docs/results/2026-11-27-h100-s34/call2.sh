#!/usr/bin/env bash
# Session 34, call 2: batch 1's greedy argmax from the lm_head's int8 copy (megakernel/lm_bound.py, lm_head.cuh
# lm_head_bounded; "new", this checkout) against main (.ab_main: cfcc2e3, every bf16 row). Carry .whl .qla COMMIT .ab_main.
# The lm_head is 508 MB of the step's 1.504 GB; the int8 copy is 254 MB (+2 MB of scales and bounds), and the rows its
# bounds cannot rule out (a few a block on the built-in weights, tests/test_lm_bound.py) are read again as bf16.
# Predicted: bits of every traced part and the logits identical (the logits path reads the bf16 rows as before), the
# 128 greedy tokens identical (the argmax is provably the bf16 rows'); B = 1: the lm_head 165-177 µs → ~90 µs, the
# step −70 to −85 µs: tg128 ~1,505 → 1,650-1,720 (+10 to +14%), if the int8 dots keep up with the stream (3
# instructions a weight: ~26 µs of issue a block over the phase); B = 8 unchanged (its kernels compile to main's).
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 200 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=150 tests/test_megakernel.py \
    -k "int8_argmax or fused_argmax or any_grid_and_schedule or the_clock" > "$OUT/r/tests_mk.txt" 2>&1
echo "tests mk: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_mk.txt" | cut -c1-200; pack
for side in main new; do
  in_tree $side 90 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_new.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -4 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
bench() {  # n side
  if [ $((590 - SECONDS)) -lt 45 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
if [ $((590 - SECONDS)) -gt 40 ]; then
  in_tree new 40 python3 -m megakernel anatomy --batch 1 --context 16 > "$OUT/r/anatomy_b1_new.txt" 2>&1
  echo "anatomy: exit $? ${SECONDS}s"; grep -E "ring full|a step" "$OUT/r/anatomy_b1_new.txt"; pack
fi
if [ $((590 - SECONDS)) -gt 60 ]; then
  in_tree new 50 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_batch_gpu.py -k anatomy > "$OUT/r/tests_batch_anatomy.txt" 2>&1
  echo "batch anatomy test: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_batch_anatomy.txt" | cut -c1-200; pack
fi
true
