#!/usr/bin/env bash
# Session 19, call 4 (issue 22). The working tree (COMMIT): the layer pattern from the config (a 64-bit
# mask; the family's every-4th pattern keeps its arithmetic: the 0.8B's and the 9B's SASS are byte for byte
# 853917d's, checked on the CPU), the input vectors sized max(INTER, DN_VAL), and the built-in
# tiny-megakernel (5 layers L F L L F, 32 value heads over 16 key heads, 16 q heads over 4 kv heads, an
# untied head, vocab 4096). Tests: every family test at tiny-megakernel; the new ones (both schedules and
# three grids to the same bits; many tokens in one launch = a launch a step) at 2B and 9B too.
# Prediction: all pass; tiny-megakernel's whole file in well under a minute after its ~20 s build.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
run() { local limit=$1; shift; WORKBENCH_COMMIT=$(cat COMMIT) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout "$limit" "$@"; }
SECONDS=0
for size in tiny-megakernel qwen3.5-2b qwen3.5-9b; do
  run 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" \
      > "$OUT/r/build_$size.log" 2>&1 &
done
wait; echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-120
SECONDS=0
run 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py -k "tiny" > "$OUT/r/tests_tiny.txt" 2>&1
echo "tiny-megakernel: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  " "$OUT/r/tests_tiny.txt" | tail -10 | cut -c1-300
SECONDS=0
run 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py \
    -k "(2b or 9b) and (schedules or many_tokens)" > "$OUT/r/tests_new.txt" 2>&1
echo "2B / 9B, the new tests: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  " "$OUT/r/tests_new.txt" | tail -10 | cut -c1-300
