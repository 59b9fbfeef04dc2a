#!/usr/bin/env bash
# Session 26 call 4 (issue 19): the batch DeltaNet core's state pulled into L2 by one bulk prefetch a unit
# (cp.async.bulk.prefetch.L2, 64 KB, one thread, no registers) before the core: new = as the layer's in-proj
# begins; varb = two phases earlier (the previous layer's gate/up); prev = 26f0711. B = 1 kernels unchanged.
# Predicted (B = 8): the DN core 190 -> ~160-170 µs a step (its state loads hit L2), the in-proj +0-10 (the
# 8 MB a layer share the HBM with its weights), tg128 B = 8 +1-3%; the bits identical (a prefetch only).
set -u
source docs/results/device_call.sh --site
for side in prev varb; do in_tree $side 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 & done
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"
for side in prev new varb; do in_tree $side 90 python3 $ROOT/tests/gpu/ab_commits.py snapshot /tmp/snap_$side.pt > "$OUT/r/snap_$side.log" 2>&1; done
for side in new varb; do echo "$side bits:"; python3 tests/gpu/ab_commits.py compare /tmp/snap_prev.pt /tmp/snap_$side.pt | tee "$OUT/r/bits_$side.txt" | tail -4; done
echo "bits: ${SECONDS}s"; pack
i=0
for side in prev new varb varb new prev; do
  i=$((i + 1))
  [ $SECONDS -lt 540 ] || break
  in_tree $side 80 python3 $ROOT/tests/gpu/batch_check.py --tiers megakernel --skip-checks --json "$OUT/r/batch_${i}_$side.json" \
      > "$OUT/r/batch_${i}_$side.log" 2>&1
  echo "$side: exit $? ${SECONDS}s"; grep -E "phases B=(1|8)|^tg" "$OUT/r/batch_${i}_$side.log" | sed -E "s/'seconds'[^,]*, //; s/, 'tier'[^}]*//; s/'steps': 128, //"
  pack
done
true
