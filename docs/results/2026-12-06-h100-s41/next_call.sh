#!/usr/bin/env bash
# Prepared in session 41, NOT RUN: the next session's first call (issue 21), our own attention for a fresh prompt.
#   new   main (76dccc0's code)
#   att   branch s41-attn-fresh (39aa7fe): prefill_attn_fresh (csrc/prefill_attention.cu), a fresh prompt's causal
#         attention over its own keys with the output gate in one launch, in place of SDPA (cuDNN) + attn_gate:
#         block = 64 query rows x one q head, 4 warps; compile-checked (254 registers, no spill), CPU-emulated
#         (attn_fresh_emulation.py), never run on a GPU
#   att2  branch s41-attn-fresh-split (on att): 8 warps, two groups taking the key tiles of either parity, merged at
#         the end (the block's walk half as long; 160 KB of shared memory, 242 registers)
# Runs: the kernel's test and every-layer / graph-replay / opcheck tests on att and att2 first (stop reading the numbers
# of a tree whose tests fail); `attn_fresh_bench.py` in att and att2 (the kernel alone against SDPA + attn_gate at
# 64-8,192 rows, all rows and the last alone); `compare prefill --pp 520,4096` new att2 att att2 new as time allows.
# Predicted: att 8-10 µs a layer at 520 rows, att2 5-6 µs, against SDPA ~17 + attn_gate ~2.5: pp520 kernels −55 to
# −70 µs (att) / −75 to −85 (att2), +2.3-3.5%. At 4,096 rows (~69 GFLOP a layer) mma.sync's rate (~100-130 µs) may lose
# to cuDNN's wgmma kernel: then fresh plans past the measured crossover keep SDPA (attn_fresh_bench.py gives it).
# Setup (from main's checkout): for b in att:s41-attn-fresh att2:s41-attn-fresh-split; do n=${b%%:*};
#   rm -rf .ab_$n && mkdir .ab_$n && git archive ${b#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs &&
#   git rev-parse --short ${b#*:} > .ab_$n/COMMIT; done; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_att", ".ab_att2"]
set -u
source docs/results/device_call.sh --site
build_trees new att att2
for side in att att2; do
  in_tree $side 110 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_megakernel_prefill.py tests/test_megakernel.py \
      -k "attn_fresh or (every_layer_of_the_prompt and (520 or 4097 or 65)) or (graph_replay and 300) or opcheck" \
      > "$OUT/r/tests_$side.txt" 2>&1
  echo "tests $side: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_$side.txt"; pack
done
for side in att att2; do
  in_tree $side 80 python3 "$ROOT/docs/results/2026-12-06-h100-s41/attn_fresh_bench.py" "$OUT/r" \
      > "$OUT/r/attn_fresh_bench_$side.txt" 2>&1
  rc=$?; mv "$OUT/r/attn_fresh_bench.json" "$OUT/r/attn_fresh_bench_$side.json" 2>/dev/null
  echo "attn_fresh bench $side: exit $rc ${SECONDS}s"; tail -16 "$OUT/r/attn_fresh_bench_$side.txt"; pack
done
i=0
for side in new att2 att att2 new; do
  i=$((i + 1))
  [ $((585 - SECONDS)) -lt 60 ] && { echo "prefill $i $side: skipped"; continue; }
  in_tree $side 70 python3 -m compare prefill --pp 520,4096 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp|\| pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-200; pack
done
true
