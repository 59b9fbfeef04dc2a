#!/usr/bin/env bash
# Session 28 call 5 (issue 20: no-sync tg128 >= 1,550; main 1,488-1,496). Call 4's ncu of a decode launch at 128 tokens:
# 12% of the compute warps' samples wait at chunks_done's block barrier (weight_ring.cuh: every K = D item of up to 8
# chunks waits for its slowest warp before any of its chunks goes back to the producer), 8% at a chunk's "full" wait.
# Variant rel (bd521ba, branch variant-warp-release): batch 1's K = D phases (in-projections, gate/up, lm_head: ~2/3 of
# the bytes) release each chunk by its 2 reader warps as soon as their dots are done (mbarrier.arrive with a count: the
# "empty" barriers expect NWARPS arrivals; every other release is one thread's NWARPS after the block barrier, as before);
# no block barrier per item. (v7's per-warp release, -11%, came with two rows at a time and 40 B of spills: never
# measured alone.) Spills unchanged (28 / 48 B one-step, 36 / 64 many-token). Bits identical (the same arithmetic).
# Predicted: the ring refilled earlier by the item's skew: tg128 +0.5-2%, d32768 +0-1%.
# Before the call: .ab_rel = git archive variant-warp-release; carry [".whl", ".qla", ".ab_rel"].
set -u
source docs/results/device_call.sh --site
in_tree rel 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_rel.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 120 python3 -c "from compare import load_tier; from reference import ModelConfig as M, random_weights as rw; import torch; c = M.qwen3_5_0_8b(); t = load_tier('megakernel', c, rw(c, seed=0, dtype=torch.bfloat16), device='cuda'); s = t.new_state(1, 64); t.prefill(torch.zeros(1, 16, dtype=torch.long), s)" > "$OUT/r/warm.log" 2>&1
echo "warm: exit $? ${SECONDS}s"
i=0
for side in new rel rel new; do
  i=$((i + 1))
  in_tree $side 80 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0,32768 \
      --batch 1 --json "$OUT/r/tg_${i}_${side}.json" > "$OUT/r/tg_${i}_${side}.md" 2>&1
  echo "run $i $side: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/tg_${i}_${side}.md" | cut -c1-75; pack
done
for side in new rel; do
  in_tree $side 50 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_new.pt" "$OUT/r/snap_rel.pt" > "$OUT/r/bits_rel.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits_rel.txt"; rm -f "$OUT"/r/snap_*.pt
pack
[ $SECONDS -lt 420 ] && in_tree rel $((580 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel.py -p no:cacheprovider \
    -k "teacher or poison or layer or grid" > "$OUT/r/tests_rel.txt" 2>&1
echo "tests (rel): exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_rel.txt"; pack
true
