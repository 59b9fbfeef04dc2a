#!/usr/bin/env bash
# Session 46, call 6 (issue 21): the tuned GEMMs after the review's mends (the choices per process, shapes under
# TUNE_MIN_ROWS untimed, two timing passes, the pointers' alignments asked for, overlap refusals, torch's call where
# tuning fails): their GPU tests and the new one of the prefill with every GEMM through cuBLASLt replaying its eager
# bits. Setup: carry [".whl", ".qla", "COMMIT"]. Run as END=190 bash docs/results/2026-12-07-h100-s46/call6.sh
set -u
source docs/results/device_call.sh --site
build_trees new
gpu_tests gemm new 120 "prefill_gemm or cublaslt"
true
