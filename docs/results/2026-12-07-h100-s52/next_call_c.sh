#!/usr/bin/env bash
# Prepared in session 52: the decode GPU file (tests/test_megakernel.py, compute-sanitizer's decode tests included; 44
# passed in ~370 s on be69dc5, s52 call 3) on main with the host trims (the arena moved the decode's weights).
# carry [".whl", ".qla", "COMMIT", ".ab_old"]. Run as END=<s> bash docs/results/2026-12-07-h100-s52/next_call_c.sh
set -u; source docs/results/device_call.sh --site; END=${END:-570}
build_trees new
gpu_tests decode new 540 "" tests/test_megakernel.py
true
