#!/usr/bin/env bash
# Session 26 call 3 (issue 21): programmatic dependent launch for the prefill's own kernels (b-tree: every kernel of
# prefill.cu launched with the attribute, griddepcontrol.wait first) against 26f0711 (prev).
# Predicted: the pp520 graph 2,673 -> 2,600-2,640 µs (-30 to -70: ~124 of our launches, each starting as the kernel
# before it ends instead of after its grid completes; the 66 µs of idle between kernels and our kernels' ramps);
# pp64 a larger share (-3 to -5%); the bits unchanged (the graph-replay and every-layer tests; memcheck clean).
set -u
source docs/results/device_call.sh --site
HERE=docs/results/2026-11-26-h100-s26
in_tree new 260 python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt"; pack
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 120 python3 $ROOT/$HERE/pipeline_pieces.py "$OUT/r/graph_${i}_$side.json" 64 520 1024 > "$OUT/r/graph_${i}_$side.txt" 2>&1
  echo "graph $i $side: exit $? ${SECONDS}s"; grep median "$OUT/r/graph_${i}_$side.txt"; pack
done
for side in new prev; do
  i=$((i + 1))
  [ $SECONDS -lt 480 ] || break
  in_tree $side 60 python3 -m compare prefill --pp 64,520,1024 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-200; pack
done
true
