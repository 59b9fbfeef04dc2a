#!/usr/bin/env bash
# Session 18, call 3: variants of megakernel/delta_rule_chunked.py's state kernel (call 2 found the P V′ dot
# wrong and reading shared memory out of bounds at BV = 16, N = 16) for correctness and each kernel's time;
# fla's kernels under the profiler at 520 and 4096 tokens.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
R=docs/results/2026-11-26-h100-s18
for T in 520 4096; do timeout 120 python3 $R/fla_profile.py $T >> "$OUT/r/fla_profile.txt" 2>&1; done
grep FLA "$OUT/r/fla_profile.txt"
for T in 70 520 4096; do for V in vshared ptf32 bv32 bv64 bv32+vshared bv64+vshared vshared+w8 bv32+w8; do
  timeout 90 python3 $R/debug_delta_rule.py $T $V >> "$OUT/r/variants.txt" 2>&1; echo "T=$T $V exit $?" >> "$OUT/r/variants.txt"
done; done
grep -E "^o error|^TIME|exit [^0]" "$OUT/r/variants.txt" | cut -c1-160
