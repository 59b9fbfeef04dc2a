#!/usr/bin/env bash
# Session 47, call 1 (issue 21). Trees: base = 1fc6e76 (main); new = branch s47-state-in-prep: (s47-rule-rows) the delta
# rule given the plan's rows rounded up to its 64-row chunk, dn_prep writing the padding rows (FlashQLA's kernels load a
# part chunk element by element on one warp, TMA only for whole chunks), and dn_prep copying its layer's delta-rule state
# into the rule's h0 (the dn_state_in launch, 10.4 µs at pp520, gone).
# rule_rows_bench.py (one layer's rule at T against R rows, bits compared), `compare bench --pp 520` base new new base,
# new's GPU tests of the change, then (if time is left) attn_rows_bench.py (cuDNN's SDPA at 512 / 520 / 576 rows).
# Predicted: the rule at 520 rows ~29 -> ~24-25 µs a layer (s28: 22.8 µs for 9 chunks where 4 took 10.5 and 16 took
# 30.1: ~4 µs over a whole chunk's ~1.6 for the part chunk; kkt_solve 6.5 -> ~6); pp520 -65 to -100 µs (+2.7 to +4%).
# (Session 47 lost ~1,000 s of its device time to failed starts: one call, the two changes benched together.)
# Setup: .ab_base = git archive 1fc6e76 (docs removed), COMMIT files; carry [".whl", ".qla", "COMMIT", ".ab_base"].
# Run as END=560 bash docs/results/2026-12-07-h100-s47/call1.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s47
build_trees new base
in_tree new 120 python3 $ROOT/$D/rule_rows_bench.py $OUT/r 520,576,1000 > $OUT/r/rule_rows_bench.txt 2>&1
echo "rule bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/rule_rows_bench.txt | cut -c1-260; tail -3 $OUT/r/rule_rows_bench.txt | cut -c1-300; pack
for side in base new new base; do bench_pp $side 520 6 70 45; done
gpu_tests rule new 150 "padding_rows or dn_prep_writes or refusals_name or (every_layer_of_the_prompt and (65 or 520)) or graph_replay"
if [ $((END - SECONDS)) -gt 45 ]; then
  in_tree new 40 python3 $ROOT/$D/attn_rows_bench.py $OUT/r 512,520,576 > $OUT/r/attn_rows_bench.txt 2>&1
  echo "attn bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/attn_rows_bench.txt | cut -c1-260; pack
fi
true
