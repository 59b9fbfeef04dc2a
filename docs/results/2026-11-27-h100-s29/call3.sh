#!/usr/bin/env bash
# Session 29 call 3 (issue 21): one row's prompt ids checked by bind() as it copies them (new, 5806d78: CPU ids scanned
# on the host, device ids by the bind launch with one sync) against the interface's aminmax + stack + tolist + copy
# (prev, 0699af8), alternating prev new new prev: compare prefill --pp 64,520; prelude_profile.py on both (the GPU's
# idle before the replay, every step of the host path); the bind / refusal / queued / graph GPU tests on new.
# Predicted (call 2: the interface's _check_ids 132 µs of a 290 µs prelude with GPU ids, 91 of 246 with CPU ids; bind
# 48): the prelude 290 -> ~190 µs with GPU ids (bind +10-20 for its sync, _check_ids -110), ~-70 with CPU ids; pp520
# +3-4% (2.77 -> ~2.67 ms of call), pp64 +5-7%.
# Before the call: .ab_prev = git archive 0699af8 (+ prelude_profile.py); carry [".whl", ".qla", ".ab_prev"].
set -u
source docs/results/device_call.sh --site
in_tree prev 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_prev.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
wait
echo "builds: ${SECONDS}s"; tail -1 "$OUT/r/build_new.log"
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 90 python3 -m compare prefill --pp 64,520 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-200; pack
done
for side in new prev; do
  [ $SECONDS -gt 420 ] && break
  mkdir -p "$OUT/r/profile_$side"
  in_tree $side 90 python3 docs/results/2026-11-27-h100-s29/prelude_profile.py "$OUT/r/profile_$side" 520 \
      > "$OUT/r/profile_$side.txt" 2>&1
  echo "profile $side: exit $? ${SECONDS}s"; grep -E "pp520|gpu_prelude|_check_ids|bind|host_call" "$OUT/r/profile_$side.txt"; pack
done
[ $SECONDS -lt 500 ] && in_tree new $((590 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider \
    -k "bind or outside_the_vocabulary or queued or graph_replay or refusals" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests.txt"; pack
true
