#!/usr/bin/env bash
# Session 37, call 2 (the session's last device time: ~620 s left after failed starts, so B = 8 only; the batch-1
# kernels' SASS is identical in all three trees). Trees: main (.ab_main, e56bd4e: 4f0e4e6's kernels), new (this
# checkout: a batch's DeltaNet core at 16 lanes a state row, 8 k a lane: each row's two dots a 4-level half-warp sum,
# 32 shuffles a warp, not 80; v32 measured it equal when the core's state came through L2, since v34 the rows come from
# shared memory and the unit's rows stretch is 2.2 µs of compute), diag (.ab_diag: main + block 0's stamps inside the
# batch in-proj and gate/up phases: normed, chunks landed, released, done; a diagnostic).
# Predicted: bits identical (the half-warp sums are warp_sum's last four levels of the same pairs); tg128 b8 +0 to +2%,
#  the diag anatomy splits the B = 8 gate/up's ~5.2 µs; stream-only at B = 8
# ~600-650 µs a step (never measured).
set -u
source docs/results/device_call.sh --site
for side in new main diag; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; tail -qn 1 $OUT/r/build_*.log | cut -c1-150; pack
for side in main new; do
  in_tree $side 60 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_$side.pt > "$OUT/r/snapshot_$side.txt" 2>&1
  echo "snapshot $side: exit $? ${SECONDS}s"
done
python3 tests/gpu/ab_commits.py compare /tmp/snap_main.pt /tmp/snap_new.pt > "$OUT/r/bits_new.txt" 2>&1
echo "bits new: exit $?"; tail -3 "$OUT/r/bits_new.txt" | cut -c1-200; pack
bench() {  # n side
  if [ $((330 - SECONDS)) -lt 40 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 40 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
anatomy() {  # side batch schedule
  if [ $((330 - SECONDS)) -lt 30 ]; then echo "anatomy $1 b$2 $3: skipped"; return; fi
  in_tree $1 40 python3 -m megakernel anatomy --batch $2 --context 16 --schedule $3 > "$OUT/r/anatomy_$1_b$2_$3.txt" 2>&1
  echo "anatomy $1 b$2 $3: exit $? ${SECONDS}s"; grep -E "a step|block 0:" $OUT/r/anatomy_$1_b$2_$3.txt | cut -c1-160; pack
}
anatomy diag 8 ring
anatomy main 8 stream-only
if [ $((330 - SECONDS)) -gt 45 ]; then
  in_tree new 45 python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
  echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| tg128|x ' $OUT/r/bench_triton_b8.txt | cut -c1-120; pack
fi
true
