#!/usr/bin/env bash
# Session 37, call 1: session 36's prepared validation (next_call_validate.sh), shortened to fit with the Triton ratio
# and an anatomy; three trees: 4f0e4e6 (.ab_main: session 36's last), 17d34a7 (.ab_base: the B = 4-8 kernels session 36
# measured), and the checkout (new: 4f0e4e6 + a batch lm_head's scale / err loads issued at each item's start instead of
# after its chunks_done, ~15 items a block: predicted b8 +0.5 to +1.8%, B = 1 unchanged: its kernels are not touched). The
# review mends had not run on a GPU: the later units' L2 prefetch at B = 4-8 restored (at full grid no iteration),
# batch_ring_slots' default clamped to what fits, the 4B's static_assert, StepTimes' int64 stamps.
# Predicted: the batch GPU file passes (73 + the anatomy test); tg128 b8 / b4 equal to 17d34a7 within 0.5%, batch 1
# equal; Triton ~5,370 and the megakernel ~9,700-9,800 at B = 8 in one run (~1.82x); the anatomy's per-block columns
# now exact ns (the means move by < 0.1 µs). (The stream-only anatomy first planned here moved to call 2.)
set -u
source docs/results/device_call.sh --site
for side in new main base; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 260 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=250 tests/test_batch_gpu.py \
    > "$OUT/r/tests_batch.txt" 2>&1
echo "batch: exit $? ${SECONDS}s"; tail -2 "$OUT/r/tests_batch.txt" | cut -c1-300; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 60 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 70 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,4,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 base; bench 2 main; bench 3 new
if [ $((585 - SECONDS)) -gt 45 ]; then
  in_tree new 60 python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
  echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| tg128|x ' $OUT/r/bench_triton_b8.txt | cut -c1-120; pack
fi
for sched in ring; do
  if [ $((585 - SECONDS)) -lt 30 ]; then echo "anatomy $sched: skipped"; continue; fi
  in_tree new 40 python3 -m megakernel anatomy --batch 8 --context 16 --schedule $sched > "$OUT/r/anatomy_b8_$sched.txt" 2>&1
  echo "anatomy $sched: exit $? ${SECONDS}s"; grep -E "a step" $OUT/r/anatomy_b8_$sched.txt | cut -c1-150; pack
done
bench 4 main; bench 5 new; bench 6 base
true
