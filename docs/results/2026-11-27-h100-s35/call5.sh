#!/usr/bin/env bash
# Session 35, call 5 (issue 19): where a batch's next DeltaNet state is prefetched into L2. main (.ab_main): as the
# gate/up of the layer before begins (NOTES v24). att (.ab_att, branch variant-prefetch-at-att-core): after an
# attention layer, as the attention core begins instead (its 2 x B units leave the other blocks waiting and, once the
# ring is full, the HBM quiet: s33's B = 8 anatomy, attention gate/up 7.9 µs against batch 1's 4.7). new (branch
# variant-prefetch-at-core): as every previous core begins (DeltaNet cores too, whose ring also stops ~3-4 µs, but
# whose own 64 KB a block of state in and out of L2 the prefetch competes with). Alternating main att new, twice.
# Predicted: att B = 8 +1 to +2% (5 gate/ups ~2.7 µs shorter), B = 4 +0.5 to +1%, batch 1 equal (no prefetch there);
# new: -2 to +3% (the DeltaNet cores may pay more than the gate/ups save).
set -u
source docs/results/device_call.sh --site
for side in new main att; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,4,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 att; bench 3 new; bench 4 main; bench 5 att; bench 6 new
true
