set -u
ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
export QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONUNBUFFERED=1 PYTHONPATH=$ROOT:/tmp/site
timeout 200 python3 -c "import megakernel.build as b; b.load()" > $OUT/build.log 2>&1; tail -2 $OUT/build.log
timeout 270 python3 -m pytest -q -s -p no:cacheprovider tests/test_state_machine_gpu.py > $OUT/state_machine_gpu.log 2>&1
echo "state machine exit $?"; grep -E "state machine|passed|failed|Error" $OUT/state_machine_gpu.log | head -12
timeout 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py -k "sanitizer and (initcheck or synccheck)" > $OUT/sanitize_prefill.log 2>&1
echo "prefill sanitizers exit $?"; tail -4 $OUT/sanitize_prefill.log; grep -E "#####|SUMMARY" $OUT/sanitizers.log 2>/dev/null
