#!/usr/bin/env bash
# Session 22, call 5 (issue 21): the GPU tests of the kept tree (COMMIT: FlashQLA the default delta rule, dn_prep a block
# per (token, pass), a fresh prompt's last layer for its last row alone), FlashQLA installed: the prefill file (every
# layer within the bf16 bounds at 1 / 63 / 65 / 520 / 4097, each delta rule, 128 decode steps, continuing prompts,
# graph = eager with NaN beyond the sequence, turns, memcheck of a prefill), prefill then decode, the ops' opcheck.
# (Call 5a ran this with a second pytest line, tests/test_prefill_decode.py and test_megakernel.py -k "prefill or opcheck":
# 2 passed; the rerun after the turns test's fix, call 5, ran the prefill file alone.)
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site
export WORKBENCH_COMMIT=$(cat COMMIT 2>/dev/null || echo unknown)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; echo "build: ${SECONDS}s"
timeout 330 python3 -m pytest -q -m gpu -x tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
true

