#!/usr/bin/env bash
# Session 47, call 2 (issue 21): what call 1 left open, in the device time left (~370 s): the dn_prep test with its own
# bug mended (call 1's 6 failures: the test compared the T-row call's g with beta; every assertion before it passed), and
# `compare prefill --pp 520` (one profiled replay: the kernels' sums) on base (1fc6e76) and new, alternating, to see
# on the GPU's own clock what call 1's noisy bench rows (+2.0% / +0.4%) hide.
# Predicted: the delta rule's kernels -55 to -65 µs (18 x 3.5 µs: the rule bench), dn_state_in's 10.4 gone, dn_prep
# +3 to +10 (its state copy): kernels -55 to -70 µs.
# Setup: as call 1. Run as END=250 bash docs/results/2026-12-07-h100-s47/call2.sh
set -u
source docs/results/device_call.sh --site
build_trees new base
gpu_tests dnprep new 60 "dn_prep_writes"
for side in new base; do
  if [ $((END - SECONDS)) -lt 55 ]; then echo "prefill $side: skipped"; continue; fi
  in_tree $side $((END - SECONDS - 5)) python3 -m compare prefill --pp 520 --reference-pp 0 --out $OUT/r/prefill_$side > $OUT/r/prefill_$side.txt 2>&1
  echo "prefill $side: exit $? ${SECONDS}s"; grep -E "^pp520|^\| pp520" $OUT/r/prefill_$side.txt | cut -c1-200; pack
done
true
