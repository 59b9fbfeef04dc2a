#!/usr/bin/env bash
# Session 47, call 2 (issue 21): the GPU tests of new (the tree of call 1's winner), pp4096 / pp32768 against base
# (1fc6e76, main) so the bar's "not slower" rows are measured, and the prefill sanitizers on new.
# Predicted: pp4096 and pp32768 equal (whole chunks: the rule's rows unchanged; dn_state_in's launch gone, -10 µs / -0.1%
# at most where it is in the tree).
# Setup: .ab_base as call 1; carry [".whl", ".qla", "COMMIT", ".ab_base"]. Run as END=585 bash docs/results/2026-12-07-h100-s47/call2.sh
set -u
source docs/results/device_call.sh --site
build_trees new base
gpu_tests rule new 230 "padding_rows or dn_prep_writes or refusals_name or (every_layer_of_the_prompt and not 4097) or each_delta_rule or graph_replay or untraced or 128_decode or continuing"
for side in new base; do bench_pp $side 4096 5 80 70; done
for side in new base; do bench_pp $side 32768 3 90 95; done
gpu_tests sanitizers new 150 "sanitizer"
true
