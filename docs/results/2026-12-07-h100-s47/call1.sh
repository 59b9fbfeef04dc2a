#!/usr/bin/env bash
# Session 47, call 1 (issue 21). Trees: base = 1fc6e76 (main); rr = branch s47-rule-rows: the delta rule given the plan's
# rows rounded up to its 64-row chunk, dn_prep writing the padding rows (FlashQLA's kernels load a part chunk element
# by element on one warp, TMA only for whole chunks); new = s47-state-in-prep on rr: dn_prep copies its layer's
# delta-rule state into the rule's h0, the dn_state_in launch (10.4 µs at pp520) gone.
# rule_rows_bench.py (one layer's rule at T against R rows, bits compared), attn_rows_bench.py (cuDNN's SDPA at 512 /
# 520 / 576 rows: is its part row tile a long pole?), then `compare bench --pp 520` base rr new new rr base.
# Predicted: the rule at 520 rows ~29 -> ~24-25 µs a layer (s28: 22.8 µs for 9 chunks where 4 took 10.5 and 16 took
# 30.1: ~4 µs over a whole chunk's ~1.6 for the part chunk; kkt_solve 6.5 -> ~6); pp520 rr -60 to -90 µs (+2.5 to
# +3.5%), new a further -5 to -9 µs (+0.2 to +0.4%).
# Setup: .ab_base = git archive 1fc6e76, .ab_rr = git archive s47-rule-rows (9aa60de; docs removed), COMMIT files;
# carry [".whl", ".qla", "COMMIT", ".ab_base", ".ab_rr"]. Run as END=585 bash docs/results/2026-12-07-h100-s47/call1.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s47
build_trees new rr base
in_tree new 150 python3 $ROOT/$D/rule_rows_bench.py $OUT/r 512,520,576,1000,1024 > $OUT/r/rule_rows_bench.txt 2>&1
echo "rule bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/rule_rows_bench.txt | cut -c1-260; tail -3 $OUT/r/rule_rows_bench.txt | cut -c1-300; pack
in_tree new 45 python3 $ROOT/$D/attn_rows_bench.py $OUT/r > $OUT/r/attn_rows_bench.txt 2>&1
echo "attn bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/attn_rows_bench.txt | cut -c1-260; pack
for side in base rr new new rr base; do bench_pp $side 520 8 75 50; done
true
