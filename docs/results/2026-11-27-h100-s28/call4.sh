#!/usr/bin/env bash
# Session 28 call 4 (issue 20; session 27's prepared next_call_core_ncu.sh, with a short context too): ncu's warp-state
# samples per SASS instruction of one batch-1 decode launch at 128 and at 32,768 tokens of context (the attention core's
# scoring: ~0.5-0.7 µs a group of two positions against ~0.3 of dependent latency, NOTES v25). Diagnostic only.
set -u
source docs/results/device_call.sh --site
HERE=$ROOT/docs/results/2026-11-27-h100-s28
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"
for ctx in 128 32768; do
  in_tree new 200 $NCU --kernel-name regex:mk_decode --launch-skip 2 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SchedulerStats --section SpeedOfLight --import-source yes \
      -o "$OUT/r/core_d$ctx" python3 $HERE/ncu_core_step.py $ctx > "$OUT/r/ncu_d$ctx.log" 2>&1
  echo "ncu d$ctx: exit $? ${SECONDS}s"; tail -2 "$OUT/r/ncu_d$ctx.log"
  $NCU -i "$OUT/r/core_d$ctx.ncu-rep" --page details > "$OUT/r/details_d$ctx.txt" 2>&1
  $NCU -i "$OUT/r/core_d$ctx.ncu-rep" --page source --csv --print-source cuda,sass > "$OUT/r/source_d$ctx.csv" 2>&1
  gzip -9 "$OUT/r/source_d$ctx.csv"; rm -f "$OUT/r/core_d$ctx.ncu-rep"
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible" "$OUT/r/details_d$ctx.txt" | head -8
  pack
done
true
