#!/usr/bin/env bash
# Session 27 call 8 (diagnostics for the next session, no change): every kernel of a pp520 and a pp4096 prefill
# by name (kernel_table.py), and `python -m megakernel anatomy` of batch 1 at a 16-token context after v25.
set -u
source docs/results/device_call.sh --site
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: ${SECONDS}s"
in_tree new 150 python3 $ROOT/docs/results/2026-11-27-h100-s27/kernel_table.py "$OUT/r/kernels.json" 520 4096 > "$OUT/r/kernels.txt" 2>&1
echo "kernels: exit $? ${SECONDS}s"; grep -v TileLang "$OUT/r/kernels.txt" | head -40 | cut -c1-150; pack
in_tree new 100 python3 -m megakernel anatomy --context 16 --steps 8 > "$OUT/r/anatomy_d16.txt" 2>&1
echo "anatomy: exit $? ${SECONDS}s"; grep -v TileLang "$OUT/r/anatomy_d16.txt" | cut -c1-150; pack
true
