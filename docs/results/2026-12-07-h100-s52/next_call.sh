#!/usr/bin/env bash
# Prepared in session 52 (the session's device time went to calls 1-3). Issue 21: main's host trims (8ab1089, 9cb937a: the
# folded sources as views of one buffer, no inference_mode decorator on the prefill, TierState.seq_len by list.count)
# against be69dc5 (before them). On this repo's CPU (mocked CUDA, ../2026-12-07-s52-cpu-host/) the host's time before
# the graph's launch fell 17.8 -> 8.2 µs; s51's call_span put the prelude at 48-51 µs on the H100's host (~2.5x this
# CPU). *Predicted*: the prelude -10 to -25 µs, pp520 +0.4 to +1.0% (218.8k -> 219.7-221k); the graph unchanged; decode
# at batch 1 unchanged (the arena moves the in-projection / gate-up / norm weights into one buffer: same bytes).
# Order: builds; a warm-up bench (a fresh machine's first process ran slow in s52 call 1); `compare bench --pp 520`
# new old old new old new (10 repeats); host_profile_gpu.py on both (host clocks split at the launch call, cProfile);
# tg128 at batch 1 new old new old; call_span on both; the fold / refusal / replay prefill tests on new.
# Setup (from main's checkout):
#   rm -rf .ab_old; mkdir .ab_old; git archive be69dc5 | tar -x -C .ab_old; rm -rf .ab_old/docs
#   git rev-parse --short be69dc5 > .ab_old/COMMIT; git rev-parse --short HEAD > COMMIT
# carry [".whl", ".qla", "COMMIT", ".ab_old"]. Run as END=<s> bash docs/results/2026-12-07-h100-s52/next_call.sh
set -u; source docs/results/device_call.sh --site; END=${END:-560}
S=$ROOT/docs/results/2026-12-07-h100-s52
build_trees new old
bench_pp old 520 2 90 100  # (warm-up: not counted)
for side in new old old new old new; do bench_pp $side 520 ${REPEATS:-10} 60 45; done
for side in new old; do
  [ $((END - SECONDS)) -lt 50 ] && { echo "host $side: skipped"; continue; }
  in_tree $side 45 python3 $S/host_profile_gpu.py $OUT/r/host_$side.json $side > $OUT/r/host_$side.txt 2>&1
  echo "host $side: exit $? ${SECONDS}s"; grep "host (" $OUT/r/host_$side.txt; pack
done
tg_bench 1 new 1 $END; tg_bench 2 old 1 $END; tg_bench 3 new 1 $END; tg_bench 4 old 1 $END
call_span new 45 50; call_span old 45 50
gpu_tests fold new 80 "folded_again or refused or replay"
true
