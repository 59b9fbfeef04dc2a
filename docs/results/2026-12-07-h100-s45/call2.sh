#!/usr/bin/env bash
# Session 45, call 2 (issue 21): tl2 = branch s45-tail2 (s45-tail's M = 1 kernels for a fresh prompt's last row on
# main, without s45-trims, which call 1 measured no faster: dn_prep +10 µs) against main (new), which now holds the
# mended opcheck test. First tl2's tests (the opcheck of every op with a fresh folded plan, the new kernels' tests, the
# untraced logits, graph replay over poison, every layer at 520), then `compare bench` pp520 and pp4096 alternating
# (new tl2 tl2 new, 10 repeats), then pp32768 once each, then (time left) s27's kernel_table.py on tl2 (every kernel
# of a pp520 prefill: what each new kernel takes). Predicted (call 1's breakdown: kernels -15 to -18 µs): pp520 +0.6 to +0.8%,
# pp4096 / pp32768 +0.1 to +0.2% (the same ~15 µs on a longer prefill).
# Setup: rm -rf .ab_tl2 && mkdir .ab_tl2 && git archive s45-tail2 | tar -x -C .ab_tl2 && rm -rf .ab_tl2/docs &&
#   git rev-parse --short s45-tail2 > .ab_tl2/COMMIT; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_tl2"]; run as END=585 bash docs/results/2026-12-07-h100-s45/call2.sh
set -u
source docs/results/device_call.sh --site
build_trees new tl2
gpu_tests tl2_opcheck tl2 60 "opcheck_every_op" tests/test_megakernel.py
gpu_tests tl2 tl2 110 "attn_last_row or gemv_add_row or gate_up_swiglu or untraced or (graph_replay and 400) or (every_layer_of_the_prompt and 520)"
i=0
for side in new tl2 tl2 new; do
  i=$((i + 1))
  [ $((END - SECONDS)) -lt 70 ] && { echo "bench $i $side: skipped"; continue; }
  in_tree $side 95 python3 -m compare bench --tiers megakernel --repeats 10 --no-progress --pp 520,4096 \
      --tg 0 --depth 0 --json "$OUT/r/bench_pp_${i}_$side.json" > "$OUT/r/bench_pp_${i}_$side.txt" 2>&1
  echo "bench $i $side: exit $? ${SECONDS}s"; grep -E '\| pp' "$OUT/r/bench_pp_${i}_$side.txt" | cut -c1-100; pack
done
for side in new tl2; do
  i=$((i + 1))
  [ $((END - SECONDS)) -lt 80 ] && { echo "bench $i $side pp32768: skipped"; continue; }
  in_tree $side 75 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 32768 \
      --tg 0 --depth 0 --json "$OUT/r/bench_pp_${i}_$side.json" > "$OUT/r/bench_pp_${i}_$side.txt" 2>&1
  echo "bench $i $side: exit $? ${SECONDS}s"; grep -E '\| pp' "$OUT/r/bench_pp_${i}_$side.txt" | cut -c1-100; pack
done
if [ $((END - SECONDS)) -ge 70 ]; then
  in_tree tl2 60 python3 "$ROOT/docs/results/2026-11-27-h100-s27/kernel_table.py" "$OUT/r/kernels_tl2.json" 520 > "$OUT/r/kernels_tl2.txt" 2>&1
  echo "kernel table: exit $? ${SECONDS}s"; grep -E "attn_last|gemv|gate_up_swiglu|lm_head|sdpa|nvjet_sm90_tst_64x8" "$OUT/r/kernels_tl2.txt" | cut -c1-120; pack
else echo "kernel table: skipped"; fi
true
