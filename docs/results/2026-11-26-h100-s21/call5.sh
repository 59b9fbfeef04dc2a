#!/usr/bin/env bash
# Session 21, call 5 (issue 20 part 5): the rest of the GPU tests on 3f5a9fc's kernels (COMMIT): the decode
# sanitizers (memcheck / synccheck / initcheck of the ring schedule at B = 1, memcheck and initcheck at B = 8,
# racecheck and the others of the register schedule), the 4B's memcheck (call 4 ran out of time there), the 2B's
# and the 9B's family tests. Prediction: all pass, 0 errors.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
SECONDS=0
timeout 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1 &
for size in qwen3.5-2b qwen3.5-4b qwen3.5-9b; do
  timeout 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" > "$OUT/r/build_$size.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build*.log | cut -c1-200
run_tests() {
  local name=$1 limit=$2; shift 2; SECONDS=0
  timeout $limit python3 -m pytest -v -m gpu -rs -p no:cacheprovider "$@" > "$OUT/r/tests_$name.txt" 2>&1
  echo "tests $name: exit $? ${SECONDS}s"; grep -E "PASSED|FAILED|XPASS|ERROR| passed| failed" "$OUT/r/tests_$name.txt" | tail -12 | cut -c1-200; pack
}
run_tests sanitizers 270 tests/test_megakernel.py -k "sanitizer"
run_tests family 240 tests/test_megakernel_family.py -k "(2b and not memcheck) or (9b and not memcheck) or (4b and memcheck)"
cp sanitizers*.log teacher_forced_*.json "$OUT/r/" 2>/dev/null; pack
