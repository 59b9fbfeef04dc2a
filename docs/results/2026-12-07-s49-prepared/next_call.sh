#!/usr/bin/env bash
# Prepared in session 49, NOT RUN (issue 21): every start of a device machine this session failed or was refused (~1,560 s
# of the 1,800 s went to them), so session 48's prepared call (the WY blocks on the tensor cores) is still unmeasured.
# This is that call (../2026-12-07-h100-s48/next_call.sh) run from main's checkout on a `git archive` of the variant:
#   mma = branch s48-wy-mma with main merged (c2cbd52): dn_prep's WY blocks (FlashQLA's kkt_solve folded into dn_prep) with
#         their block products on the tensor cores (mma.sync m16n8k8 tf32) and 3 staging loads in flight a thread.
# wy_bench.py (one layer's dn_prep + rule at 520 rows, A on / off, graphs); `compare bench --pp 520` (the bar's measure,
# not run on main since s47) new mma mma new, new = main's checkout (its A off: the rule's own kkt_solve); its tests (the WY
# and dn_prep tests, every layer within the bf16 bounds, graph replay, untraced, the sanitizers); wy_ab.py (the whole
# prefill, A on / off in one process) if time is left.
# Predicted (s48, from its SASS): dn_prep with A 18.4 (s48's CUDA-core form) -> 13-15 µs at 520 rows; dn_prep + rule
# 36.2 -> 33-34 µs a layer; pp520 +1 to +3% against main (and against A off). Not worth merging if dn_prep with A stays above ~16 µs.
# Setup (from main's checkout): rm -rf .ab_mma; mkdir .ab_mma; git archive c2cbd52 | tar -x -C .ab_mma; rm -rf .ab_mma/docs;
#   echo c2cbd52 > .ab_mma/COMMIT; git rev-parse --short HEAD > COMMIT
# carry [".whl", ".qla", "COMMIT", ".ab_mma"]. Run as END=<s> bash docs/results/2026-12-07-s49-prepared/next_call.sh
# (END = the device time left less ~150 s: a machine's start takes ~90 s).
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s48
build_trees new mma
mkdir -p $OUT/r/mma
left() { [ $((END - SECONDS)) -ge "$1" ]; }  # (at least $1 s left before END)
if left 60; then
  in_tree mma 100 python3 $ROOT/$D/wy_bench.py $OUT/r/mma 520 > $OUT/r/wy_bench.txt 2>&1
  echo "wy bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_bench.txt | cut -c1-300; tail -2 $OUT/r/wy_bench.txt | cut -c1-300; pack
fi
for side in new mma mma new; do bench_pp $side 520 6 70 45; done
gpu_tests wy mma 60 "dn_prep_given_A or dn_prep_writes"
gpu_tests layers mma 150 "(every_layer_of_the_prompt and (65 or 520)) or each_delta_rule_prefills or graph_replay or untraced"
gpu_tests sanitizers mma 120 "sanitizer"
if left 60; then
  in_tree mma 50 python3 $ROOT/$D/wy_ab.py $OUT/r/mma 520 40 > $OUT/r/wy_ab.txt 2>&1
  echo "wy ab: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_ab.txt | cut -c1-400; pack
fi
true
