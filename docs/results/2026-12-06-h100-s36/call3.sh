#!/usr/bin/env bash
# Session 36, call 3. Issue 19 on main (this checkout) against c9135a8 (.ab_base, before session 36): the batch
# anatomy test with its causal check (call 2's failure: a block without a core unit arriving before block 0 left the
# barrier), compute-sanitizer memcheck of a batch of 8 (the ring now holds state chunks), tg128 at B = 1, 2, 4, 8 for
# both trees alternating, and what one ring slot is worth at B = 8 (11 against 10, one process).
# Predicted: the test and memcheck pass; b8 +2 to +2.5% (call 1), b4 / b2 +1 to +3% (their cores read 64 KB a block
# the same way), batch 1 equal (its kernels' SASS unchanged); a slot at B = 8 worth 1-3%.
set -u
source docs/results/device_call.sh --site
for side in new base; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_batch_gpu.py -k "anatomy_of_a_batch" > "$OUT/r/tests_anatomy.txt" 2>&1
echo "anatomy test: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_anatomy.txt" | cut -c1-200; pack
in_tree new 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "compute_sanitizer and memcheck-ring-8" \
    > "$OUT/r/sanitizer_memcheck.txt" 2>&1
echo "memcheck: exit $? ${SECONDS}s"; tail -1 "$OUT/r/sanitizer_memcheck.txt" | cut -c1-200; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 70 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,2,4,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 base; bench 2 new; bench 3 base; bench 4 new
if [ $((585 - SECONDS)) -gt 70 ]; then
  in_tree new $((580 - SECONDS)) python3 -m compare ab s11 s10:ring_slots=10 --batch 8 --tg 64 --rounds 3 \
      --json "$OUT/r/ab_slots_b8.json" > "$OUT/r/ab_slots_b8.txt" 2>&1
  echo "ab slots: exit $? ${SECONDS}s"; tail -8 "$OUT/r/ab_slots_b8.txt" | cut -c1-160; pack
fi
true
