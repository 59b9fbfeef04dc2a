#!/usr/bin/env bash
# Session 43, call 1 (issue 21): session 42's prepared next_call.sh (not run: no device came) with the new graph launch
# added, and every tree timed by one tree-agnostic measure (call_span.py: a prefill call's whole time at 520 rows,
# the host's prelude included; s29's prelude_profile.py wraps graph.replay, which gl no longer calls). Trees (.ab_*):
#   dp    s42-dn-prep-rows (3b2ba65): dn_prep's conv blocks as 8 tokens x 256 channels; predicted −40 to −70 µs
#   silu  s41-silu-one-pass (c2e36b5): silu_mul in one pass of 448 threads; predicted −0 to −8 µs
#   ovl   s41-state-in-side-stream (c51cc88): dn_state_in on a side stream; predicted −5 to −10 µs
#   gl    s43-graph-launch (42f7531): the bind launch as the graph's first node, its arguments set before each launch
#         (no bind op, sync or torch replay before the graph); predicted the call −25 to −40 µs (the GPU's idle
#         before the graph: s41's H200 70-78 µs, of which bind's op ~28-32 and torch's replay ~13)
#   all   s43-all: main with the four merged (their tests run here, on the union)
# First a warm-up prefill of 520 rows in new (FlashQLA's 520-row TileLang kernels compile once, ~60 s, into a cache
# every tree shares). Setup (main's checkout): for b in dp:s42-dn-prep-rows silu:s41-silu-one-pass
#   ovl:s41-state-in-side-stream gl:s43-graph-launch all:s43-all; do n=${b%%:*}; rm -rf .ab_$n && mkdir .ab_$n && git archive
#   ${b#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs && git rev-parse --short ${b#*:} > .ab_$n/COMMIT; done;
#   git rev-parse --short HEAD > COMMIT; carry [".whl", ".qla", "COMMIT", ".ab_dp", ".ab_silu", ".ab_ovl", ".ab_gl", ".ab_all"]
set -u
source docs/results/device_call.sh --site
SIDES=${SIDES:-new dp silu ovl gl all}  # (a shorter call: fewer trees)
build_trees $SIDES
in_tree new 150 python3 -m compare prefill --pp 520 --reference-pp 0 --out "$OUT/r/warmup_new" > "$OUT/r/warmup_new.txt" 2>&1
echo "warm-up: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/warmup_new.txt" | cut -c1-220; pack
gpu_tests all all 130 "bind or vocabulary or queued or graph_replay or conversations or folded_again or (untraced and 520) or (every_layer_of_the_prompt and (520 or 65)) or silu_mul or dn_prep"
for side in $SIDES; do call_span $side 45 30; done
for side in $(echo $SIDES | tr ' ' '\n' | tac); do call_span $side 45 30; done
true
