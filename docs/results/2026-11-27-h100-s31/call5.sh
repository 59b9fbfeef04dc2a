#!/usr/bin/env bash
# Call 5 (branch variant-poller-warps, debug): call 4's stuck pollers read the end flag as 0 after their ARRIVED
# wait and the pollers' mbarrier words as leftovers (0 or bf16-looking), as if never initialised. Now: thread 0 of
# every 32nd block prints both mbarriers' raw words right after stream_start's __syncthreads (INIT), and a poller
# that passes its first ARRIVED wait without the end flag and without barrier 1's word prints (EARLY). A normal
# many-token test first (the control), then the refused one.
# Predicted: INIT words equal in both (an initialised mbarrier); EARLY lines only in the refused test.
set -u
source docs/results/device_call.sh --site
in_tree dbg 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_dbg.log" 2>&1
echo "build: exit $? ${SECONDS}s"; tail -3 "$OUT/r/build_dbg.log"; pack
for t in "tests/test_many_tokens_gpu.py::test_stop_ids_end_the_launch_mid_way[1]" \
         "tests/test_many_tokens_gpu.py::test_an_id_outside_the_vocabulary_is_refused_on_the_device"; do
  name=$(echo "$t" | sed 's/.*:://; s/\[.*//')
  in_tree dbg 120 python3 -m pytest -q -x -s -m gpu -p no:cacheprovider -o faulthandler_timeout=60 "$t" > "$OUT/r/$name.txt" 2>&1
  echo "$name: exit $? ${SECONDS}s"; grep -E "passed|failed" "$OUT/r/$name.txt" | head -3
  grep -E "^(INIT|EARLY|STUCK)" "$OUT/r/$name.txt" | sort | uniq -c | sort -rn | head -12; pack
done
true
