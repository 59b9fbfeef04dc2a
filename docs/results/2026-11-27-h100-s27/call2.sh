#!/usr/bin/env bash
# Session 27 call 2 (issue 21): the prefill kernels' SiLU and sigmoid by __expf and __fdividef (dn_prep, dn_out_norm,
# silu_mul, attn_gate, the gates' beta) against 2e2f85a (prev). Call 1 showed dn_prep and silu_mul are not L2-bound
# (8 tokens a block, a third of the L2 traffic, was slower: fewer warps, the same instructions): at ~31 / ~22
# instructions a value, expf's ~8 and the IEEE division's ~8 are half of them.
# Predicted: ours at pp520 698 -> 650-670 µs (dn_prep 175 -> ~140, silu_mul 96 -> ~85, dn_out_norm and attn_gate a
# little), pp520 +1-2%; pp4096 ours 2,978 -> ~2,700 (dn_prep 1,046 -> ~800); bits differ (a few fp32 ulps before each
# bf16 rounding), every prefill test's bounds hold.
# Before the call: .ab_prev = git archive 2e2f85a (as call 1); carry [".whl", ".qla", ".ab_prev"].
set -u
source docs/results/device_call.sh --site
in_tree prev 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_prev.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; pack
# (a first tier load on a fresh machine compiles FlashQLA's kernels)
in_tree new 120 python3 -m compare prefill --pp 520 --reps 2 --reference-pp 0 > "$OUT/r/warm.txt" 2>&1
echo "warm: exit $? ${SECONDS}s"
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 60 python3 -m compare prefill --pp 64,520,4096 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-250; pack
done
in_tree new $((590 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider -x \
    -k "every_layer or 128_decode or continuing or graph_replay or dn_prep or untraced or turns" > "$OUT/r/tests_prefill.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt"; pack
true
