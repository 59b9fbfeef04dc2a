#!/usr/bin/env bash
# Prepared in session 41, NOT RUN: the next session's first call (issue 21), our own attention for a fresh prompt.
#   new  main (76dccc0's code)
#   att  branch s41-attn-fresh (39aa7fe): prefill_attn_fresh (csrc/prefill_attention.cu), a fresh prompt's causal
#        attention over its own keys with the output gate in one launch, in place of SDPA (cuDNN) + attn_gate;
#        compile-checked here (254 registers, no spill), never run
# Runs: its GPU tests on att first (the kernel against SDPA's formula at 1-1,030 rows and the last row alone; every
# layer within the bf16 bounds at 1-4,097 rows; graph replay; opcheck over a fresh plan; prefill then decode); then
# `attn_fresh_bench.py` (the kernel against SDPA + attn_gate alone, at 64-8,192 rows, all rows and the last alone: where
# it wins, where not); `compare prefill --pp 520,4096` new att att new (the kernel sums by category: SDPA + attn_gate against attn_fresh);
# memcheck of the prefill at 300 tokens on att if time is left.
# Predicted: correct at once or a fragment-layout bug shown by the first test (then stop and read it); SDPA ~17 µs
# a layer at 520 rows + attn_gate ~2.5 → attn_fresh 8-10 µs (72 blocks of 4 warps, the last row tile's 9 key tiles
# at ~1 µs each): pp520 kernels −55 to −70 µs, +2.3-3%; pp4096 (SDPA there ~? µs a layer, 512 blocks) equal to +1%.
# At 4,096 rows its ~69 GFLOP a layer at mma.sync's rate (~100-130 µs) may lose to cuDNN's wgmma kernel: then fresh
# plans past the measured crossover keep SDPA (attn_fresh_bench.py gives it).
# Setup (from main's checkout): rm -rf .ab_att && mkdir .ab_att && git archive s41-attn-fresh | tar -x -C .ab_att &&
#   rm -rf .ab_att/docs && git rev-parse --short s41-attn-fresh > .ab_att/COMMIT; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_att"]
set -u
source docs/results/device_call.sh --site
build_trees new att
in_tree att 200 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_megakernel_prefill.py tests/test_megakernel.py \
    -k "attn_fresh or every_layer_of_the_prompt or graph_replay or opcheck or prefill_then or untraced" \
    > "$OUT/r/tests_att.txt" 2>&1
echo "tests att: exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_att.txt"; pack
in_tree att 90 python3 "$ROOT/docs/results/2026-12-06-h100-s41/attn_fresh_bench.py" "$OUT/r" > "$OUT/r/attn_fresh_bench.txt" 2>&1
echo "attn_fresh bench: exit $? ${SECONDS}s"; cat "$OUT/r/attn_fresh_bench.txt" | tail -16; pack
i=0
for side in new att att new; do
  i=$((i + 1))
  [ $((585 - SECONDS)) -lt 80 ] && { echo "prefill $i $side: skipped"; continue; }
  in_tree $side 100 python3 -m compare prefill --pp 520,4096 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp|\| pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-200; pack
done
[ $((585 - SECONDS)) -gt 60 ] && {
  in_tree att $((580 - SECONDS)) python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel_prefill.py \
      -k "sanitizer and memcheck and 300" > "$OUT/r/sanitizer_memcheck_300.txt" 2>&1
  echo "memcheck 300: exit $? ${SECONDS}s"; tail -2 "$OUT/r/sanitizer_memcheck_300.txt"; pack; }
true
