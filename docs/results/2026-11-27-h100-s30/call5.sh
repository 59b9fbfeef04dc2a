#!/usr/bin/env bash
# Session 30 call 5 (issue 20): which blocks arrive last at a batch-1 decode step's barriers, and whether they are the
# same ones each time (block_lateness.py, 32 steps, 16-token context; then 64 steps at 128 tokens). s27 call 8's
# anatomy: a phase's last block arrives 0.2-1.0 µs after its median, and in 38-75% of the phases it is one of the two
# attention-unit blocks (0, 1), against 1.5% by chance. Predicted: blocks 0 and 1 late in most kinds of phase by
# 0.3-1 µs; if so, a step's sum of (last − 2nd last) over its 120 barriers is the most a lighter share of rows for
# them could give (a weighted row partition): worth building above ~20 µs (3%).
set -u
source docs/results/device_call.sh --site
HERE=docs/results/2026-11-27-h100-s30
timeout 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; tail -n2 "$OUT/r/build.log" | cut -c1-300
timeout 200 python3 $HERE/block_lateness.py "$OUT/r/lateness_d16.json" 32 16 > "$OUT/r/lateness_d16.txt" 2>&1
echo "lateness d16: exit $? ${SECONDS}s"; grep -v Warning "$OUT/r/lateness_d16.txt" | tail -40 | cut -c1-250; pack
timeout 120 python3 $HERE/block_lateness.py "$OUT/r/lateness_d128.json" 64 128 > "$OUT/r/lateness_d128.txt" 2>&1
echo "lateness d128: exit $? ${SECONDS}s"; grep -v Warning "$OUT/r/lateness_d128.txt" | head -16 | cut -c1-250
pack
true
