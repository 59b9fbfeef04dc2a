#!/usr/bin/env bash
# Prepared in session 51, NOT RUN: after next_call.sh, on the same warm machine, where s51-wy-pdl gained >= 1% at
# pp520: its remaining prefill GPU tests (graph replay, each rule, untraced logits), the sanitizers (memcheck,
# synccheck), `compare bench --pp 4096,32768` new pdl (2 repeats: the bar's 287k / 239k must hold), ncu of its two
# dn_prep kernels. carry [".whl", ".qla", "COMMIT", ".ab_pdl"]; END=<s> bash docs/results/2026-12-07-h100-s51/next_call_b.sh
set -u; source docs/results/device_call.sh --site; END=${END:-560}
build_trees new pdl
gpu_tests rest pdl 150 "each_delta_rule_prefills or graph_replay or untraced or dn_prep"
gpu_tests sanitizers pdl 130 "sanitizer"
for side in new pdl; do bench_pp $side 4096,32768 2 90 95; done
for k in dn_wy_kernel dn_prep_kernel; do ncu_kernel pdl $k; done
true
