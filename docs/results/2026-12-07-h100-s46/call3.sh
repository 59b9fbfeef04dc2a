#!/usr/bin/env bash
# Session 46, call 3 (issue 21): (1) lt_prefill_ab.py on main: the prefill's plain GEMMs through the cuBLASLt algorithm
# that measures fastest for each shape (tuned in the process, among torch.mm and cuBLASLt's first 8 heuristic picks)
# against the prefill as it is, pp520 and pp4096 alternating. Predicted (call 1's shapes: dn_in 15.3 -> 14.5 µs x 18,
# attn_in 11.2 -> 10.8 x 6, gate_up unchanged): pp520 -15 to -20 µs (+0.6-0.8%); pp4096 unknown (not searched).
# (2) session 45's prepared next_call_alr.sh body: branch s45-alr-merge (attn_last_row's merge, 16-byte partial loads)
# against main by attn_last_row_bench.py; predicted 8.9 -> 7-8 µs at 520 keys, 15.4 -> 11-13 at 4,096.
# Setup: .ab_alr = git archive s45-alr-merge (docs removed); carry [".whl", ".qla", "COMMIT", ".ab_alr"].
# Run as END=585 bash docs/results/2026-12-07-h100-s46/call3.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s46
build_trees new alr
in_tree new 260 python3 $ROOT/$D/lt_prefill_ab.py $OUT/r 520,4096 > $OUT/r/lt_prefill_ab.txt 2>&1
echo "lt ab: exit $? ${SECONDS}s"; grep -E "^pp|tune" $OUT/r/lt_prefill_ab.txt | cut -c1-220; pack
gpu_tests alr alr 60 "attn_last_row or gemv_add_row or gate_up_swiglu"
n=0
for side in new alr new alr; do
  n=$((n + 1))
  [ $((END - SECONDS)) -lt 40 ] && { echo "alr bench $n $side: skipped"; continue; }
  in_tree $side 35 python3 "$ROOT/docs/results/2026-12-07-h100-s45/attn_last_row_bench.py" 520 4096 32768 \
      > "$OUT/r/alr_${n}_$side.txt" 2>&1
  echo "attn_last_row_bench $n $side: exit $? ${SECONDS}s"; grep "^T" "$OUT/r/alr_${n}_$side.txt"; pack
done
true
