#!/usr/bin/env bash
# Prepared in session 50, NOT RUN (issue 21; the session's device time went to calls 1-3 and to starts refused after them).
# split = branch s50-wy-split (064c436 or later): dn_prep's WY blocks as their own kernel, dn_wy_kernel, on a stream forked
#   from the caller's and joined back by events (a graph's capture: two branches), beside dn_prep_kernel's token blocks,
#   which get back their launch bounds and L1 of before the WY blocks (no 41 KB of dynamic shared memory a block); the WY
#   kernel 2 blocks an SM (96 registers: its staging's 5 loads a thread in flight at once, beta loaded with them, two k
#   rows at once). new = main's checkout (the WY blocks first in dn_prep_kernel's grid).
# Why (NOTES "Prefill" v29): at 520 rows dn_prep alone 10.5 µs (1,737 blocks), with A 13.8 (1,161 token blocks + 144 WY
#   blocks): the token blocks alone ~7-8 µs (their waves), a WY block's latency ~4-6 µs estimated from its code — so
#   the +6 µs is the WY blocks holding slots / L1 / issue beside the token blocks, not their own latency, and two kernels
#   side by side should take ~max of the two.
# Predicted: dn_prep with A 13.8 -> 8-11 µs at 520 rows (wy_split_bench.py: the two kernels' own µs say which is the long
#   pole); pp520 +1.5 to +3.5% by `compare bench` (18 layers x 3-6 µs less the fork's ~1 µs); pp4096 +0-1%.
# Order: builds; wy_split_bench.py on new and on split (T = 520, 4096); `compare bench --pp 520` new split split new
#   (4 repeats); split's GPU tests (the WY / dn_prep tests incl. the graph-replay check, every layer at 65 / 520, each
#   delta rule, graph replay, untraced), its sanitizers (memcheck, synccheck) if time is left.
# Setup (from main's checkout): rm -rf .ab_split; mkdir .ab_split; git archive s50-wy-split | tar -x -C .ab_split;
#   rm -rf .ab_split/docs; mkdir -p .ab_split/docs/results/2026-12-07-h100-s50;
#   git show s50-wy-split:docs/results/2026-12-07-h100-s50/wy_split_bench.py > .ab_split/docs/results/2026-12-07-h100-s50/wy_split_bench.py;
#   git rev-parse --short s50-wy-split > .ab_split/COMMIT; git rev-parse --short HEAD > COMMIT
# carry [".whl", ".qla", "COMMIT", ".ab_split"]. Run as END=<s> bash docs/results/2026-12-07-h100-s50/next_call.sh
# (END: the call's limit less ~30 s; a fresh machine's start is not in it).
set -u
source docs/results/device_call.sh --site
END=${END:-560}
B=.ab_split/docs/results/2026-12-07-h100-s50/wy_split_bench.py
build_trees new split
mkdir -p $OUT/r/wy
for side in new split; do
  [ $((END - SECONDS)) -lt 60 ] && { echo "wy $side: skipped"; continue; }
  in_tree $side 60 python3 $ROOT/$B $OUT/r/wy $side 520,4096 > $OUT/r/wy_$side.txt 2>&1
  echo "wy $side: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_$side.txt | cut -c1-300; tail -1 $OUT/r/wy_$side.txt | cut -c1-200; pack
done
for side in new split split new; do bench_pp $side 520 4 70 45; done
gpu_tests wy split 60 "dn_prep_given_A or dn_prep_writes"
gpu_tests layers split 150 "(every_layer_of_the_prompt and (65 or 520)) or each_delta_rule_prefills or graph_replay or untraced"
gpu_tests sanitizers split 130 "sanitizer"
true
