#!/usr/bin/env bash
# Session 26 call 5 (issue 19): call 4 again with the prefetch issued after the barrier that opens a phase (call 4 issued
# it in the barrier wait before: the bursts slowed the phase before, down +43 µs, out-proj +22): new = at the start of the
# layer's in-proj; varc = at the start of the previous layer's gate/up (where the ring fills: 2.8 µs a layer of producer wait). prev = 26f0711.
# Predicted (B = 8): the DN core 183 -> ~143 as in call 4; new: the in-proj +20-40 (8 MB a layer beside its weights),
# the down as prev: tg128 about equal; varc: the gate/up +0-20, tg128 B = 8 +1-3%. Bits: call 4 (a prefetch only).
set -u
source docs/results/device_call.sh --site
for side in prev varc; do in_tree $side 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 & done
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"
pack
i=0
for side in prev new varc varc new prev; do
  i=$((i + 1))
  [ $SECONDS -lt 540 ] || break
  in_tree $side 80 python3 $ROOT/tests/gpu/batch_check.py --tiers megakernel --skip-checks --json "$OUT/r/batch_${i}_$side.json" \
      > "$OUT/r/batch_${i}_$side.log" 2>&1
  echo "$side: exit $? ${SECONDS}s"; grep -E "phases B=(1|8)|^tg" "$OUT/r/batch_${i}_$side.log" | sed -E "s/'seconds'[^,]*, //; s/, 'tier'[^}]*//; s/'steps': 128, //"
  pack
done
true
