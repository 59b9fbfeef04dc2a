#!/usr/bin/env bash
# Session 27 call 10 (issue 20): call 9's stamps showed the attention core's scoring, not its K/V chunks, is slow
# (the first chunk in 0.3 µs after q, k are normed; then ~0.5-0.7 µs a group of two positions against ~0.3 µs of
# dependent latency). 16 warps read each K/V row 4 times from shared memory and shuffle 8 times a group: the MIO
# pipe (shared memory and shuffles) is the likely limit. Variant nb (branch variant-att-no-broadcast): the shuffle
# that brings the other position's score (the group max) is kept, and each lane takes both positions' exps, so the
# two broadcast shuffles of the weights go (8 -> 6 shuffles a group, one more ex2). Same bits (the other position's
# exp is computed from the same bits as its own lanes do). Spills of batch 1 unchanged (28 / 48, 36 / 64).
# Predicted: tg128 @ d32768 +1-2% (the core ~2-3 µs a layer shorter), tg128 +0-0.3%.
set -u
source docs/results/device_call.sh --site
in_tree nb 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_nb.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 120 python3 -c "from compare import load_tier; from reference import ModelConfig as M, random_weights as rw; import torch; c = M.qwen3_5_0_8b(); t = load_tier('megakernel', c, rw(c, seed=0, dtype=torch.bfloat16), device='cuda'); s = t.new_state(1, 64); t.prefill(torch.zeros(1, 16, dtype=torch.long), s)" > "$OUT/r/warm.log" 2>&1
echo "warm: exit $? ${SECONDS}s"
i=0
for side in new nb nb new; do
  i=$((i + 1))
  in_tree $side 80 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0,32768 \
      --batch 1 --json "$OUT/r/tg_${i}_${side}.json" > "$OUT/r/tg_${i}_${side}.md" 2>&1
  echo "run $i $side: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/tg_${i}_${side}.md" | cut -c1-75; pack
done
for side in new nb; do
  in_tree $side 50 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_new.pt" "$OUT/r/snap_nb.pt" > "$OUT/r/bits_nb.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits_nb.txt"; rm -f "$OUT"/r/snap_*.pt; pack
true
