#!/usr/bin/env bash
# Call 7 (main 51b368e): the anatomy's new fence columns (each block's arrival made stamped after its
# release, timing mode only; ptxas: registers and spills of all 17 decode kernels unchanged): test_megakernel's clock
# and anatomy tests, then `python -m megakernel anatomy` at batch 1 and 8 (16-token context).
# Predicted (calls 3-6): the last block's fence ~0.2-0.6 µs after the in-projections and gate/ups, ~0.05-0.2 after the
# cores, out-projections and downs at batch 1 (the ring full there); longer at B = 8.
set -u
source docs/results/device_call.sh --site
in_tree new 150 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
in_tree new 70 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=60 tests/test_megakernel.py \
    -k "the_clock or anatomy" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests.txt" | cut -c1-160; pack
for b in 1 8; do
  left=$((225 - SECONDS)); [ $left -lt 25 ] && { echo "anatomy b$b: skipped"; continue; }
  in_tree new $left python3 -m megakernel anatomy --batch $b --context 16 > "$OUT/r/anatomy_b$b.txt" 2>&1
  echo "anatomy b$b: exit $? ${SECONDS}s"; grep -v "TileLang" "$OUT/r/anatomy_b$b.txt" | cut -c1-130; pack
done
true
