#!/usr/bin/env bash
# Session 20, call 7 (issue 20 part 2's open question, issue 22's "where the 9B's last 12% goes"). The working
# tree (COMMIT): `python -m megakernel anatomy` prints a step's µs by CUDA events in any schedule, the
# stream-only one too (the ring's producer streams every weight and K/V row, nothing is computed).
# 1. the new GPU test (stream-only faster than ring);
# 2. the 0.8B's anatomy, ring and stream-only, at a 16- and a 32,768-token context;
# 3. the 9B's, ring and stream-only, at 16.
# Prediction: 0.8B d16 stream-only ~560-580 µs (1,735-1,814 tok/s in v10/v12) vs ring ~670; at d32768 the
# stream-only step ~0.72-0.78 ms (+0.40 GB of K/V at ~2.6 TB/s) vs ring ~0.92 ms: if so, the consumers (the
# attention core's scoring) cost ~150 µs a token above the stream, not the stream's rate. 9B: stream-only
# within ~5% of ring (88% of the floor: the stream is most of it).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
SECONDS=0
timeout 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('qwen3.5-9b'))" > "$OUT/r/build_9b.log" 2>&1 &
timeout 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_08b.log" 2>&1; wait
echo "builds: ${SECONDS}s"
timeout 120 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py -k "anatomy" > "$OUT/r/tests_anatomy.txt" 2>&1
echo "anatomy tests: exit $?"; grep -E "passed|failed|^E  " "$OUT/r/tests_anatomy.txt" | tail -5 | cut -c1-300; pack
for ctx in 16 32768; do
  for sched in ring stream-only; do
    SECONDS=0
    timeout 120 python3 -m megakernel anatomy --schedule $sched --context $ctx --steps 4 > "$OUT/r/anatomy_08b_${sched}_d$ctx.txt" 2>&1
    echo "0.8B $sched d$ctx: exit $? ${SECONDS}s"; grep -E "a step|ring full|core  |period" "$OUT/r/anatomy_08b_${sched}_d$ctx.txt" | cut -c1-170; pack
  done
done
for sched in ring stream-only; do
  SECONDS=0
  timeout 200 python3 -m megakernel anatomy --config qwen3.5-9b --schedule $sched --context 16 --steps 4 > "$OUT/r/anatomy_9b_$sched.txt" 2>&1
  echo "9B $sched: exit $? ${SECONDS}s"; grep -E "a step|ring full|period" "$OUT/r/anatomy_9b_$sched.txt" | cut -c1-170; pack
done
