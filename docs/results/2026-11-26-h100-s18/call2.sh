#!/usr/bin/env bash
# Session 18, call 2: debug_delta_rule.py over lengths and variants, one process each; then compute-sanitizer
# memcheck of the base variant at T=1 and T=70.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
D=docs/results/2026-11-26-h100-s18/debug_delta_rule.py
for T in 1 70 520; do for V in base direct nopipe o_q o_p; do
  timeout 90 python3 $D $T $V >> "$OUT/r/debug.txt" 2>&1; echo "T=$T $V exit $?" >> "$OUT/r/debug.txt"
done; done
grep -vE "^\s|Traceback|File|^$" "$OUT/r/debug.txt" | cut -c1-220
for T in 1 70; do
  timeout 200 compute-sanitizer --tool memcheck --print-limit 5 python3 $D $T base > "$OUT/r/memcheck_$T.txt" 2>&1
  echo "memcheck T=$T exit $?"; grep -E "Invalid|at .* in|by thread|Address|ERROR SUMMARY" "$OUT/r/memcheck_$T.txt" | head -12 | cut -c1-250
done
