#!/usr/bin/env bash
# Session 48, call 2 (issue 21). Trees: base = 5ef706f (main before); new = branch s48-kkt-prep: dn_prep's WY blocks
# (a 64-row chunk x a key head: its k rows, then S = K Kᵀ by mma.sync and (I + strict_lower(diag(beta) S))^-1 in fp32)
# write FlashQLA's chunk matrices A, so FlashQLA's kkt_solve launch (6.6 µs a layer at pp520 in s45's table) is gone;
# the k passes' token blocks go with it (the WY blocks make k).
# Predicted: dn_prep + rule at 520 rows -4 to -6 µs a layer (kkt_solve's 6.6 less dn_prep's +1 to +2: its WY blocks
# start first and run beside the q / v token blocks, which are 2/3 of before); pp520 -70 to -110 µs (+3 to +4.5%),
# pp4096 +1 to +2% (kkt_solve 64 chunks x 16 heads there).
# Setup: .ab_base = git archive 5ef706f (docs removed), COMMIT files; carry [".whl", ".qla", "COMMIT", ".ab_base"].
# (pp4096 by wy_bench's 4,096-row layer only: the session's device time, ~890 s left after failed starts, holds one call.)
# Run as END=585 bash docs/results/2026-12-07-h100-s48/call2.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s48
build_trees new base
in_tree new 150 python3 $ROOT/$D/wy_bench.py $OUT/r 520,4096 > $OUT/r/wy_bench.txt 2>&1
echo "wy bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_bench.txt | cut -c1-300; tail -3 $OUT/r/wy_bench.txt | cut -c1-300; pack
gpu_tests wy new 90 "dn_prep_given_A or dn_prep_writes"
for side in new base new base; do bench_pp $side 520 5 60 45; done
gpu_tests layers new 180 "(every_layer_of_the_prompt and (65 or 520 or 4097)) or each_delta_rule_prefills or graph_replay or untraced"
gpu_tests sanitizers new 150 "sanitizer"
true
