#!/usr/bin/env bash
# Session 28 call 1 (issue 21): the megakernel tier's own chunked delta rule (csrc/prefill_delta_rule.cu, two kernels a
# layer: chunk_intra (W, U, P of every chunk at once, 16 x chunks blocks) and chunk_state (the state through the chunks:
# 32 blocks of 4 warps, each warp 16 state rows in registers, the next chunk's tiles by cp.async), first GPU run.
# FlashQLA's fused kernel runs 16 x 4 blocks at 520 rows and takes ~3 µs a chunk (27 µs a layer + kkt_solve 6.6).
# Predicted: correct (rule_check: within 1.5x fla's error at 1..4,097 rows); a layer at 520 rows ~12-16 µs (FlashQLA
# ~34), at 4,096 ~70-90 µs (FlashQLA ~150 with its split); pp520 kernels -250..-350 µs, ~205-225k tok/s.
set -u
source docs/results/device_call.sh --site
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; tail -2 "$OUT/r/build.log"
in_tree new 150 python3 docs/results/2026-11-27-h100-s28/rule_check.py > "$OUT/r/rule_check.txt" 2>&1
echo "rule_check: exit $? ${SECONDS}s"; grep -v TileLang "$OUT/r/rule_check.txt" | tail -40; pack
in_tree new 170 python3 -m compare delta-rule --pp 256,520,4096 --out "$OUT/r/delta_rule" > "$OUT/r/delta_rule.txt" 2>"$OUT/r/delta_rule.err"
echo "delta-rule: exit $? ${SECONDS}s"; cat "$OUT/r/delta_rule.txt" | cut -c1-200 | tail -30; tail -3 "$OUT/r/delta_rule.err"; pack
i=0
for rule in flash-qla megakernel megakernel flash-qla; do
  i=$((i + 1))
  [ $SECONDS -gt 470 ] && break
  in_tree new 60 python3 -m compare prefill --pp 520,4096 --reps 5 --reference-pp 0 --delta-rule $rule \
      --out "$OUT/r/prefill_${i}_$rule" > "$OUT/r/prefill_${i}_$rule.txt" 2>&1
  echo "prefill $i $rule: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$rule.txt" | cut -c1-300; pack
done
[ $SECONDS -lt 500 ] && in_tree new $((585 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider \
    -k "each_delta_rule" > "$OUT/r/tests_rule.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_rule.txt"; pack
true
