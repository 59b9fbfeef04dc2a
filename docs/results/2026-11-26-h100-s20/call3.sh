#!/usr/bin/env bash
# Session 20, call 3 (issue 22 follow-up): why the 4B reaches 73.7% of its byte floor (call 2) when the 2B
# reaches 84% and the 9B 88%. python -m megakernel anatomy (per-phase µs from the grid barriers' stamps) at the
# 4B and the 2B, ring and stream-only (the weight stream alone, nothing computed).
# Prediction: the 4B's K = hidden phases (in-proj, gate/up, lm_head) and its down rows read their rings in
# chunks 55-62% full (2 rows of 5 KB; 2 pieces of 4.5 KB), the 2B's 75-100%: if the stream's bytes in flight
# set the pace, the 4B's stream-only step is >= 10% above its byte floor where the 2B's is not.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
for size in qwen3.5-4b qwen3.5-2b; do
  for sched in ring stream-only; do
    SECONDS=0
    timeout 150 python3 -m megakernel anatomy --config $size --schedule $sched --context 16 --steps 8 > "$OUT/r/anatomy_${size}_$sched.txt" 2>&1
    echo "anatomy $size $sched: exit $? ${SECONDS}s"; tail -n 12 "$OUT/r/anatomy_${size}_$sched.txt" | cut -c1-160; pack
  done
done
