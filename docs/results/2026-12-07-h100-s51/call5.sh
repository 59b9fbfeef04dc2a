#!/usr/bin/env bash
# Session 51, call 5: (1) issue 21: branch s51-wy-pdl (1558434) — s50-tok-rows' two kernels (dn_wy_kernel, the token
# blocks 4 rows a block) on the caller's stream, dn_prep_kernel launched programmatically after dn_wy_kernel (PDL), no
# side stream — against main (1a684d6): wy_split_bench.py at 520 rows, `compare bench --pp 520` new pdl pdl new
# (10 repeats), its WY / dn_prep tests and every-layer tests. Predicted (NOTES v30): dn_prep with A 13.5 -> 10-11 µs,
# pp520 +1.5 to +2.5% (call 1: split / rows lost 4.5% by their graph branches). (2) call 4's hazard bisection, in part:
# hazard_diag.py in main, s21 (5ea3abf) and s40 (9a2385a).
# Setup: mkdir .ab_pdl; git archive s51-wy-pdl | tar -x -C .ab_pdl; rm -rf .ab_pdl/docs; git rev-parse --short s51-wy-pdl
#   > .ab_pdl/COMMIT (and .ab_s21 / .ab_s40 as in call4.sh); carry .whl .qla COMMIT .ab_pdl .ab_s21 .ab_s40
set -u; source docs/results/device_call.sh --site; END=${END:-560}
B=docs/results/2026-12-07-h100-s50/wy_split_bench.py
build_trees new pdl s21 s40
for side in new pdl pdl new; do bench_pp $side 520 10 60 45; done
for side in new s21 s40; do
  [ $((END - SECONDS)) -lt 50 ] && { echo "diag $side: skipped"; continue; }
  in_tree $side 80 python3 $ROOT/docs/results/2026-12-07-h100-s51/hazard_diag.py $OUT/r/diag_$side.json $side > $OUT/r/diag_$side.txt 2>&1
  echo "diag $side: exit $? ${SECONDS}s"; grep "^$side" $OUT/r/diag_$side.txt || tail -3 $OUT/r/diag_$side.txt; pack
done
gpu_tests wy pdl 60 "dn_prep_given_A or dn_prep_writes"
mkdir -p $OUT/r/wy
for side in new pdl; do
  [ $((END - SECONDS)) -lt 40 ] && { echo "wy $side: skipped"; continue; }
  in_tree $side 60 python3 $ROOT/$B $OUT/r/wy $side 520 > $OUT/r/wy_$side.txt 2>&1
  echo "wy $side: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_$side.txt | cut -c1-200; pack
done
gpu_tests layers pdl 150 "every_layer"
true
