#!/usr/bin/env bash
# Session 39, call 2: main after the merge of s38-norm-on-main (467285c: a batch's in-projections and gate/up read the
# norm's x (1 + w) unscaled, each dot times its row's 1 / rms in the epilogue).
#   1. the Triton tier and the megakernel at B = 8 in one run (issue 19's ratio, main's own figure)
#   2. `compare ab` at B = 8 (one process, interleaved, 3 rounds): the tier's attributes, free to change: 9 and 8 ring
#      slots from 4 rows on (batch_ring_slots; s36 measured 10 +1.00% and 9 +1.24% against 11, before the norm change),
#      64 and 160 attention positions per split (s31 measured 16 and 8 slower at B = 8; never more than 32: at tg128
#      after a 16-token prompt a row's positions run 16..144, so 32 gives 1-5 units a kv head, 64 1-3, 160 one)
#   3. the anatomy at B = 8 (16-token context), main's: what the norm change moved, for the next lever
#   4. the batch GPU file, whole, on main
# Predicted: ratio ~1.86-1.88x (the norm +3.2% over call 1's 9,675); slots 9 / 8 within ±0.5% of 10; positions per
# split 64 −0.5 to +1% (fewer split merges, longer units), 160 −2 to +1% (16-48 units: longer cores on fewer blocks).
# Setup: git rev-parse --short HEAD > COMMIT (carry .whl .qla COMMIT)
set -u
source docs/results/device_call.sh --site
build_trees new
triton_b8 new 150
in_tree new 120 python3 -m compare ab --tiers megakernel --batch 8 --rounds 3 --reps 3 --tg 128 \
    base s9:batch_ring_slots=9 s8:batch_ring_slots=8 p64:positions_per_split=64 p160:positions_per_split=160 \
    --json "$OUT/r/ab_attrs_b8.json" > "$OUT/r/ab_attrs_b8.txt" 2>&1
echo "ab attrs: exit $? ${SECONDS}s"; tail -12 "$OUT/r/ab_attrs_b8.txt" | cut -c1-160; pack
if [ $((470 - SECONDS)) -gt 45 ]; then
  in_tree new 40 python3 -m megakernel anatomy --batch 8 --context 16 --schedule ring > "$OUT/r/anatomy_b8_ring.txt" 2>&1
  echo "anatomy: exit $? ${SECONDS}s"; cat "$OUT/r/anatomy_b8_ring.txt" | cut -c1-160; pack
fi
if [ $((470 - SECONDS)) -gt 60 ]; then
  in_tree new $((470 - SECONDS)) python3 -m pytest -q tests/test_batch_gpu.py > "$OUT/r/tests_batch_gpu.txt" 2>&1
  echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_batch_gpu.txt"; pack
fi
true
