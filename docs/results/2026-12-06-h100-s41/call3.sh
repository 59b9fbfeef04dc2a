#!/usr/bin/env bash
# Session 41 call 3 (issue 21): two small variants against main (new = b029f43), by the graph's own time
# (prelude_profile.py's gpu_graph: median of 40 replays, ±5 µs between runs in call 2):
#   silu  s41-silu-one-pass: silu_mul in one pass of 448 threads a block instead of two of 256 (24 launches at pp520)
#         predicted: the graph −0 to −8 µs
#   ovl   s41-state-in-side-stream: dn_state_in (18.9 MB copied, ~10 µs) on a side stream beside the embedding's norm,
#         the first in-projection and dn_prep; predicted: the graph −5 to −10 µs
# Tests per variant first: every layer within the bf16 bounds at 520 rows, graph replay equal to eager, silu_mul given x.
# Setup: for b in silu:s41-silu-one-pass ovl:s41-state-in-side-stream: rm -rf .ab_${b%%:*} && mkdir .ab_${b%%:*} &&
#   git archive ${b#*:} | tar -x -C .ab_${b%%:*} && rm -rf .ab_${b%%:*}/docs && git rev-parse --short ${b#*:} > .ab_${b%%:*}/COMMIT
#   git rev-parse --short HEAD > COMMIT; carry .whl .qla COMMIT .ab_silu .ab_ovl
set -u
source docs/results/device_call.sh --site
build_trees new silu ovl
for side in silu ovl; do
  [ $((270 - SECONDS)) -lt 150 ] && { echo "tests $side: skipped"; continue; }
  in_tree $side 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel_prefill.py \
      -k "(every_layer_of_the_prompt and 520) or (graph_replay and 300)" > "$OUT/r/tests_$side.txt" 2>&1
  echo "tests $side: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_$side.txt"; pack
done
i=0
for side in new silu ovl ovl silu new; do
  i=$((i + 1))
  [ $((270 - SECONDS)) -lt 25 ] && { echo "prelude $i $side: skipped"; continue; }
  mkdir -p "$OUT/r/prelude_${i}_$side"
  in_tree $side 45 python3 "$ROOT/docs/results/2026-11-27-h100-s29/prelude_profile.py" "$OUT/r/prelude_${i}_$side" 520 > "$OUT/r/prelude_${i}_$side.txt" 2>&1
  echo "prelude $i $side: exit $? ${SECONDS}s"; grep -E "gpu_graph" "$OUT/r/prelude_${i}_$side.txt"; pack
done
true
