#!/usr/bin/env bash
# Session 27 call 4 (issue 20 part 2: tg128 @ d32768 >= 1,100; main 1,091-1,095 in sessions 22-24). Two one-idea
# variants of batch 1's attention core against main (d91d460), alternating:
#   full (4585b2c, branch variant-att-full-groups): the ring path takes a whole chunk of past positions without the
#     masks (att_group<false>: no valid bits, no score or V-row selects; ~10 of the ~120 instructions of a group of two
#     positions); the last, partial chunk as before. Spills of the batch-1 kernels unchanged (28 / 48 B one-step, 36 / 64
#     many-token, ptxas here). Predicted: the core ~3-5% shorter at d32768 (~1.5 µs a layer) -> tg128 @ d32768 +0.5-1%
#     (~1,100-1,105); d0 equal (a chunk there is partial).
#   c8 (92eaf51, branch variant-att-item-chunks-8): ATT_ITEM_CHUNKS 4 -> 8 (half the block barriers in the core; the
#     producer refills 8 slots at once). Predicted +-0.5% at d32768 (2 a time measured -0.5%, NOTES v20).
# Bits: identical (the same arithmetic on every valid position): ab_commits.py snapshots if time is left.
# Before the call: .ab_full, .ab_c8 = git archive of the branches; carry [".whl", ".qla", ".ab_full", ".ab_c8"].
set -u
source docs/results/device_call.sh --site
for side in full c8; do
  in_tree $side 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 120 python3 -c "from compare import load_tier; from reference import ModelConfig as M, random_weights as rw; import torch; c = M.qwen3_5_0_8b(); t = load_tier('megakernel', c, rw(c, seed=0, dtype=torch.bfloat16), device='cuda'); s = t.new_state(1, 64); t.prefill(torch.zeros(1, 16, dtype=torch.long), s)" > "$OUT/r/warm.log" 2>&1
echo "warm: exit $? ${SECONDS}s"
i=0
for side in new full c8 c8 full new; do
  i=$((i + 1))
  in_tree $side 80 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0,32768 \
      --batch 1 --json "$OUT/r/tg_${i}_${side}.json" > "$OUT/r/tg_${i}_${side}.md" 2>&1
  echo "run $i $side: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/tg_${i}_${side}.md" | cut -c1-75; pack
done
if [ $SECONDS -lt 470 ]; then
  for side in new full; do
    in_tree $side 50 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
  done
  python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_new.pt" "$OUT/r/snap_full.pt" > "$OUT/r/bits_full.txt" 2>&1
  echo "bits: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits_full.txt"; rm -f "$OUT"/r/snap_*.pt
fi
pack
true
