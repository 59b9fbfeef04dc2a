#!/usr/bin/env bash
# Prepared in session 33, NOT YET RUN: branch variant-core-conv-first (2720598; patch variant_core_conv_first.patch): a
# batch's DeltaNet core issues its conv input and the gates' a, b (the in-projection's outputs, whose round trip the
# conv and the norms wait for) before its 64 KB of state rows, not after them (NOTES v31: call 6's unit steps, B = 8
# convolved at 3.28 µs against batch 1's 1.70; the ncu of call 5: the conv load's `lg` throttle). The SASS of the three
# batch-1 kernels is instruction for instruction main's; registers and spills of all 17 kernels unchanged.
# Run from a checkout of the branch ("new"), with main archived as .ab_main (carry .whl, .qla, COMMIT, .ab_main):
#   git checkout variant-core-conv-first && rm -rf .ab_main && mkdir .ab_main && git archive main | tar -x -C .ab_main \
#     && rm -rf .ab_main/docs && git rev-parse --short main > .ab_main/COMMIT && git rev-parse --short HEAD > COMMIT
# Predicted: bits identical (the same arithmetic); B = 8's unit convolved ~3.3 → ~2 µs, its core −0.5 to −1.2 µs a
# DeltaNet layer (the rows may then wait for the state a while): tg128 b8 +1 to +2.5%, tg128 (batch 1) equal.
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
for side in main new; do
  in_tree $side 60 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_new.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
n=0
for side in main new main new; do
  n=$((n + 1))
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$n $side: skipped"; continue; fi
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,4,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done
if [ $((585 - SECONDS)) -gt 45 ]; then
  in_tree new 60 python3 -m megakernel anatomy --batch 8 --context 16 > "$OUT/r/anatomy_b8_new.txt" 2>&1
  echo "anatomy: exit $? ${SECONDS}s"; grep "DeltaNet core" "$OUT/r/anatomy_b8_new.txt"; pack
fi
true
