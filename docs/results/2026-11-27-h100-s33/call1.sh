#!/usr/bin/env bash
# Session 33, call 1 (prepared in session 32): branch variant-dn-core-ll (batch 1's DeltaNet core polls its in-proj inputs as
# tagged 64-bit words, flags in the data, instead of waiting for the in-proj's barrier; NOTES v30) against main.
# Run from a checkout of the branch ("new"), with main archived as .ab_main (carry .whl, .qla, COMMIT, .ab_main):
#   git checkout variant-dn-core-ll && rm -rf .ab_main && mkdir .ab_main && git archive main | tar -x -C .ab_main \
#     && rm -rf .ab_main/docs && git rev-parse --short main > .ab_main/COMMIT && git rev-parse --short HEAD > COMMIT
# Predicted: bits identical (the core reads the same values); tg128 +1 to +3% (per DeltaNet layer the in-proj's exit,
# ~1.1 µs, and the core's input round trip after it, less one poll's visibility: ~0.5-1.2 µs x 18); tg128 b8 equal
# (the batch kernels are unchanged); every test passes, nothing hangs (faulthandler names a hang after 100 s).
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
for side in main new; do
  in_tree $side 60 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_new.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -3 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
in_tree new 200 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=100 tests/test_many_tokens_gpu.py \
    tests/test_megakernel.py -k "refused or refusal or stopped or teacher or the_clock or grid" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests.txt" | cut -c1-200; pack
n=0
for side in main new main new; do
  n=$((n + 1))
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$n $side: skipped"; continue; fi
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,8 --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${n}_$side.txt | cut -c1-110; pack
done

for side in new main; do
  if [ $((585 - SECONDS)) -lt 30 ]; then echo "anatomy $side: skipped"; continue; fi
  in_tree $side 40 python3 -m megakernel anatomy --batch 1 --context 16 > "$OUT/r/anatomy_$side.txt" 2>&1
  echo "anatomy $side: exit $? ${SECONDS}s"; pack
done

true
