#!/usr/bin/env bash
# Session 27 call 5: main with the attention core's unmasked whole chunks (cb6bdb2, call 4's `full`) and the prefill's
# fast SiLU: the decode GPU tests that cover the attention core (every split-K path and grid, 128 teacher-forced steps,
# poison, the many-token file), memcheck and synccheck of the ring kernel at B = 1 and memcheck at B = 8, then the batch
# file's attention tests. No timing.
set -u
source docs/results/device_call.sh --site
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: ${SECONDS}s"; pack
in_tree new 240 python3 -m pytest -q -m gpu tests/test_megakernel.py -p no:cacheprovider \
    -k "split or grid or teacher or poison or layer or sanitizer" > "$OUT/r/tests_megakernel.txt" 2>&1
echo "megakernel tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_megakernel.txt"; pack
in_tree new 150 python3 -m pytest -q -m gpu tests/test_many_tokens_gpu.py -p no:cacheprovider > "$OUT/r/tests_many.txt" 2>&1
echo "many-token tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_many.txt"; pack
in_tree new $((580 - SECONDS)) python3 -m pytest -q -m gpu tests/test_batch_gpu.py -p no:cacheprovider -k "megakernel" \
    > "$OUT/r/tests_batch.txt" 2>&1
echo "batch tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_batch.txt"; pack
true
