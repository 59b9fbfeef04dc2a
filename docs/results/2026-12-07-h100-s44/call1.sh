#!/usr/bin/env bash
# Session 44, call 1: session 43's prepared next_call.sh (issue 21), reordered (the timings first, the trees' tests last)
# and with the z-projection overlap probe (overlap_probe.py) after the timings.
# Trees against main (new):
#   ld  s43-launch-direct (0a6cf2a): the bind launch and the graph's launch made by one module function, the bind a
#       plain launch before the graph (not a node updated in the exec: gl's +27-42 µs of graph, v21), device ids'
#       range polled in pinned memory (no event); predicted the call −30 to −50 µs: gl's prelude (−40 to −60) without
#       its graph penalty (+3 to +8: the bind kernel now after the mark)
#   gs  s43-dn-gates-spread (f21e68a): dn_prep's gate blocks a (64-row chunk, 8 value heads), a warp a head; predicted
#       dn_prep 158 → ~110 µs over 18 layers if its 9 gate blocks (a warp two heads in turn) are its long pole, else 0
# Setup (main's checkout): for b in ld:s43-launch-direct gs:s43-dn-gates-spread; do n=${b%%:*}; rm -rf .ab_$n &&
#   mkdir .ab_$n && git archive ${b#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs && git rev-parse --short ${b#*:} >
#   .ab_$n/COMMIT; done; git rev-parse --short HEAD > COMMIT; carry [".whl", ".qla", "COMMIT", ".ab_ld", ".ab_gs"]
# Run as END=570 bash docs/results/2026-12-07-h100-s44/call1.sh
set -u
source docs/results/device_call.sh --site
build_trees new ld gs
in_tree new 150 python3 -m compare prefill --pp 520 --reference-pp 0 --out "$OUT/r/warmup_new" > "$OUT/r/warmup_new.txt" 2>&1
echo "warm-up: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/warmup_new.txt" | cut -c1-220; pack
for side in new ld new ld; do call_span $side 45 30; done
for side in gs new; do
  [ $((END - SECONDS)) -ge 45 ] || { echo "prefill $side: skipped"; continue; }
  in_tree $side 40 python3 -m compare prefill --pp 520 --reference-pp 0 --out "$OUT/r/prefill_$side" > "$OUT/r/prefill_$side.txt" 2>&1
  echo "prefill $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_$side.txt" | cut -c1-200; pack
done
if [ $((END - SECONDS)) -ge 40 ]; then
  mkdir -p "$OUT/r/overlap" && in_tree new 35 python3 docs/results/2026-12-07-h100-s44/overlap_probe.py "$OUT/r/overlap" > "$OUT/r/overlap.txt" 2>&1
  echo "overlap: exit $? ${SECONDS}s"; tail -7 "$OUT/r/overlap.txt"; pack
else echo "overlap: skipped"; fi
# the trees' tests last (only a winner needs them; gpu_tests skips what the time left cannot hold)
gpu_tests ld ld 100 "bind or vocabulary or queued or graph_replay or conversations or (untraced and 520)"
gpu_tests gs gs 70 "dn_prep or (every_layer_of_the_prompt and (520 or 65))"
true
