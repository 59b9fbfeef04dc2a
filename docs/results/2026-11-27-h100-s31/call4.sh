#!/usr/bin/env bash
# Call 4 (branch variant-poller-warps, debug): call 3 found the refused launch's pollers stuck in their poll with
# a barrier word never written (x, y: leftover floats), i.e. past the ARRIVED wait without seeing the end flag.
# .ab_dbg now prints, for a stuck poll, the end flag read after the ARRIVED wait and now, the election word and the
# two mbarriers' raw words, and ENDPOLLS lines from every 8th block's end_polls. Both refused tests run, each alone.
# Predicted: ENDPOLLS lines with end 1; STUCK3 lines say whether the end flag was 0 when read.
set -u
source docs/results/device_call.sh --site
in_tree dbg 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_dbg.log" 2>&1
echo "build: ${SECONDS}s"; pack
for t in "tests/test_many_tokens_gpu.py::test_an_id_outside_the_vocabulary_is_refused_on_the_device" \
         "tests/test_megakernel.py::test_an_id_out_of_range_is_refused_on_the_device[248320]"; do
  name=$(echo "$t" | sed 's/.*:://; s/\[.*//')
  in_tree dbg 120 python3 -m pytest -q -x -m gpu -p no:cacheprovider -o faulthandler_timeout=60 "$t" > "$OUT/r/$name.txt" 2>&1
  echo "$name: exit $? ${SECONDS}s"; grep -E "STUCK|passed|failed" "$OUT/r/$name.txt" | head -8; grep -c ENDPOLLS "$OUT/r/$name.txt"; pack
done
true
