#!/usr/bin/env bash
# Session 40, call 2: call 1's last step again (it named `--tiers`; `compare ab` takes `--tier`): the tier's free
# attributes at B = 8 on main, in one `compare ab` run (3 rounds x 3 repeats): 9 and 8 ring slots from 4 rows on
# (batch_ring_slots; main: 10), 64 and 160 attention positions per split (main: 32).
# Predicted: within ±0.5% (s36 measured 9 +1.24% against 11 slots, before 10 was taken; s31: fewer positions slower).
source docs/results/device_call.sh --site; in_tree new 400 python3 -m compare ab --tier megakernel --batch 8 --rounds 3 --reps 3 --tg 128 base s9:batch_ring_slots=9 s8:batch_ring_slots=8 p64:positions_per_split=64 p160:positions_per_split=160 --json "$OUT/r/ab_attrs_b8.json" > "$OUT/r/ab_attrs_b8.txt" 2>&1; echo "ab: exit $? ${SECONDS}s"; tail -15 "$OUT/r/ab_attrs_b8.txt" | cut -c1-180; pack
