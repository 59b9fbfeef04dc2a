#!/usr/bin/env bash
# Session 44, call 2 (issue 21): the candidate tree that call 1 picked (CAND: a .ab_<CAND> archive) against main
# (new) by `compare bench`: pp520 and pp4096 alternating (new CAND CAND new, 10 repeats each), then pp32768 once
# each; before them the candidate's GPU tests (TESTS: a pytest -k filter over the prefill file; empty: none).
# Run as CAND=x TESTS='...' END=580 bash docs/results/2026-12-07-h100-s44/call2.sh (carry .whl .qla COMMIT .ab_$CAND)
set -u
source docs/results/device_call.sh --site
build_trees new "$CAND"
[ -n "${TESTS:-}" ] && gpu_tests "$CAND" "$CAND" 150 "$TESTS"
i=0
for side in new "$CAND" "$CAND" new; do
  i=$((i + 1))
  [ $((END - SECONDS)) -lt 70 ] && { echo "bench $i $side: skipped"; continue; }
  in_tree $side 80 python3 -m compare bench --tiers megakernel --repeats 10 --no-progress --pp 520,4096 \
      --tg 0 --depth 0 --json "$OUT/r/bench_pp_${i}_$side.json" > "$OUT/r/bench_pp_${i}_$side.txt" 2>&1
  echo "bench $i $side: exit $? ${SECONDS}s"; grep -E '\| pp' "$OUT/r/bench_pp_${i}_$side.txt" | cut -c1-100; pack
done
for side in new "$CAND"; do
  i=$((i + 1))
  [ $((END - SECONDS)) -lt 80 ] && { echo "bench $i $side pp32768: skipped"; continue; }
  in_tree $side 75 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 32768 \
      --tg 0 --depth 0 --json "$OUT/r/bench_pp_${i}_$side.json" > "$OUT/r/bench_pp_${i}_$side.txt" 2>&1
  echo "bench $i $side: exit $? ${SECONDS}s"; grep -E '\| pp' "$OUT/r/bench_pp_${i}_$side.txt" | cut -c1-100; pack
done
true
