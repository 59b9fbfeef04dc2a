#!/usr/bin/env bash
# Prepared in session 52: the decode GPU file (tests/test_megakernel.py, compute-sanitizer's decode tests included; 44
# passed in ~370 s on be69dc5, s52 call 3) on main with the host trims (the arena moved the decode's weights).
# carry [".whl", "COMMIT"]. Run as END=<s> bash docs/results/2026-12-07-h100-s52/next_call_c.sh
# (Session 53: .qla and .ab_old are not carried again: they stay on the warm machine from next_call.sh, and a
# fresh machine is refused below; this call's room carries nothing else: .fi_b comes with next_call_fi.sh.)
set -u; source docs/results/device_call.sh --site; END=${END:-570}
[ -d /tmp/site/flash_qla ] || { echo "FlashQLA's site is missing (a fresh machine?): carry .qla as well"; exit 3; }
build_trees new
gpu_tests decode new 540 "" tests/test_megakernel.py
true
