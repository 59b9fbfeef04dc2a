#!/usr/bin/env bash
# Session 46, call 4 (issue 21): call 3's lt_prefill_ab.py again (call 3's run recursed: the tuner's own torch.mm went
# through the routed torch.mm; gemm_lt_search.py now keeps torch's), and branch s45-alr-merge's untraced logits at
# 520 rows (the one prepared test call 3 left out). Predictions as call 3's.
# Setup: as call 3 (.ab_alr = git archive s45-alr-merge); carry [".whl", ".qla", "COMMIT", ".ab_alr"].
# Run as END=480 bash docs/results/2026-12-07-h100-s46/call4.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s46
build_trees new alr
in_tree new 240 python3 $ROOT/$D/lt_prefill_ab.py $OUT/r 520,4096 > $OUT/r/lt_prefill_ab.txt 2>&1
echo "lt ab: exit $? ${SECONDS}s"; grep -E "^pp|tune" $OUT/r/lt_prefill_ab.txt | cut -c1-220; tail -3 $OUT/r/lt_prefill_ab.txt; pack
gpu_tests alr_untraced alr 110 "untraced and 520"
true
