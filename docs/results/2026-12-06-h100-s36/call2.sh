#!/usr/bin/env bash
# Session 36, call 2. Issue 19 on main after call 1's kept variant (e085256: a batch's DeltaNet state through the
# weight ring, no L2 prefetch; comments only since the measured 85ec7f9, SASS identical): the whole batch GPU file
# and the many-token file (bits and bounds at B = 2..8, poison, refusals, streams), then the Triton tier and the
# megakernel at B = 8 in the same run (the bar: 2x). Predicted: every test passes (call 1: a batch of 8's logits, trace
# and 32 greedy steps bit-identical to c9135a8's); b8 9,550-9,650 against Triton's ~5,300: ~1.8x.
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
echo "build: exit $? ${SECONDS}s"
in_tree new 270 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=260 tests/test_batch_gpu.py \
    > "$OUT/r/tests_batch.txt" 2>&1
echo "batch: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_batch.txt" | cut -c1-300; pack
in_tree new 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_many_tokens_gpu.py > "$OUT/r/tests_many.txt" 2>&1
echo "many: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_many.txt" | cut -c1-300; pack
if [ $((585 - SECONDS)) -gt 100 ]; then
  in_tree new $((580 - SECONDS)) python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 \
      --depth 0 --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
  echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| tg128|x ' $OUT/r/bench_triton_b8.txt | cut -c1-120; pack
fi
true
