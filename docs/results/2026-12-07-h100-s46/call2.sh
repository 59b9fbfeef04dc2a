#!/usr/bin/env bash
# Session 46, call 2 (issue 21): prefill_attn_fresh with a row tile's keys split over blocks (branch s46-attn-fresh:
# session 41's two-group kernel, never timed inside a graph at short lengths, plus chunks of S key tiles a block whose
# partials the last block merges), against SDPA (cuDNN) + attn_gate, then inside the prefill.
# Predicted: at 520 rows SDPA + gate ~21 µs a layer (s45's table: 18.6 + 2.6); ours at S = 4 (120 blocks, no block
# past 4 key tiles: 2 tile steps a group) ~7-10 µs, at S = 1000 (s41's: the last row tile's blocks walk 9 tiles,
# 5 steps) ~14-16; pp520 -50 to -70 µs over the 5 attention layers that run every row (+2 to +3%).
# Setup: .ab_base = git archive main (docs removed), COMMIT files; carry [".whl", ".qla", "COMMIT", ".ab_base"].
# Run as END=585 bash docs/results/2026-12-07-h100-s46/call2.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s46
build_trees new base
gpu_tests fresh new 120 "attn_fresh"
in_tree new 150 python3 $ROOT/$D/attn_fresh_bench.py $OUT/r 128,256,520,1024,2048 1000,2,3,4,6 > $OUT/r/attn_fresh_bench.txt 2>&1
echo "attn bench: exit $? ${SECONDS}s"; cat $OUT/r/attn_fresh_bench.txt | grep "^|" | cut -c1-200; pack
for side in new base base new; do bench_pp $side 520 10 80 60; done
gpu_tests layers new 200 "every_layer_of_the_prompt or untraced or graph_replay or (sanitizer and memcheck)"
true
