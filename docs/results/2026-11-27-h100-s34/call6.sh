#!/usr/bin/env bash
# Session 34, call 6: call 5's batch int8 argmax with its candidate filter mended (branch variant-lm-int8-batch,
# da99cfa, "new") against main (.ab_main: ceb83d6). Carry .whl .qla COMMIT .ab_main. Call 5: correct (every id the bf16
# rows' at B = 2, 3, 8) but every batch row overflowed into the exact pass (a thread's own running bound kept each
# first row): B = 8 8,785 → 2,715. Now the rows are filtered against the batch row's best lower bound after each item.
# Predicted: the batch int8 test passes (incl. the check that the int8 pass ran); B = 8 +7 to +10%, B = 2 +9 to +12%,
# batch 1 equal.
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 150 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=140 tests/test_batch_gpu.py \
    -k "int8_argmax_of_a_batch" > "$OUT/r/tests_batch.txt" 2>&1
echo "tests batch: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_batch.txt" | cut -c1-200; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,2,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
true
