#!/usr/bin/env bash
# Session 34, call 4: the review's mends of the int8 argmax ("new", this checkout) against call 2-3's tree (.ab_prev:
# fcf5c83); carry .whl .qla COMMIT .ab_prev. Mends: an input whose squares are subnormal (or not finite) sends every
# row to the exact pass; every bound + 2^-120; rows with values past 2^58 computed exactly (lm_bound.HUGE); the
# pass's last block barrier dropped; the tests: grid 96 (odd slices, the pad row), a winner two rows in a middle
# block when every other row ties (every warp's candidates overflow), the int8 pass shown to be what ran.
# Predicted: the tests pass; tg128 equal to prev (±0.5%), bits equal to prev's.
set -u
source docs/results/device_call.sh --site
for side in new prev; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 220 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=200 tests/test_megakernel.py \
    -k "int8_argmax or fused_argmax or any_grid_and_schedule or memcheck-ring-1" > "$OUT/r/tests_mk.txt" 2>&1
echo "tests mk: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_mk.txt" | cut -c1-200; pack
for side in prev new; do
  in_tree $side 90 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_prev.pt" "$OUT/r/snap_new.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -4 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 40 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 80 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 prev; bench 2 new; bench 3 prev; bench 4 new
true
