#!/usr/bin/env bash
# Prepared in session 42, NOT RUN (its device time went to failed starts; call 1's graph runs timed out compiling
# FlashQLA): the next session's first call (issue 21). Trees against main (new):
#   dp    s42-dn-prep-rows (3b2ba65): dn_prep's conv blocks as 8 tokens x 256 channels, inputs through shared memory
#         (its kernel test passed on an H100 in call 1, and the same test on main's kernel); predicted the graph at pp520
#         −40 to −70 µs (dn_prep 8.7 → ~5 µs a layer: L2 reads ~57 → ~18 MB a layer)
#   silu  s41-silu-one-pass (c2e36b5): silu_mul in one pass of 448 threads; predicted −0 to −8 µs
#   ovl   s41-state-in-side-stream (c51cc88): dn_state_in on a side stream; predicted −5 to −10 µs
#   att2  s41-attn-fresh-split (87fa8e2): only its kernel against SDPA + attn_gate, each in a CUDA graph, by length
#         (attn_fresh_graph_bench.py): call 3's single-launch timing was the host's; at 2,048-4,096 rows, where the GPU
#         time shows, ours lost (NOTES "Prefill" v20)
# First a warm-up prefill of 520 rows (FlashQLA's TileLang kernels for that shape compile once, ~60 s, into a cache
# every tree shares: call 1's timed runs each died compiling them under a 40 s limit).
# Setup (main's checkout): for b in dp:s42-dn-prep-rows silu:s41-silu-one-pass ovl:s41-state-in-side-stream \
#   att2:s41-attn-fresh-split; do n=${b%%:*}; rm -rf .ab_$n && mkdir .ab_$n && git archive ${b#*:} | tar -x -C .ab_$n &&
#   rm -rf .ab_$n/docs && git rev-parse --short ${b#*:} > .ab_$n/COMMIT; done; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_dp", ".ab_silu", ".ab_ovl", ".ab_att2"]
set -u
source docs/results/device_call.sh --site
build_trees new dp silu ovl att2
in_tree new 150 python3 -m compare prefill --pp 520 --reference-pp 0 --out "$OUT/r/warmup_new" > "$OUT/r/warmup_new.txt" 2>&1
echo "warm-up: exit $? ${SECONDS}s"; grep -E "^pp|\| pp" "$OUT/r/warmup_new.txt" | cut -c1-200; pack
gpu_tests dp dp 90 "(every_layer_of_the_prompt and (520 or 65)) or (graph_replay and 300) or untraced"
for side in new dp silu ovl; do graph_time $side 60 40; done
[ $((END - SECONDS)) -ge 60 ] && {
  in_tree att2 50 python3 "$ROOT/docs/results/2026-12-06-h100-s42/attn_fresh_graph_bench.py" "$OUT/r" 128,256,520,1024,2048 \
      > "$OUT/r/attn_fresh_graph_bench_att2.txt" 2>&1
  echo "attn_fresh graph bench att2: exit $? ${SECONDS}s"; tail -12 "$OUT/r/attn_fresh_graph_bench_att2.txt"; pack
}
for side in ovl silu dp new; do graph_time $side 60 40; done
gpu_tests silu silu 60 "(every_layer_of_the_prompt and 520) or silu_mul"
gpu_tests ovl ovl 60 "(every_layer_of_the_prompt and 520) or (graph_replay and 300)"
true
