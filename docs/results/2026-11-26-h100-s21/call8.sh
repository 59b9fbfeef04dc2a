#!/usr/bin/env bash
# Session 21, call 8: the kept tree's batch table (issue 19's rows: tg128 total tok/s at B = 1, 2, 4, 8, the
# megakernel and the Triton tier in one run), `python -m compare bench --tiers megakernel,triton --batch 1,2,4,8`.
# Prediction: B = 8 ~8,600 (call 3: 8,615), B = 1 ~1,490; the Triton tier ~960 / 5,300 as in session 13.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
SECONDS=0
timeout 420 python3 -m compare bench --tiers megakernel,triton --batch 1,2,4,8 --pp 0 --tg 128 --depth 0 --repeats 3 --no-progress \
    --json "$OUT/r/bench_batch.json" > "$OUT/r/bench_batch.md" 2>&1
echo "batch bench: exit $? ${SECONDS}s"; grep -E "^\| (megakernel|triton)|^\| B|÷" "$OUT/r/bench_batch.md" | cut -c1-120
