#!/usr/bin/env bash
# Call 3 (issue 19/20, branch variant-poller-warps): call 2 hung in the many-token file's
# test_an_id_outside_the_vocabulary_is_refused_on_the_device (faulthandler after 120 s, in the host's wait for
# the launch) and ran out of time at test_megakernel's first refused-id test. Which wait hangs: .ab_dbg is the
# branch with every spin bounded (3 s, then printf + __trap: STUCK tag 1 an mbarrier wait (compute: OPEN or a
# chunk), 2 a poller's ARRIVED wait, 3 a poller's poll, 4 the producer's empty wait, 5 the register schedule's
# poll). main (new) runs the same two tests as the control.
# Predicted: main passes both; the debug tree prints STUCK lines naming the wait.
set -u
source docs/results/device_call.sh --site
for side in new dbg; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
for side in new dbg; do
  in_tree $side 150 python3 -m pytest -q -x -m gpu -p no:cacheprovider -o faulthandler_timeout=60 \
      "tests/test_many_tokens_gpu.py::test_an_id_outside_the_vocabulary_is_refused_on_the_device" \
      "tests/test_megakernel.py::test_an_id_out_of_range_is_refused_on_the_device[248320]" > "$OUT/r/refused_$side.txt" 2>&1
  echo "refused ($side): exit $? ${SECONDS}s"; grep -E "STUCK|passed|failed|Error|Timeout" "$OUT/r/refused_$side.txt" | head -20; pack
done
true
