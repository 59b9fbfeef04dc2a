#!/usr/bin/env bash
# Session 48, call 1 (issue 21): what session 47's call left unrun, on main (5ef706f), trimmed to the checks:
#  - the dn_prep test whose own bug call 1 found (mended in 5f5185e) and 959eddb's case of padding into the next chunk;
#  - every layer at 1 / 63 / 4,097 rows, untraced, prefill then 128 decode steps, continuing prompts (not run since the
#    rule's padding rows and dn_prep's state copy);
#  - pp4096 and pp32768 on main (the bar's "not slower" rows; s46 measured 383.9k / 306.9k before s47's changes, which
#    change nothing at whole chunks but dn_state_in's launch: predicted equal to +0.1%).
# Run as END=540 bash docs/results/2026-12-07-h100-s48/call1.sh; carry [".whl", ".qla", "COMMIT"].
set -u
source docs/results/device_call.sh --site
build_trees new
gpu_tests dnprep new 90 "dn_prep_writes"
gpu_tests layers new 220 "(every_layer_of_the_prompt and (1 or 63 or 4097)) or untraced or 128_decode or continuing"
bench_pp new 4096,32768 3 150 150
true
