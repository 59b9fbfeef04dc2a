#!/usr/bin/env bash
# Session 19, call 3 (issue 22). The working tree (COMMIT): the family's teacher-forced test measured against
# the bf16 baseline's own per-step error (call 2: the 9B's logits 5.5-8.4% off fp32 over 128 steps, past the
# 0.8B test's absolute 8%). Prediction: passes at 2B and 9B, the megakernel's per-step error within 1.1x of
# transformers' (the per-layer test passed with the same rule).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
run() { local limit=$1; shift; WORKBENCH_COMMIT=$(cat COMMIT) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout "$limit" "$@"; }
SECONDS=0
for size in qwen3.5-2b qwen3.5-9b; do
  run 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" \
      > "$OUT/r/build_$size.log" 2>&1 &
done
wait; echo "builds: ${SECONDS}s"
SECONDS=0
run 400 python3 -m pytest -q -m gpu -rs -p no:cacheprovider "tests/test_megakernel_family.py::test_teacher_forced_128_steps_no_drift" \
    > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  " "$OUT/r/tests.txt" | tail -14 | cut -c1-300
