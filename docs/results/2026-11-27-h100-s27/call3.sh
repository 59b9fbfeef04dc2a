#!/usr/bin/env bash
# Session 27 call 3 (issue 19; session 26's next_call_producer_prefetch.sh, run as written but for this header):
# (the batch core's state prefetched by the ring's producer, piece i of n as it copies gate/up chunk i of n before each
# DeltaNet core, instead of the whole 64 KB unit at the gate/up's start: NOTES v24) against main.
# Before the call: rm -rf .ab_prod && mkdir .ab_prod && git archive variant-producer-state-prefetch | tar -x -C .ab_prod
#   && rm -rf .ab_prod/docs; carry [".whl", ".qla", ".ab_prod"].
# Predicted (B = 8): the core as main's (~141 µs a step), the gate/ups 131 -> 116-125 (the bytes at the stream's pace,
# no burst), tg128 B = 8 +0.5-1.5%; the many-token kernels spill 124-132 B at B = 6-8 (main 60-108): the one-launch
# rows may lose what the step gains. Bits: identical (a prefetch only).
set -u
source docs/results/device_call.sh --site
in_tree prod 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_prod.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; pack
# (a first tier load on a fresh machine compiles FlashQLA's kernels: ~30 s, session 26 call 7)
in_tree new 120 python3 -c "from compare import load_tier; from reference import ModelConfig as M, random_weights as rw; import torch; c = M.qwen3_5_0_8b(); t = load_tier('megakernel', c, rw(c, seed=0, dtype=torch.bfloat16), device='cuda'); s = t.new_state(1, 64); t.prefill(torch.zeros(1, 16, dtype=torch.long), s)" > "$OUT/r/warm.log" 2>&1
i=0
for side in new prod prod new; do
  i=$((i + 1))
  in_tree $side 90 python3 $ROOT/tests/gpu/batch_check.py --tiers megakernel --skip-checks --json "$OUT/r/batch_${i}_$side.json" \
      > "$OUT/r/batch_${i}_$side.log" 2>&1
  echo "$side: exit $? ${SECONDS}s"; grep -E "phases B=8|^tg" "$OUT/r/batch_${i}_$side.log" | sed -E "s/'seconds'[^,]*, //; s/, 'tier'[^}]*//; s/'steps': 128, //"
  pack
done
true
