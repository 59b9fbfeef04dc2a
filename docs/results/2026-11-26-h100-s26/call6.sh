#!/usr/bin/env bash
# Session 26 call 6 (issue 19): the kept variant (call 5's varc: the next DeltaNet core's state prefetched into L2 as
# the gate/up before it begins) in main: the batch and many-token GPU tests, the official batch rows against the
# Triton tier in the same run (compare bench --batch 1,2,4,8), memcheck at B = 8 if time is left.
# Predicted: tests pass (a prefetch changes no bits; call 4: bit-identical at B = 1 and 8 for the same prefetch
# elsewhere); B = 8 ~8,750 tok/s (call 5: 8,759-8,771 against 8,615-8,622), the Triton tier ~5,300: 1.65x.
set -u
source docs/results/device_call.sh --site
timeout 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: ${SECONDS}s"
timeout 170 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_batch_gpu.py tests/test_many_tokens_gpu.py -k "not triton" \
    > "$OUT/r/tests_batch_many.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; grep -E "FAILED|ERROR| passed| failed" "$OUT/r/tests_batch_many.txt" | tail -5 | cut -c1-250; pack
timeout 200 python3 -m compare bench --tiers triton,megakernel --batch 1,2,4,8 --pp 0 --depth 0 --repeats 3 --no-progress \
    --json "$OUT/r/bench_batch.json" > "$OUT/r/bench_batch.md" 2>&1
echo "bench: exit $? ${SECONDS}s"; grep -E "^\|" "$OUT/r/bench_batch.md" | head -16 | cut -c1-220; pack
if [ $SECONDS -lt 400 ]; then
  OUT=$OUT/r timeout 120 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py -k "compute_sanitizer and memcheck-ring-8" \
      > "$OUT/r/tests_memcheck8.txt" 2>&1
  echo "memcheck B=8: exit $? ${SECONDS}s"; tail -2 "$OUT/r/tests_memcheck8.txt" | cut -c1-200
fi
pack
true
