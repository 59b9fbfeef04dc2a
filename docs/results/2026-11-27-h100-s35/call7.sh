#!/usr/bin/env bash
# Session 35, call 7 (issue 19's per-part time at B = 8, after session 34's int8 argmax and this session's compacted
# lists): `python -m megakernel anatomy` at B = 8 and at batch 1, 16-token contexts, on main. Predicted: a B = 8 step
# ~850 µs (9,300-9,400 tok/s), the layers' phases as in s33 (DeltaNet ~30 µs a layer, attention ~29), the lm_head's
# share ~850 less the layers and the restart.
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
echo "build: exit $? ${SECONDS}s"
for b in 8 1; do
  in_tree new 120 python3 -m megakernel anatomy --batch $b --context 16 > "$OUT/r/anatomy_b$b.txt" 2>&1
  echo "anatomy b$b: exit $? ${SECONDS}s"; grep -v TileLang "$OUT/r/anatomy_b$b.txt" | cut -c1-160; pack
done
true
