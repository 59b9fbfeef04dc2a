#!/usr/bin/env bash
# Session 42 call 1 (issue 21): two prefill kernels against main (new = bdb9795's code, 76dccc0's), one short call (the
# pool was dry and failed starts took the budget). Trees:
#   att2  s41-attn-fresh-split (87fa8e2): prefill_attn_fresh, our own attention + output gate for a fresh prompt, 8 warps,
#         the key tiles split by parity (s41's next_call.sh; its 4-warp parent s41-attn-fresh is left for later)
#   dp    s42-dn-prep-rows (3b2ba65): dn_prep's conv blocks as 8 tokens x 256 channels, inputs through shared memory
# Predicted (the graph at pp520: prelude_profile.py's gpu_graph, median of 40 replays): att2 −75 to −85 µs, dp −40 to −70
# (dn_prep 8.7 → ~5 µs a layer: its L2 reads ~57 → ~18 MB a layer).
# Gates first: each variant's own kernel test (dp's new test also on main's kernel: the test itself); every layer at 520
# rows last, as time allows. END (default 585) is the second past which nothing new starts.
# Setup (main's checkout): for b in att2:s41-attn-fresh-split dp:s42-dn-prep-rows; do n=${b%%:*};
#   rm -rf .ab_$n && mkdir .ab_$n && git archive ${b#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs &&
#   git rev-parse --short ${b#*:} > .ab_$n/COMMIT; done; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_att2", ".ab_dp"]
# (Its tests() and graph() moved into device_call.sh as gpu_tests / graph_time after it ran: the same commands.)
set -u
source docs/results/device_call.sh --site
build_trees new att2 dp
gpu_tests att2_kernel att2 60 "attn_fresh"
gpu_tests dp_kernel dp 60 "dn_prep"
gpu_tests new_dp_test new 50 "dn_prep_convolves" "$ROOT/.ab_dp/tests/test_megakernel_prefill.py"  # (dp's test, main's kernel)
for side in new att2 dp dp att2 new; do graph_time $side 40 30; done
[ $((END - SECONDS)) -ge 50 ] && {
  in_tree att2 45 python3 "$ROOT/docs/results/2026-12-06-h100-s41/attn_fresh_bench.py" "$OUT/r" 520,1024,2048,4096,8192 \
      > "$OUT/r/attn_fresh_bench_att2.txt" 2>&1
  echo "attn_fresh bench att2: exit $? ${SECONDS}s"; tail -12 "$OUT/r/attn_fresh_bench_att2.txt"; pack
}
gpu_tests att2_layers att2 70 "every_layer_of_the_prompt and 520"
gpu_tests dp_layers dp 70 "every_layer_of_the_prompt and 520"
true
