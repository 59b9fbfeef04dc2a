#!/usr/bin/env bash
# Session 27 call 1 (issue 21): dn_prep's conv blocks take 8 consecutive tokens each (weights loaded once, the 11
# input rows at once) instead of one token each (1,569 blocks at 520 rows: every input row read by 4 blocks, the
# conv weights by all), against 2e2f85a (prev).
# Predicted: dn_prep 9.5 -> ~4 µs a layer at 520 rows (its L2 traffic ~57 -> ~18 MB): ours -90 to -100 µs, the pp520
# graph 2.64 -> ~2.55 ms (+3-4%); pp4096 a larger gain (its dn_prep ~8x longer); pp64 equal (+-1%). Bits identical
# (each token's arithmetic unchanged): prefill_bits.py at 1, 2, 7, 63, 65, 520, 4097 rows and 200 on top of 300.
# Before the call: rm -rf .ab_prev && mkdir .ab_prev && git archive 2e2f85a | tar -x -C .ab_prev && rm -rf .ab_prev/docs;
#   carry [".whl", ".qla", ".ab_prev"].
set -u
source docs/results/device_call.sh --site
HERE=$ROOT/docs/results/2026-11-27-h100-s27
in_tree prev 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_prev.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; grep -h -A2 dn_prep_kernel "$OUT/r/build_new.log" | grep -E "spill|registers"; pack
for side in new prev; do
  in_tree $side 150 python3 $HERE/prefill_bits.py snapshot "$OUT/r/bits_$side.pt" > "$OUT/r/bits_$side.txt" 2>&1
  echo "bits $side: exit $? ${SECONDS}s"; tail -2 "$OUT/r/bits_$side.txt"
done
python3 $HERE/prefill_bits.py compare "$OUT/r/bits_prev.pt" "$OUT/r/bits_new.pt" > "$OUT/r/bits_compare.txt" 2>&1
tail -5 "$OUT/r/bits_compare.txt"; rm -f "$OUT"/r/bits_*.pt; pack
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 80 python3 $ROOT/docs/results/2026-11-26-h100-s26/pipeline_pieces.py "$OUT/r/graph_${i}_$side.json" 64 520 4096 \
      > "$OUT/r/graph_${i}_$side.txt" 2>&1
  echo "graph $i $side: exit $? ${SECONDS}s"; grep median "$OUT/r/graph_${i}_$side.txt"; pack
done
for side in new prev; do
  [ $SECONDS -lt 470 ] || break
  in_tree $side 50 python3 -m compare prefill --pp 520,4096 --reference-pp 0 --out "$OUT/r/prefill_$side" \
      > "$OUT/r/prefill_$side.txt" 2>&1
  echo "prefill $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_$side.txt" | cut -c1-220; pack
done
[ $SECONDS -lt 540 ] && in_tree new 50 python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -k "dn_prep" -p no:cacheprovider \
    > "$OUT/r/tests_dn_prep.txt" 2>&1
echo "tests: ${SECONDS}s"; tail -2 "$OUT/r/tests_dn_prep.txt" 2>/dev/null; pack
true
