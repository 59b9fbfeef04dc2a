#!/usr/bin/env bash
# Session 29 call 4 (issue 21): the checks of call 3's kept change under more callers, at HEAD (a strided ids view made
# contiguous in bind(): the GPU state machine draws strided views, on the CPU and the device): the bind and refusal
# tests of test_megakernel_prefill.py, then the stateful property machine on the megakernel (bad ids through every
# entry, CPU / device / strided ids, batch rows, refusals; last run on a GPU in session 21).
# Predicted: all pass.
set -u
source docs/results/device_call.sh --site
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"
in_tree new 120 python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider \
    -k "bind or outside_the_vocabulary" > "$OUT/r/tests_bind.txt" 2>&1
echo "bind tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_bind.txt"; pack
in_tree new $((400 - SECONDS)) python3 -m pytest -q -m gpu tests/test_state_machine_gpu.py -p no:cacheprovider \
    -k "state_machine_gpu and megakernel" > "$OUT/r/tests_state_machine.txt" 2>&1
echo "state machine: exit $? ${SECONDS}s"; tail -15 "$OUT/r/tests_state_machine.txt"; pack
true
