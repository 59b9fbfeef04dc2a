#!/usr/bin/env bash
# Session 24 call 3 (main with binding.cpp's MK_CHECK: refusals formatted without iostreams).
# 1. the prefill GPU tests (call 1 died at the dn_prep refusal: SIGSEGV formatting the message through tvm_ffi's
#    interposed ostringstream) incl. the new refusal test; test_megakernel.py's prefill / opcheck / refusal tests;
# 2. prelude.py at pp 64, 520: what the host does in the 240 µs before pp520's graph runs (call 2: region 2,803 µs,
#    replay 2,563 µs). Prediction: pageable H2D copies (ids, table) and a few small launches ~100 µs, the graph
#    launch itself the rest.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s24
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: ${SECONDS}s"; tail -n1 "$OUT/r/build.log" | cut -c1-200
timeout 90 python3 $HERE/prelude.py "$OUT/r" 64,520 > "$OUT/r/prelude.txt" 2>&1
echo "prelude: exit $? ${SECONDS}s"; grep -v TileLang "$OUT/r/prelude.txt" | cut -c1-160 | head -90; pack
timeout 300 python3 -X faulthandler -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -15 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
timeout 120 python3 -m pytest -q -m gpu tests/test_megakernel.py -k "prefill or opcheck or refus or reject or error" -p no:cacheprovider \
    > "$OUT/r/tests_mk.txt" 2>&1
echo "megakernel tests: exit $? ${SECONDS}s"; tail -5 "$OUT/r/tests_mk.txt" | cut -c1-300; pack
true
