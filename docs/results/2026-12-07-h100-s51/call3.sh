#!/usr/bin/env bash
# Session 51, call 3 (run as an inline command; recorded here): the hazard tests of tests/test_megakernel.py on main
# (4c10319) and on the commit before the s48-wy-mma merge (0dcdc9f, .ab_pre: git archive 02af82f^1), twice each, after
# call 2's decode tests failed test_logits_within_bf16_bounds_on_hazard_weights[3]. carry .whl .qla COMMIT .ab_pre
set -u; source docs/results/device_call.sh --site; END=500; build_trees new pre
for s in new pre new pre; do gpu_tests haz_$s $s 60 "hazard" tests/test_megakernel.py; grep -h "logits:" $OUT/r/tests_haz_$s.txt | head -3; done; true
