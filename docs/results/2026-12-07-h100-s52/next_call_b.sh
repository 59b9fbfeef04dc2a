#!/usr/bin/env bash
# Prepared in session 52: after next_call.sh, on the same warm machine, where main (the host trims) measured pp520 >= 220k —
# issue 21's bar also asks every existing test on that commit and pp4096 / pp32768 not slower (287k / 239k).
# This call: the whole prefill GPU file (compute-sanitizer's prefill tests included; ~270 s in s52 call 2), then
# `compare bench --pp 4096,32768` on main. next_call_c.sh: the decode GPU file (~370 s in s52 call 3).
# carry [".whl", "COMMIT", ".fi_a"]. Run as END=<s> bash docs/results/2026-12-07-h100-s52/next_call_b.sh
# (Session 53: .qla and .ab_old are not carried again: they stay on the warm machine from next_call.sh, and a
# fresh machine is refused below; this call's room carries .fi_a, the first half of FlashInfer's site for
# docs/results/2026-12-08-s53-cpu/next_call_fi.sh.)
set -u; source docs/results/device_call.sh --site; END=${END:-560}
[ -d /tmp/site/flash_qla ] || { echo "FlashQLA's site is missing (a fresh machine?): carry .qla as well"; exit 3; }
build_trees new
gpu_tests prefill new 330 ""
bench_pp new 4096,32768 3 150 160
true
