#!/usr/bin/env bash
# Session 36, call 4. Issue 19 on main (this checkout, B = 4-8 kernels the measured e085256's, B = 1-3 c9135a8's) against
# c9135a8 (.ab_base) at B = 5, 6 (the ring path there not yet measured), then how many ring slots pay at B = 1, 4, 6, 8
# (call 3: at B = 8 10 slots +1.21% over 11, one process, bits the same: fewer copies in flight when a block arrives at a
# barrier, a shorter release fence, v30?). Predicted: b5 / b6 +1 to +3%; slots: B = 8 10 >= 11, 9 within 1% of 10; B = 1
# 12 best (v9), B = 4 / 6 between.
set -u
source docs/results/device_call.sh --site
for side in new base; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
slots() {  # batch variants...
  local B=$1; shift
  if [ $((450 - SECONDS)) -lt 60 ]; then echo "slots b$B: skipped"; return; fi
  in_tree new 90 python3 -m compare ab "$@" --batch $B --tg 64 --rounds 3 --json "$OUT/r/ab_slots_b$B.json" > "$OUT/r/ab_slots_b$B.txt" 2>&1
  echo "slots b$B: exit $? ${SECONDS}s"; grep -E '^\| s' "$OUT/r/ab_slots_b$B.txt" | cut -c1-120; pack
}
slots 8 s11 s10:ring_slots=10 s9:ring_slots=9
slots 1 s12 s11:ring_slots=11 s10:ring_slots=10
slots 4 s12 s11:ring_slots=11 s10:ring_slots=10
slots 6 s11 s10:ring_slots=10 s9:ring_slots=9
bench() {  # n side
  if [ $((450 - SECONDS)) -lt 50 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 60 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 5,6 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 base; bench 2 new
true
