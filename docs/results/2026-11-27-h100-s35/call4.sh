#!/usr/bin/env bash
# Session 35, call 4: the stream rows (every step of tg128 in one many-token launch, each token read as it comes) at
# batch 1 and 8, main c23a5b1 (the compacted batch argmax) against bd42b1c (.ab_main), alternating twice. At sm_90a the
# compaction took B = 8's many-token kernel from 80 / 92 to 156 / 128 B of spills (B = 2-7: fewer), so the no-sync
# rows of call 2 (one launch a step) do not say what the streamed batch lost or gained. Predicted: batch 1 equal (the
# same kernel), B = 8 stream within -1% .. +1% (pass 2's round saved against the spills' traffic).
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 50 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --stream --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
true
