#!/usr/bin/env bash
# Call 6 (branch variant-poller-warps at the fix of calls 3-5: the end signalled in the barrier word, read after the
# wait's branch): the tests that hung in call 2 (a refused launch, many-token and one-step), the stopped-launch test,
# the whole many-token file and test_megakernel's refusal tests.
# Predicted: all pass, nothing hangs (faulthandler names a hang after 100 s).
set -u
source docs/results/device_call.sh --site
for side in new poll; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
step() {  # step NAME LIMIT pytest-args...
  local name=$1 limit=$2
  shift 2
  in_tree poll $limit python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 "$@" > "$OUT/r/$name.txt" 2>&1
  echo "$name: exit $? ${SECONDS}s"; tail -1 "$OUT/r/$name.txt" | cut -c1-200; pack
}
step refused 200 "tests/test_many_tokens_gpu.py::test_an_id_outside_the_vocabulary_is_refused_on_the_device" \
    tests/test_megakernel.py -k "refused or refusal or stopped"
step many_tokens 280 tests/test_many_tokens_gpu.py
true
