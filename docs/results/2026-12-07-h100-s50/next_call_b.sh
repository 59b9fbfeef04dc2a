#!/usr/bin/env bash
# Prepared in session 50, NOT RUN: after next_call.sh, on the same warm machine (its builds kept), the faster variant's
# (SIDE: rows or split) every-layer tests, graph replay, untraced, each delta rule, then its sanitizers (memcheck,
# synccheck at 70 / 300 rows); then `compare bench --pp 4096,32768` new SIDE (2 repeats) and ncu of its two dn_prep
# kernels at 520 rows (each alone: duration, SMs active, occupancy, warp stalls) if time is left.
# Predicted: all pass; pp4096 / pp32768 +0-2% (dn_prep is a smaller share of a long prompt); under ncu dn_wy_kernel
# ~4-5 µs, latency-bound (its substitution's barriers), dn_prep_kernel (rows) ~3-4 µs, one wave.
# Run as SIDE=rows END=<s> bash docs/results/2026-12-07-h100-s50/next_call_b.sh (carry as next_call.sh).
set -u
source docs/results/device_call.sh --site
END=${END:-560}
SIDE=${SIDE:-rows}
build_trees new $SIDE
gpu_tests layers $SIDE 150 "(every_layer_of_the_prompt and (65 or 520)) or each_delta_rule_prefills or graph_replay or untraced"
gpu_tests sanitizers $SIDE 130 "sanitizer"
for side in new $SIDE; do bench_pp $side 4096,32768 2 90 95; done
for k in dn_wy_kernel dn_prep_kernel; do ncu_kernel $SIDE $k; done
true
