#!/usr/bin/env bash
# Session 42 call 1 (issue 21): two prefill kernels against main (new = bdb9795's code, 76dccc0's), one short call (the
# pool was dry and failed starts took the budget). Trees:
#   att2  s41-attn-fresh-split (87fa8e2): prefill_attn_fresh, our own attention + output gate for a fresh prompt, 8 warps,
#         the key tiles split by parity (s41's next_call.sh; its 4-warp parent s41-attn-fresh is left for later)
#   dp    s42-dn-prep-rows (3b2ba65): dn_prep's conv blocks as 8 tokens x 256 channels, inputs through shared memory
# Predicted (the graph at pp520: prelude_profile.py's gpu_graph, median of 40 replays): att2 −75 to −85 µs, dp −40 to −70
# (dn_prep 8.7 → ~5 µs a layer: its L2 reads ~57 → ~18 MB a layer).
# Gates first: each variant's own kernel test (dp's new test also on main's kernel: the test itself); every layer at 520
# rows last, as time allows. END (default 585) is the second past which nothing new starts.
# Setup (main's checkout): for b in att2:s41-attn-fresh-split dp:s42-dn-prep-rows; do n=${b%%:*};
#   rm -rf .ab_$n && mkdir .ab_$n && git archive ${b#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs &&
#   git rev-parse --short ${b#*:} > .ab_$n/COMMIT; done; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_att2", ".ab_dp"]
set -u
END=${END:-585}
source docs/results/device_call.sh --site
build_trees new att2 dp
tests() {  # NAME SIDE LIMIT FILTER [TEST FILE: default the tree's own]
  [ $((END - SECONDS)) -lt $(($3 + 5)) ] && { echo "tests $1: skipped"; return; }
  in_tree "$2" "$3" python3 -m pytest -q -m gpu -p no:cacheprovider "${5:-tests/test_megakernel_prefill.py}" -k "$4" \
      > "$OUT/r/tests_$1.txt" 2>&1
  echo "tests $1: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_$1.txt"; pack
}
tests att2_kernel att2 60 "attn_fresh"
tests dp_kernel dp 60 "dn_prep"
tests new_dp_test new 50 "dn_prep_convolves" "$ROOT/.ab_dp/tests/test_megakernel_prefill.py"  # (dp's test, main's kernel)
i=0
graph() {  # SIDE
  i=$((i + 1))
  [ $((END - SECONDS)) -lt 30 ] && { echo "graph $i $1: skipped"; return; }
  mkdir -p "$OUT/r/prelude_${i}_$1"
  in_tree "$1" 40 python3 "$ROOT/docs/results/2026-11-27-h100-s29/prelude_profile.py" "$OUT/r/prelude_${i}_$1" 520 \
      > "$OUT/r/prelude_${i}_$1.txt" 2>&1
  echo "graph $i $1: exit $? ${SECONDS}s"; grep -E "gpu_graph" "$OUT/r/prelude_${i}_$1.txt" | head -1; pack
}
graph new; graph att2; graph dp; graph dp; graph att2; graph new
[ $((END - SECONDS)) -ge 50 ] && {
  in_tree att2 45 python3 "$ROOT/docs/results/2026-12-06-h100-s41/attn_fresh_bench.py" "$OUT/r" 520,1024,2048,4096,8192 \
      > "$OUT/r/attn_fresh_bench_att2.txt" 2>&1
  echo "attn_fresh bench att2: exit $? ${SECONDS}s"; tail -12 "$OUT/r/attn_fresh_bench_att2.txt"; pack
}
tests att2_layers att2 70 "every_layer_of_the_prompt and 520"
tests dp_layers dp 70 "every_layer_of_the_prompt and 520"
true
