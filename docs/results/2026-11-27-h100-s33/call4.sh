#!/usr/bin/env bash
# Session 33, call 4: `compare ab --batch` (new) on the GPU: attention positions per split 32 (default) / 16 / 8 at
# B = 8 and B = 4 (tried only at batch 1 before: v9, v11); and the anatomy's stall column at a 4,096-token context.
# Predicted: 16 at B = 8 within -0.5..+1% (the attention layers' stalls, ~9 µs a layer at B = 8, shrink by what a
# shorter scoring saves, the merge grows), 8 slower (more units than blocks); bits equal (the split changes the
# summation order: a few logits may differ in the last bits, which the table shows).
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
for b in 8 4; do
  in_tree new 150 python3 -m compare ab --batch $b --rounds 3 --reps 3 base pps16:positions_per_split=16 \
      pps8:positions_per_split=8 --json "$OUT/r/ab_b$b.json" > "$OUT/r/ab_b$b.txt" 2>&1
  echo "ab b$b: exit $? ${SECONDS}s"; tail -6 "$OUT/r/ab_b$b.txt"; pack
done
if [ $((585 - SECONDS)) -gt 60 ]; then
  in_tree new 90 python3 -m megakernel anatomy --batch 1 --context 4096 > "$OUT/r/anatomy_b1_d4096.txt" 2>&1
  echo "anatomy d4096: exit $? ${SECONDS}s"; cut -c1-110 "$OUT/r/anatomy_b1_d4096.txt"; pack
fi
true
