#!/usr/bin/env bash
# Session 33, call 6 (the session's last device seconds): the anatomy's new DeltaNet-core unit steps (block 0's first
# unit: its inputs convolved and the q, k norms summed, its state rows updated, done) at B = 8 and B = 1, then the clock
# test if time is left. Predicted (call 3's core: B = 8 median arrival 6.0 µs, B = 1 2.2): at B = 8 ~1.2-1.5 µs to
# "convolved" (the conv input's round trip from the in-projection after the barrier), ~1.5-2 µs of rows (16 dependent
# warp sums a warp, 8 rows), ~0.3 µs of gated norm; at B = 1 ~1.2 µs to convolved and ~0.5 µs of the row.
set -u
source docs/results/device_call.sh --site
in_tree new 150 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
for b in 8 1; do
  in_tree new 60 python3 -m megakernel anatomy --batch $b --context 16 > "$OUT/r/anatomy_b$b.txt" 2>&1
  echo "anatomy b$b: exit $? ${SECONDS}s"; grep -E "DeltaNet core|ring full|a step" "$OUT/r/anatomy_b$b.txt" | cut -c1-160; pack
done
if [ $((SECONDS)) -lt 150 ]; then
  in_tree new 70 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "the_clock" > "$OUT/r/tests.txt" 2>&1
  echo "tests: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests.txt" | cut -c1-200; pack
fi
true
