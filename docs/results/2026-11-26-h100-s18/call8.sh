#!/usr/bin/env bash
# Session 18, call 8: main after the revert (COMMIT; the prefill's code is 2df1f25's, with fla): the prefill GPU
# tests (session 17's review mends: check_fits, seqused_k, the pieces' merge under NaN poisoning at 1,100
# positions, padded turns, memcheck of a padded prefill with 3 pieces), opcheck, the op-error test.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; tail -n1 "$OUT/r/build.log"
timeout 330 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_prefill_decode.py \
    "tests/test_megakernel.py::test_opcheck_every_op" "tests/test_megakernel.py::test_an_op_given_a_wrong_shape_raises_naming_it" \
    -k "not initcheck and not synccheck" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $?"; grep -E "passed|failed|FAILED|SKIPPED|Fatal" "$OUT/r/tests.txt" | tail -8 | cut -c1-240
