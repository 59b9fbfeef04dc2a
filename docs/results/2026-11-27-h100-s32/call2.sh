#!/usr/bin/env bash
# Call 2 (main b70e2ba): (1) attn_bench.py: the fresh prefill's causal attention at 128-4,096 rows, cuDNN's SDPA kernel
# (what the prefill runs: 18.6 µs a layer at 520 rows, 8.0 + 2.4 µs for the last layer's one row, s27 call 8) against
# FA2 and SDPA's other backends; (2) the GPU tests of af11cbd (after session 31's calls, not yet run on a GPU): the
# stream-only schedule, stopped launches, refused ids (one-step and many-token).
# Predicted: FA2 at 520 rows ~8-12 µs (more blocks at 64 queries a block, no cuDNN reduction), at 4,096 slower than
# cuDNN (s17: pp4096 304k -> 259-266k with FA2); the last row by FA2 ~3-5 µs; the tests pass.
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1 &
python3 docs/results/2026-11-27-h100-s32/attn_bench.py "$OUT/r/attn_bench.json" > "$OUT/r/attn_bench.txt" 2>&1
echo "attn_bench: exit $? ${SECONDS}s"; cat "$OUT/r/attn_bench.txt" | cut -c1-150; pack
wait
echo "build: ${SECONDS}s"
in_tree new $((580 - SECONDS)) python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 \
    "tests/test_many_tokens_gpu.py::test_an_id_outside_the_vocabulary_is_refused_on_the_device" \
    tests/test_megakernel.py -k "stream_only or stopped or refused or refusal" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests.txt" | cut -c1-200; pack
true
