#!/usr/bin/env bash
# Session 26 call 7 (issue 19; the session's last ~270 s of device time): the batch core's state prefetch one phase
# earlier than kept: vard = as the previous layer's out-proj begins (its ring waits too at B = 8, and the out-proj moves
# 4.2 MB in ~3.3 µs a layer: ~1.3 TB/s, HBM room) against new = main (e1ff963's: as the gate/up begins).
# Predicted: equal within ±1% (the out-proj +10-20 µs a step, the gate/up back to prev's 116, the core as new's).
set -u
source docs/results/device_call.sh --site
in_tree vard 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_vard.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; pack
i=0
for side in new vard vard new; do
  i=$((i + 1))
  in_tree $side 60 python3 $ROOT/tests/gpu/batch_check.py --tiers megakernel --skip-checks --json "$OUT/r/batch_${i}_$side.json" \
      > "$OUT/r/batch_${i}_$side.log" 2>&1
  echo "$side: exit $? ${SECONDS}s"; grep -E "phases B=8|^tg" "$OUT/r/batch_${i}_$side.log" | sed -E "s/'seconds'[^,]*, //; s/, 'tier'[^}]*//; s/'steps': 128, //"
  pack
done
true
