#!/usr/bin/env bash
# Session 29 call 5 (issue 21): after a review of the kept change (28a4c68: pinned CPU ids synced after their copy; a
# batch's interface-checked rows bind without the range; a new shape's ids checked before its plan; bind's pieces by a
# stride loop): the bind and refusal tests (7 refusal cases: 40 / 300 rows, device / CPU / pinned ids, fresh / after
# 10 tokens), then the megakernel's GPU state machine (batch prefills take the `checked` path). Device time left:
# ~240 s, so the build and the bind tests first.
# Predicted: all pass.
set -u
source docs/results/device_call.sh --site
in_tree new 150 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"
in_tree new 100 python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider -x \
    -k "bind or outside_the_vocabulary" > "$OUT/r/tests_bind.txt" 2>&1
echo "bind tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_bind.txt"; pack
in_tree new 80 python3 -m pytest -q -m gpu tests/test_state_machine_gpu.py -p no:cacheprovider \
    -k "state_machine_gpu and megakernel" > "$OUT/r/tests_state_machine.txt" 2>&1
echo "state machine: exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_state_machine.txt"; pack
true
