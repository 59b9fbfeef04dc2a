#!/usr/bin/env bash
# Prepared in session 50, NOT RUN (issue 21; the session's device time went to calls 1-3 and to starts refused after them).
# Three trees, NOTES "Prefill" v29:
#   new   = main's checkout: dn_prep with A = one kernel, the WY blocks first in its grid (13.8 µs at 520 rows in call 1).
#   split = branch s50-wy-split (c36d99d: main merged in): the WY blocks as a kernel of their own, dn_wy_kernel (2 blocks an SM, 96
#           registers: its staging's loads all in flight, beta loaded with them, two k rows at once), on a stream forked
#           from the caller's and joined back by events (a graph's capture: two branches), beside dn_prep_kernel's token
#           blocks, back to their launch bounds and L1 of before the WY blocks (no 41 KB of dynamic shared memory a block).
#   rows  = branch s50-tok-rows (bcadfad, on split): the token blocks 4 rows a block (11 loads a thread in flight, 3
#           blocks an SM at 80 registers): 297 blocks at 520 rows with A instead of 1,161, one wave.
# Predicted (v29): dn_prep with A at 520 rows 13.8 -> split 8-11 µs, rows 5-8 µs; pp520 split +1.5 to +3.5%, rows +3 to
#   +5% against new; wy_split_bench.py's per-kernel times say which kernel is the long pole in each tree.
# Order: builds; wy_split_bench.py on each tree (T = 520, 4096); `compare bench --pp 520` new split rows rows split new
#   (10 repeats: s50 call 1-2 medians of 4-6 moved ±3% between runs of one tree); rows' WY / dn_prep tests (they cover split's WY kernel too). Then next_call_b.sh: the winner's
#   every-layer tests and sanitizers.
# Setup (from main's checkout; for each of split, rows with its branch):
#   for s in split:s50-wy-split rows:s50-tok-rows; do n=${s%%:*}; b=${s#*:}; rm -rf .ab_$n; mkdir .ab_$n;
#     git archive $b | tar -x -C .ab_$n; rm -rf .ab_$n/docs; git rev-parse --short $b > .ab_$n/COMMIT; done
#   git rev-parse --short HEAD > COMMIT
# carry [".whl", ".qla", "COMMIT", ".ab_split", ".ab_rows"]. Run as END=<s> bash docs/results/2026-12-07-h100-s50/next_call.sh
# (END: the call's limit less ~30 s; a fresh machine's start is not in it).
set -u
source docs/results/device_call.sh --site
END=${END:-560}
B=docs/results/2026-12-07-h100-s50/wy_split_bench.py  # (main's copy, run in each tree: it only calls the op)
build_trees new split rows
mkdir -p $OUT/r/wy
for side in new split rows; do
  [ $((END - SECONDS)) -lt 60 ] && { echo "wy $side: skipped"; continue; }
  in_tree $side 60 python3 $ROOT/$B $OUT/r/wy $side 520,4096 > $OUT/r/wy_$side.txt 2>&1
  echo "wy $side: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_$side.txt | cut -c1-400; tail -1 $OUT/r/wy_$side.txt | cut -c1-200; pack
done
for side in new split rows rows split new; do bench_pp $side 520 10 60 45; done
gpu_tests wy rows 60 "dn_prep_given_A or dn_prep_writes"
true
