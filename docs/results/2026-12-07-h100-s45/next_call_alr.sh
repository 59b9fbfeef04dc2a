#!/usr/bin/env bash
# Prepared in session 45, NOT RUN (issue 21): branch s45-alr-merge (attn_last_row's merge reworked after a review: the
# merging thread takes 4 dims of one head, 16-byte partial loads with the partials' o 16-byte aligned, 8 splits' loads
# in flight, the gates loaded at the kernel's start, one barrier fewer) against main (new): its kernel tests, then
# attn_last_row_bench.py in both trees at 520 / 4,096 / 32,768 keys, alternating (new alr new alr), then alr's untraced
# logits at 520 rows. Predicted: 520 keys 8.9 → 7-8 µs, 4,096 15.4 → 11-13, 32,768 45.5 → 40-44 (the last block's
# merge: 16 rounds of 4-byte loads at 64 splits → 8 rounds of 16-byte loads; one round trip for the gates less).
# Setup: rm -rf .ab_alr && mkdir .ab_alr && git archive s45-alr-merge | tar -x -C .ab_alr && rm -rf .ab_alr/docs &&
#   git rev-parse --short s45-alr-merge > .ab_alr/COMMIT; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_alr"]; run as END=400 bash docs/results/2026-12-07-h100-s45/next_call_alr.sh
set -u
source docs/results/device_call.sh --site
build_trees new alr
gpu_tests alr alr 60 "attn_last_row or gemv_add_row or gate_up_swiglu"
n=0
for side in new alr new alr; do
  n=$((n + 1))
  [ $((END - SECONDS)) -lt 40 ] && { echo "bench $n $side: skipped"; continue; }
  in_tree $side 35 python3 "$ROOT/docs/results/2026-12-07-h100-s45/attn_last_row_bench.py" 520 4096 32768 \
      > "$OUT/r/alr_${n}_$side.txt" 2>&1
  echo "attn_last_row_bench $n $side: exit $? ${SECONDS}s"; grep "^T" "$OUT/r/alr_${n}_$side.txt"; pack
done
gpu_tests alr_untraced alr 110 "untraced and 520"
true
