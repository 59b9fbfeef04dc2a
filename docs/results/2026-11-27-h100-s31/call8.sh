#!/usr/bin/env bash
# Call 8 (main 04a4049, the poller warps merged): issue 19's report in one run of both tiers (tg128 at B = 1, 2, 4, 8,
# the megakernel against the Triton tier), then test_megakernel's grid / schedule / stream-only / teacher / timed /
# anatomy tests on the merged tree (call 2 ran 12 of them on the branch before its fix).
# Predicted: the megakernel B = 8 ~8,800-8,850 (call 7), the Triton tier ~5,300 (s26 5,326.5): ~1.66x, not 2x;
# all tests pass.
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
in_tree new 280 python3 -m compare bench --tiers megakernel,triton --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
    --batch 1,2,4,8 --json "$OUT/r/bench_batch.json" > "$OUT/r/bench_batch.txt" 2>&1
echo "bench: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_batch.txt | cut -c1-120; pack
left=$((585 - SECONDS))
in_tree new $left python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 tests/test_megakernel.py \
    -k "(grid or schedule or stream_only or teacher or timed or anatomy) and not sanitizer" > "$OUT/r/tests_megakernel.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_megakernel.txt" | cut -c1-200; pack
true
