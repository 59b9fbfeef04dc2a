#!/usr/bin/env bash
# Session 48, call 2 (issue 21). Tree new = branch s48-kkt-prep: dn_prep's WY blocks (a 64-row chunk x a key head: its
# k rows, then S = K Kᵀ by mma.sync and (I + strict_lower(diag(beta) S))^-1 in fp32) write FlashQLA's chunk matrices A,
# so FlashQLA's kkt_solve launch (6.6 µs a layer at pp520 in s45's table) is gone; the k passes' token blocks go with it.
# The A/B is in one process (the session's device time, ~510 s left after failed starts, holds one short call and no
# second tree): wy_bench.py (one layer's dn_prep + rule both ways, graphs) and wy_ab.py (the whole prefill both ways:
# each plan's dn_a off = the rule's own kkt_solve, as before), then the GPU tests, the sanitizers if time is left.
# Predicted: dn_prep + rule at 520 rows -4 to -6 µs a layer (kkt_solve's 6.6 less dn_prep's +1 to +2: its WY blocks
# start first and run beside the q / v token blocks, 2/3 of before); pp520 -70 to -110 µs (+3 to +4.5%), pp4096 +1 to +2%.
# Carry [".whl", ".qla", "COMMIT"]. Run as END=<s> bash docs/results/2026-12-07-h100-s48/call2.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s48
build_trees new
in_tree new 100 python3 $ROOT/$D/wy_bench.py $OUT/r 520,4096 > $OUT/r/wy_bench.txt 2>&1
echo "wy bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_bench.txt | cut -c1-300; tail -2 $OUT/r/wy_bench.txt | cut -c1-300; pack
in_tree new 120 python3 $ROOT/$D/wy_ab.py $OUT/r 520,4096 40 > $OUT/r/wy_ab.txt 2>&1
echo "wy ab: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_ab.txt | cut -c1-400; tail -2 $OUT/r/wy_ab.txt | cut -c1-300; pack
gpu_tests wy new 60 "dn_prep_given_A or dn_prep_writes"
gpu_tests layers new 150 "(every_layer_of_the_prompt and (520 or 4097)) or each_delta_rule_prefills or graph_replay"
gpu_tests sanitizers new 150 "sanitizer"
true
