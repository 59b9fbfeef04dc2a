#!/usr/bin/env bash
# Session 35, call 8 (the session's last device seconds): the whole batch GPU file and the many-token GPU file on main
# (c23a5b1's kernels), which calls 2 and 4 ran only in part (the batch int8 / poison tests, memcheck at B = 8).
# Predicted: all pass.
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
echo "build: exit $? ${SECONDS}s"
in_tree new 260 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=250 tests/test_batch_gpu.py \
    > "$OUT/r/tests_batch.txt" 2>&1
echo "batch: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_batch.txt" | cut -c1-300; pack
if [ $((585 - SECONDS)) -gt 60 ]; then
  in_tree new $((580 - SECONDS)) python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_many_tokens_gpu.py \
      > "$OUT/r/tests_many.txt" 2>&1
  echo "many: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_many.txt" | cut -c1-300; pack
fi
true
