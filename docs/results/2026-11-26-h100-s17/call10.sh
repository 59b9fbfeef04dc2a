#!/usr/bin/env bash
# Session 17, call 10: the GPU tests that prefill (the working tree, its COMMIT): the prefill file (not
# its initcheck / synccheck, which outlast their 240 s), prefill then decode, the batch (prefills into
# rows), the state machines, many tokens per launch, the megakernel file (not its sanitizer runs).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; tail -n1 "$OUT/r/build.log"
timeout 470 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_prefill_decode.py \
    tests/test_batch_gpu.py tests/test_state_machine_gpu.py tests/test_many_tokens_gpu.py tests/test_megakernel.py \
    -k "not initcheck and not synccheck and not sanitizer" > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; grep -E "passed|failed|FAILED|ERROR" "$OUT/r/gpu_tests.log" | tail -12
