#!/usr/bin/env bash
# Session 17, call 9: the opcheck test as db14375 has it: every prefill op, a continuing prompt in one piece and in three.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new WORKBENCH_COMMIT=$(cat COMMIT)
timeout 300 python3 -m pytest -q -m gpu tests/test_megakernel.py -k "opcheck or torch_compile" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $?"; tail -n 3 "$OUT/r/tests.txt"
