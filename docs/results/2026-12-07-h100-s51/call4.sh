#!/usr/bin/env bash
# Session 51, call 4: where test_logits_within_bf16_bounds_on_hazard_weights[3] (failed on main 4c10319 and on 0dcdc9f,
# call 1) broke: hazard_diag.py in main and in the trees of s21 (5ea3abf, its last recorded pass), s32, s36, s40, s44.
# Setup: for s in s21:5ea3abf s32:a4ec3fd s36:17d34a7 s40:9a2385a s44:6107375; do n=${s%%:*}; b=${s#*:}; mkdir .ab_$n;
#   git archive $b | tar -x -C .ab_$n; rm -rf .ab_$n/docs; echo $b > .ab_$n/COMMIT; done; carry .whl .qla COMMIT .ab_*
set -u; source docs/results/device_call.sh --site; END=${END:-560}
build_trees new s21 s32 s36 s40 s44
for side in new s21 s44 s32 s40 s36; do
  [ $((END - SECONDS)) -lt 50 ] && { echo "diag $side: skipped"; continue; }
  in_tree $side 80 python3 $ROOT/docs/results/2026-12-07-h100-s51/hazard_diag.py $OUT/r/diag_$side.json $side > $OUT/r/diag_$side.txt 2>&1
  echo "diag $side: exit $? ${SECONDS}s"; grep "^$side" $OUT/r/diag_$side.txt || tail -3 $OUT/r/diag_$side.txt; pack
done
true
