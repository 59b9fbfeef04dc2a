#!/usr/bin/env bash
# Session 28 call 7 (issue 21): FlashQLA's fused forward with block_DV = 16 where its 128 blocks fit (9e5a302) against
# c6b335f (FlashQLA's own pick, 32), alternating prev new new prev: compare prefill --pp 520,1024; the delta-rule rows at
# 256 / 520 / 1,024; the rule and prefill GPU tests on new (each rule alone at any length, incl. FlashQLA's 2-4 pieces;
# every layer within the bf16 bounds; graph replay; continuing prompts).
# Predicted (call 6: -1.7 µs a layer at 520 rows, -4.9 at 1,024): the delta rule's kernels -30 µs at pp520 (+1.1%),
# -90 µs at pp1024 (+2%); outputs as before within the tests' bounds (call 6: the same errors).
# Before the call: .ab_prev = git archive c6b335f; carry [".whl", ".qla", ".ab_prev"].
set -u
source docs/results/device_call.sh --site
in_tree prev 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_prev.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"
in_tree new 120 python3 -m compare prefill --pp 520,1024 --reps 2 --reference-pp 0 --out "$OUT/r/warm_new" > "$OUT/r/warm.txt" 2>&1
echo "warm: exit $? ${SECONDS}s"
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 60 python3 -m compare prefill --pp 520,1024 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-250; pack
done
in_tree new 100 python3 -m compare delta-rule --pp 256,520,1024 --out "$OUT/r/delta_rule" > "$OUT/r/delta_rule.txt" 2>"$OUT/r/delta_rule.err"
echo "delta-rule: exit $? ${SECONDS}s"; grep -E "flash-qla|fla " "$OUT/r/delta_rule.txt" | grep -E "fresh   \| model" | cut -c1-120; pack
in_tree new $((590 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider -x \
    -k "each_delta_rule or every_layer or graph_replay or continuing or 128_decode" > "$OUT/r/tests_prefill.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt"; pack
true
