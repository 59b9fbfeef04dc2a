#!/usr/bin/env bash
# Prepared in session 46, NOT RUN (the session's device time was spent; issue 21). Main after this session's merges
# (the tuned GEMMs, attn_last_row's merge) against base = 791de29 (main before them) by `compare bench`: pp520 and
# pp4096 alternating (new base base new, 10 repeats), pp32768 once each (3 repeats); then `compare prefill --pp 4096`
# on new (its new list of the GEMM shapes timed, first on a GPU), tuned_ab.py with every shape timed at 1,024 / 2,048
# rows (where TUNE_MIN_ROWS belongs), and the prefill sanitizers on new.
# Predicted: pp520 +0 to +0.2% (attn_last_row −1.3 µs; no GEMM tuned under 2,048 rows), pp4096 +2 to +3% (call 5's
# +2.63% in one process, attn_last_row −3.5 µs), pp32768 +1 to +2% (call 5's +1.27%, attn_last_row −4.8 µs).
# Setup: rm -rf .ab_base && mkdir .ab_base && git archive 791de29 | tar -x -C .ab_base && rm -rf .ab_base/docs &&
#   echo 791de29 > .ab_base/COMMIT; git rev-parse --short HEAD > COMMIT; carry [".whl", ".qla", "COMMIT", ".ab_base"]
# Run as END=585 bash docs/results/2026-12-07-h100-s46/next_call.sh
set -u
source docs/results/device_call.sh --site
build_trees new base
for side in new base base new; do bench_pp $side 520,4096 10 110 90; done
for side in new base; do bench_pp $side 32768 3 90 95; done
if [ $((END - SECONDS)) -gt 100 ]; then
  in_tree new 90 python3 -m compare prefill --pp 4096 --reference-pp 0 --out $OUT/r/prefill4096 > $OUT/r/prefill4096.txt 2>&1
  echo "compare prefill: exit $? ${SECONDS}s"; grep -A12 "GEMM shapes" $OUT/r/prefill4096.txt; pack
fi
# where tuning starts to pay (TUNE_MIN_ROWS = 2048 was set from 520 rows, where nothing was chosen, and 4,096, where
# three shapes were): every shape timed at 1,024 and 2,048 rows
if [ $((END - SECONDS)) -gt 130 ]; then
  in_tree new 120 python3 $ROOT/docs/results/2026-12-07-h100-s46/tuned_ab.py $OUT/r 1024,2048 0 > $OUT/r/tuned_ab_1k2k.txt 2>&1
  echo "tuned ab 1k/2k: exit $? ${SECONDS}s"; grep -E "^pp|beta" $OUT/r/tuned_ab_1k2k.txt | cut -c1-200; pack
fi
gpu_tests sanitizers new 150 "sanitizer and memcheck"
true
