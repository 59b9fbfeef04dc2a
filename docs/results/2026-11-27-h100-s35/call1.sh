#!/usr/bin/env bash
# Session 35, call 1 (prepared in session 34): branch variant-lm-batch-rows-only (patch variant_lm_batch_rows_only.patch): the
# batch int8 argmax's candidate list as rows only (pass 2 computes every listed row exactly; the stored upper bounds
# bought nothing) and LM_BATCH_CAP 64 → 40, so the shared area (4,192 → 1,376 B) gives B = 6 its 12th ring slot back on
# the H100 (and the A100 its ring at B = 6); sm_90a: B = 8's one-step kernel's spills 68 / 40 → 0 / 0 B.
# Run from a checkout of the branch ("new"), main archived as .ab_main (carry .whl .qla COMMIT .ab_main):
#   git checkout variant-lm-batch-rows-only && rm -rf .ab_main && mkdir .ab_main && git archive main | tar -x -C .ab_main \
#     && rm -rf .ab_main/docs && git rev-parse --short main > .ab_main/COMMIT && git rev-parse --short HEAD > COMMIT
# Predicted: the batch int8 tests pass (B = 2, 3, 8: the same ids as every bf16 row's), the batch memcheck / initcheck
# clean (first run of the batch int8 pass under them); B = 8 +0.5 to +2% (no spills), B = 6 +0.5 to +1.5% (a slot), B = 2 and
# batch 1 equal.
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 200 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=190 tests/test_batch_gpu.py \
    -k "int8_argmax_of_a_batch or poison_proof" > "$OUT/r/tests_batch.txt" 2>&1
echo "tests batch: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_batch.txt" | cut -c1-200; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,2,6,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
for tool in memcheck initcheck; do
  if [ $((585 - SECONDS)) -lt 80 ]; then echo "$tool: skipped"; continue; fi
  in_tree new 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "compute_sanitizer and $tool-ring-8" \
      > "$OUT/r/sanitizer_$tool.txt" 2>&1
  echo "$tool: exit $? ${SECONDS}s"; tail -1 "$OUT/r/sanitizer_$tool.txt" | cut -c1-200; pack
done
# Then (issue 21's baseline, not measured since session 29; the prefill is the same code in both trees): pp520 and
# pp4096 of the new tree. Predicted from s29: pp520 190-204k, pp4096 ~360k.
if [ $((585 - SECONDS)) -gt 70 ]; then
  in_tree new 100 python3 -m compare bench --tiers megakernel --repeats 5 --no-progress --pp 520,4096 --tg 0 --depth 0 \
      --json "$OUT/r/bench_pp.json" > "$OUT/r/bench_pp.txt" 2>&1
  echo "pp: exit $? ${SECONDS}s"; grep -E '\| pp' $OUT/r/bench_pp.txt | cut -c1-110; pack
fi
true
