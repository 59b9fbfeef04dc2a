#!/usr/bin/env bash
# Prepared in session 51, NOT RUN (the session's device time went to calls 1-3 and to five refused starts after them).
# (1) Issue 21: branch s51-wy-pdl (NOTES "Prefill" v30) — s50-tok-rows' two kernels (dn_wy_kernel; the token blocks 4
#     rows a block) on the caller's stream: dn_prep_kernel launched programmatically after dn_wy_kernel (PDL: the WY
#     kernel triggers it at its start, its last block waits for the WY grid before it exits; e385569), no side stream —
#     against main. Call 1 measured the side-stream forms 12.0-12.9 µs alone against main's 13.5 and 4-5% slower at
#     pp520 in the prefill's graph. Predicted: dn_prep with A 13.5 -> 10-12 µs alone; pp520 +1 to +2.5% (18 layers x
#     1.5-3.5 µs), i.e. main's ~218.8k -> 221-224k.
# (2) The hazard tests of tests/test_megakernel.py as rewritten in s51 (the logits' median over 8 prompts) on main, and
#     hazard_diag.py (prompt 0) on main: the prompt by the tier's prefill against token by token.
# Order: builds; `compare bench --pp 520` new pdl pdl new pdl new (10 repeats); pdl's WY / dn_prep tests; main's hazard
# tests; hazard_diag on main; pdl's every-layer prefill tests; wy_split_bench.py (fixed kernel names) on both.
# Then, if pdl gains >= 1%: next_call_b.sh (pdl's sanitizers, the remaining prefill GPU tests, pp4096 / pp32768).
# Setup (from main's checkout):
#   rm -rf .ab_pdl; mkdir .ab_pdl; git archive s51-wy-pdl | tar -x -C .ab_pdl; rm -rf .ab_pdl/docs
#   git rev-parse --short s51-wy-pdl > .ab_pdl/COMMIT; git rev-parse --short HEAD > COMMIT
# carry [".whl", ".qla", "COMMIT", ".ab_pdl"]. Run as END=<s> bash docs/results/2026-12-07-h100-s51/next_call.sh
set -u; source docs/results/device_call.sh --site; END=${END:-560}
build_trees new pdl
for side in new pdl pdl new pdl new; do bench_pp $side 520 ${REPEATS:-10} 60 45; done
gpu_tests wy pdl 60 "dn_prep_given_A or dn_prep_writes"
gpu_tests hazard new 120 "hazard" tests/test_megakernel.py
grep -h "prompt\|median" $OUT/r/tests_hazard.txt | head -12
if [ $((END - SECONDS)) -ge 70 ]; then
  in_tree new 60 python3 $ROOT/docs/results/2026-12-07-h100-s51/hazard_diag.py $OUT/r/diag_new.json new 0 > $OUT/r/diag_new.txt 2>&1
  echo "diag new: exit $? ${SECONDS}s"; grep "^new" $OUT/r/diag_new.txt || tail -3 $OUT/r/diag_new.txt; pack
fi
gpu_tests layers pdl 150 "every_layer"
mkdir -p $OUT/r/wy
for side in new pdl; do
  [ $((END - SECONDS)) -lt 40 ] && { echo "wy $side: skipped"; continue; }
  in_tree $side 60 python3 $ROOT/docs/results/2026-12-07-h100-s50/wy_split_bench.py $OUT/r/wy $side 520 > $OUT/r/wy_$side.txt 2>&1
  echo "wy $side: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_$side.txt | cut -c1-300; pack
done
true
