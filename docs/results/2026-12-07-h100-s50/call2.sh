#!/usr/bin/env bash
# Session 50, call 2 (run inline on the warm machine right after call 1; setup as call 1's: ../2026-12-07-s49-prepared/
# next_call.sh's header, carry [".whl", ".qla", "COMMIT", ".ab_mma"]): mma's sanitizer tests (call 1's END guard skipped
# them), then `compare bench --pp 520,4096` mma new mma new (4 repeats). Predicted: sanitizers clean; pp520 +1 to +3% as
# call 1; pp4096 within the runs' spread (dn_prep with A does more work a chunk, kkt_solve's launch matters less there).
set -u; source docs/results/device_call.sh --site; END=560; build_trees new mma; mkdir -p $OUT/r
gpu_tests sanitizers mma 150 "sanitizer"
for side in mma new mma new; do bench_pp $side 520,4096 4 80 60; done; true
