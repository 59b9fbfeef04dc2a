#!/usr/bin/env bash
# Session 28 call 3 (issue 21; call 2 ran the profiler part, its ncu skipped all 6 launches): where the megakernel rule's time goes. Call 1: correct (errors = fla's), but 60 µs a
# layer at 520 rows and 384 at 4,096 against the predicted 12-16 / 70-90 (FlashQLA 31 / 102): from the two lengths,
# chunk_state ~5 µs a chunk and chunk_intra ~14 µs a wave, both ~5x the estimate. Each kernel timed alone (torch
# profiler), then ncu (full set, source-level stall reasons) of both kernels at 520 rows.
set -u
source docs/results/device_call.sh --site
HERE=$ROOT/docs/results/2026-11-27-h100-s28
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"
true

in_tree new 300 $NCU --kernel-name regex:gdr_chunk --launch-skip 2 --launch-count 2 --set full --import-source yes \
    -o "$OUT/r/rule" python3 $HERE/rule_profile.py ncu > "$OUT/r/ncu.log" 2>&1
echo "ncu: exit $? ${SECONDS}s"; tail -3 "$OUT/r/ncu.log"
$NCU -i "$OUT/r/rule.ncu-rep" --page details --csv > "$OUT/r/details.csv" 2>&1
$NCU -i "$OUT/r/rule.ncu-rep" --page source --csv --print-source sass > "$OUT/r/source.csv" 2>&1
$NCU -i "$OUT/r/rule.ncu-rep" --page details > "$OUT/r/details.txt" 2>&1
echo "exports: ${SECONDS}s"; wc -l "$OUT"/r/*.csv
gzip -9 "$OUT/r/source.csv"; rm -f "$OUT/r/rule.ncu-rep"
grep -E "gdr_chunk|Duration|Warp Cycles Per Issued|Issue Slots Busy|Registers|Achieved Occupancy|Stall|Compute \(SM\)|Memory Throughput" "$OUT/r/details.txt" | head -60 | cut -c1-160
pack
true
