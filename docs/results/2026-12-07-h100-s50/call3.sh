#!/usr/bin/env bash
# Session 50, call 3 (inline, warm machine, as call 2): mma's other prefill GPU tests (those calls 1-2 did not run), then
# `compare bench --pp 32768` mma new (2 repeats each; one alternation: what the time left allowed). Predicted: pass;
# pp32768 within ~1% (kkt_solve's launch is a smaller share of a long prompt; the WY blocks' work grows with it).
set -u; source docs/results/device_call.sh --site; END=540; build_trees new mma; mkdir -p $OUT/r
gpu_tests prefill mma 260 "prefill and not sanitizer and not (every_layer_of_the_prompt and (65 or 520))"
for side in mma new; do bench_pp $side 32768 2 90 60; done; true
