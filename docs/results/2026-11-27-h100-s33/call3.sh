#!/usr/bin/env bash
# Session 33, call 3 (call 2 ran this script from the wrong checkout: branch variant-dn-core-ll at 8624a6a, mislabelled 8abcb24 in its COMMIT): the anatomy's new stall column (the ring's full time by the phase whose chunk held the slot,
# timing mode only; registers and spills of the 17 decode kernels unchanged at sm_90a) at B = 1, 4, 8.
# Predicted: the clock and anatomy GPU tests pass; per-phase stalls add up to the ring-full total (B = 1 ~47 µs a
# step, B = 8 ~150); at B = 1 the stalls sit on the phases after the attention core (out-proj) and after the DeltaNet
# core (out-proj), at B = 8 also on the matrix phases (gate/up, down: the tensor-core items slower than the stream).
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
in_tree new 200 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 tests/test_megakernel.py \
    tests/test_batch_gpu.py -k "the_clock or anatomy" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests.txt" | cut -c1-200; pack
for b in 1 8; do
  if [ $((585 - SECONDS)) -lt 40 ]; then echo "anatomy b$b: skipped"; continue; fi
  in_tree new 60 python3 -m megakernel anatomy --batch $b --context 16 > "$OUT/r/anatomy_b$b.txt" 2>&1
  echo "anatomy b$b: exit $? ${SECONDS}s"; cat "$OUT/r/anatomy_b$b.txt" | cut -c1-120; pack
done
true
