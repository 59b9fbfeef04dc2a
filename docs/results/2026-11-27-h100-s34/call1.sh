#!/usr/bin/env bash
# Session 34, call 1: session 33's two prepared batch-core variants in one call, three trees side by side:
#   main (.ab_main: main at cfcc2e3), cf (.ab_cf: variant-core-conv-first, 2720598), new (this checkout:
#   variant-core-rows16, 6213ba9, which is conv-first plus 16 lanes a state row). Carry .whl .qla COMMIT .ab_main .ab_cf.
#   git checkout variant-core-rows16 && for s in main:main cf:variant-core-conv-first; do d=.ab_${s%%:*}; rm -rf $d;
#     mkdir $d; git archive ${s#*:} | tar -x -C $d; rm -rf $d/docs; git rev-parse --short ${s#*:} > $d/COMMIT; done
#   git rev-parse --short HEAD > COMMIT
# Predicted (s33's next_call_*.sh): cf against main: bits identical, tg128 b8 +1 to +2.5%, batch 1 equal;
#   new against cf: batch rows' bits change within the bf16 bounds (the batch GPU tests pass), tg128 b8 +1.5 to +3%,
#   B = 4 between, batch 1 equal. Also main's test_the_clock (its DeltaNet-stamp assertions never ran on a GPU).
set -u
source docs/results/device_call.sh --site
for side in new cf main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
for side in main cf new; do
  in_tree $side 60 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_cf.pt" > "$OUT/r/bits_cf.txt" 2>&1
echo "bits main/cf: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits_cf.txt"
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_cf.pt" "$OUT/r/snap_new.pt" > "$OUT/r/bits_new.txt" 2>&1
echo "bits cf/new: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits_new.txt"; rm -f "$OUT"/r/snap_*.pt; pack
bench() {  # n side
  if [ $((590 - SECONDS)) -lt 50 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,4,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 cf; bench 3 new
in_tree new 150 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 tests/test_batch_gpu.py \
    -k "megakernel" > "$OUT/r/tests_new.txt" 2>&1
echo "tests new: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_new.txt" | cut -c1-200; pack
bench 4 main; bench 5 cf; bench 6 new
if [ $((590 - SECONDS)) -gt 40 ]; then
  in_tree main 40 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k the_clock \
      > "$OUT/r/tests_clock_main.txt" 2>&1
  echo "clock main: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_clock_main.txt" | cut -c1-200; pack
fi
true
