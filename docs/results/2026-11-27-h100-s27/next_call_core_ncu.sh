#!/usr/bin/env bash
# For a next session (issue 20; written at the end of session 27, NOT RUN): where the attention core's scoring spends
# its ~0.5 µs a group of two positions at d32768 (NOTES v25: the K/V chunks are in, the warps finish together, a group's
# dependent latency is ~0.3 µs and its issue ~0.15; the weight broadcasts were not it). ncu's warp-state sampling per
# SASS instruction of one decode launch at a 32,768-token context (`-lineinfo` is on): the stall reasons of the
# instructions of gated_attention.cuh's att_group (lds128 / shuffles: MIO throttle or short scoreboard; the FMA chains:
# wait; the exps: MUFU), against the kernel's whole.
# Before the call: nothing to carry but [".whl", ".qla"].
set -u
source docs/results/device_call.sh --site
HERE=$ROOT/docs/results/2026-11-27-h100-s27
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: ${SECONDS}s"
in_tree new 300 $NCU --kernel-name regex:mk_decode --launch-skip 2 --launch-count 1 --clock-control none \
    --section SourceCounters --section WarpStateStats --section SchedulerStats --import-source yes -o "$OUT/r/core" \
    python3 $HERE/ncu_core_step.py > "$OUT/r/ncu.log" 2>&1
echo "ncu: exit $? ${SECONDS}s"; tail -3 "$OUT/r/ncu.log"
$NCU -i "$OUT/r/core.ncu-rep" --page details --csv > "$OUT/r/details.csv" 2>&1
$NCU -i "$OUT/r/core.ncu-rep" --page source --csv --print-source cuda,sass > "$OUT/r/source.csv" 2>&1
echo "exports: ${SECONDS}s"; wc -l "$OUT"/r/*.csv
gzip -9 "$OUT/r/source.csv"; rm -f "$OUT/r/core.ncu-rep"   # (the report itself is too large to bring back)
grep -iE "stall|warp cycles|issued" "$OUT/r/details.csv" | head -40 | cut -c1-200
pack
true
