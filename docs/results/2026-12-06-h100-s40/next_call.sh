#!/usr/bin/env bash
# Prepared in session 40, NOT RUN: the next session's first call (issue 21), on main after the folded norms.
#   new   main (caf9912's fold with 20cb697's mends: add_rms_norm's bf16-x branch removed, x without eps refused,
#         refold in place; its new GPU tests: silu_mul given the residual, a norm changed in place folded again,
#         graph replay over poison at 320 rows, opcheck of the folded calls, the sanitizers at 300 tokens; e76467b's
#         shared block reduction of add_rms_norm and the folded norms)
#   prev  .ab_prev = git archive 1f1d880 (main before the fold)
# Runs: the new tests and the prefill GPU file on new (all but the sanitizers); `compare bench --pp 520,4096,32768`
# prev new new prev (issue 21's rows with their floors; pp32768 not yet measured with the fold); then, if time is left,
# memcheck and synccheck of the prefill at 300 tokens (our kernels).
# Predicted: every test passes (the kernels are calls 3-4's but for the removed branch); pp520 +2-3% as calls 3-4,
# pp4096 equal to +1%, pp32768 +0.5-1% (30 norms of ~80 µs each at 32k rows, less silu_mul's extra reads).
# Setup (from main's checkout): rm -rf .ab_prev && mkdir .ab_prev && git archive 1f1d880 | tar -x -C .ab_prev &&
#   rm -rf .ab_prev/docs && echo 1f1d880 > .ab_prev/COMMIT; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_prev"]
set -u
source docs/results/device_call.sh --site
build_trees new prev
in_tree new 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_megakernel.py \
    -k "not sanitizer and (prefill or opcheck or prompt or conversation or graph_replay or silu_mul or changed_in_place)" \
    > "$OUT/r/tests_new.txt" 2>&1
echo "tests new: exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_new.txt"; pack
i=0
for side in prev new new prev; do
  i=$((i + 1))
  [ $((585 - SECONDS)) -lt 90 ] && { echo "bench $i $side: skipped"; continue; }
  in_tree $side $((i == 1 ? 150 : 90)) python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 520,4096,32768 \
      --tg 0 --depth 0 --json "$OUT/r/bench_pp_${i}_$side.json" > "$OUT/r/bench_pp_${i}_$side.txt" 2>&1
  echo "bench $i $side: exit $? ${SECONDS}s"; grep -E '\| pp' "$OUT/r/bench_pp_${i}_$side.txt" | cut -c1-120; pack
done
for tool in memcheck synccheck; do
  [ $((585 - SECONDS)) -lt 100 ] && { echo "$tool: skipped"; continue; }
  in_tree new $((580 - SECONDS)) python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel_prefill.py \
      -k "sanitizer and $tool and 300" > "$OUT/r/sanitizer_${tool}_300.txt" 2>&1
  echo "$tool 300: exit $? ${SECONDS}s"; tail -2 "$OUT/r/sanitizer_${tool}_300.txt"; pack
done
true
