#!/usr/bin/env bash
# Session 41 call 2 (issue 21): new = main with two changes — bind without its sync (9668454) and the DeltaNet input
# norms folded into the in-projections (its child) — against prev = 76dccc0 (before both).
#   Predicted: bind: the GPU's idle before the replay (prelude_profile.py, GPU ids) −30 to −40 µs (s29: 115 with GPU
#   ids, 81 with CPU ids; CPU ids unchanged); the fold: the graph (gpu_graph) −25 to −35 µs at pp520 (17 norms of
#   ~2.9 µs with their gaps, less ~1 µs of dn_prep each); pp520 +2.2-3% in all; pp4096 +0.5-1%. Tests: bind /
#   refusal / back-to-back / graph replay / the DeltaNet kernels given x / every layer within the bf16 bounds
#   (520, 4097 rows) / opcheck of the folded calls all pass.
# Setup: rm -rf .ab_prev && mkdir .ab_prev && git archive 76dccc0 | tar -x -C .ab_prev && rm -rf .ab_prev/docs &&
#   echo 76dccc0 > .ab_prev/COMMIT; git rev-parse --short HEAD > COMMIT; carry .whl .qla COMMIT .ab_prev
set -u
source docs/results/device_call.sh --site
build_trees new prev
in_tree new 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_megakernel.py \
    -k "bind or refus or back_to_back or graph_replay or deltanet_kernels or every_layer_of_the_prompt or opcheck" \
    > "$OUT/r/tests_new.txt" 2>&1
echo "tests new: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_new.txt"; pack
i=0
for side in prev new new prev; do
  i=$((i + 1))
  mkdir -p "$OUT/r/prelude_${i}_$side"
  in_tree $side 70 python3 "$ROOT/docs/results/2026-11-27-h100-s29/prelude_profile.py" "$OUT/r/prelude_${i}_$side" 520 > "$OUT/r/prelude_${i}_$side.txt" 2>&1
  echo "prelude $i $side: exit $? ${SECONDS}s"; grep -E "gpu_prelude|gpu_graph|host_call|pp520" "$OUT/r/prelude_${i}_$side.txt"; pack
done
i=0
for side in prev new new prev; do
  i=$((i + 1))
  [ $((585 - SECONDS)) -lt 60 ] && { echo "bench $i $side: skipped"; continue; }
  in_tree $side 70 python3 -m compare bench --tiers megakernel --repeats 10 --no-progress --pp 520,4096 \
      --tg 0 --depth 0 --json "$OUT/r/bench_pp_${i}_$side.json" > "$OUT/r/bench_pp_${i}_$side.txt" 2>&1
  echo "bench $i $side: exit $? ${SECONDS}s"; grep -E '\| pp' "$OUT/r/bench_pp_${i}_$side.txt" | cut -c1-100; pack
done
true
