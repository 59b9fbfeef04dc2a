#!/usr/bin/env bash
# Session 33, call 5 (issue 19): ncu's warp-state samples per source line of one B = 8 decode launch (16-token prompts),
# the first profile of a batch launch: where the compute warps of the tensor-core phases and of the batch DeltaNet core
# (6.9 µs a layer against batch 1's 2.9; call 3's stalls: the ring full ~186 µs a step, most of it while the cores and
# the out-projections run) spend their time. Diagnostic only. Predicted: dn_core_heads' samples mostly long scoreboard
# on the state rows' loads and the conv input, the mma phases' on chunks_done's and the partials' block barriers.
set -u
source docs/results/device_call.sh --site
HERE=$ROOT/docs/results/2026-11-27-h100-s33
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"
in_tree new 200 $NCU --kernel-name regex:mk_decode --launch-skip 2 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SchedulerStats --section SpeedOfLight --import-source yes \
    -o "$OUT/r/b8" python3 $HERE/ncu_batch_step.py 8 > "$OUT/r/ncu_b8.log" 2>&1
echo "ncu b8: exit $? ${SECONDS}s"; tail -3 "$OUT/r/ncu_b8.log"
$NCU -i "$OUT/r/b8.ncu-rep" --page details > "$OUT/r/details_b8.txt" 2>&1
$NCU -i "$OUT/r/b8.ncu-rep" --page source --csv --print-source cuda,sass > "$OUT/r/source_b8.csv" 2>&1
gzip -9 "$OUT/r/source_b8.csv"; rm -f "$OUT/r/b8.ncu-rep"
grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible" "$OUT/r/details_b8.txt" | head -8
pack
true
