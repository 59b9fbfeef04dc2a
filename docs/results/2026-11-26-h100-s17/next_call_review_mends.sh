#!/usr/bin/env bash
# For the next session (not run: session 17's device time ran out). The GPU tests that 13e9100 (the
# review's mends of the prefill) changed and that no GPU has run yet: the prefill file (the graph test
# checking that padded prompts leave the cache's NaN past them, also at 1,100 positions where the
# pieces' merge reads the NaN-poisoned activations (cacd188); a replayed padded turn of 50 tokens;
# the conv ring against the reference), the prefill's memcheck (sanitize-run --prefill 70 now at 1,100
# positions: padded rows, 3 pieces, 2 of them empty, attn_merge_gate), opcheck. Run from the repo root
# with carry [".whl"] (write the tree's short commit into COMMIT first); ~4 minutes on a fresh H100.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; tail -n1 "$OUT/r/build.log"
timeout 400 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py \
    "tests/test_megakernel.py::test_opcheck_every_op" -k "not initcheck and not synccheck" > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; grep -E "passed|failed|FAILED|ERROR" "$OUT/r/gpu_tests.log" | tail -8
