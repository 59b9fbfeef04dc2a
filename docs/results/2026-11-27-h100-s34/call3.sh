#!/usr/bin/env bash
# Session 34, call 3: issue 20's bar rows for the int8 argmax (new: this checkout, main .ab_main cfcc2e3; carry .whl
# .qla COMMIT .ab_main): tg128 (no sync), tg128 stream (every token on the host as it is produced: one many-token
# launch), tg128 @ d32768, main / new alternating twice; the many-token GPU tests; memcheck and initcheck of the ring
# schedule at batch 1 (its decode_argmax steps and many-token launches now read the int8 rows).
# Predicted: tg128 +10 to +13% (call 2: +11.9%), the stream row the same gain and >= 95% of the no-sync row, tg128 @
# d32768 ~+8% (the lm_head's 85 µs of a ~900 µs step); the tests pass, both sanitizers clean.
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 150 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=140 tests/test_many_tokens_gpu.py \
    > "$OUT/r/tests_many.txt" 2>&1
echo "tests many: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_many.txt" | cut -c1-200; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 70 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 110 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0,32768 \
      --stream --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
for tool in memcheck initcheck; do
  if [ $((585 - SECONDS)) -lt 80 ]; then echo "$tool: skipped"; continue; fi
  in_tree new 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "compute_sanitizer and $tool-ring-1" \
      > "$OUT/r/sanitizer_$tool.txt" 2>&1
  echo "$tool: exit $? ${SECONDS}s"; tail -1 "$OUT/r/sanitizer_$tool.txt" | cut -c1-200; pack
done
true
