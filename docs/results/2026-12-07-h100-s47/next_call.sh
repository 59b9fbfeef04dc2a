#!/usr/bin/env bash
# Prepared in session 47, NOT RUN (the session's device time went to failed starts; issue 21). What call 1 left open:
#  - the two merged changes apart: rr = s47-rule-rows (9aa60de: the delta rule on rows rounded up to its chunk) against
#    new (main: also dn_prep's copy of the layer's state into h0, dn_state_in's launch gone) and base (1fc6e76: before
#    both), by `compare prefill --pp 520` (one profiled replay: the kernels' sums on the GPU's clock) and `compare bench
#    --pp 520` (10 repeats), alternating;
#  - the bar's "not slower" rows: pp4096 and pp32768, new against base;
#  - the dn_prep test whose own bug call 1 found (mended in 5f5185e, not yet run; 959eddb's case of padding into the
#    next chunk), the tests call 1 did not run (every layer at 1 / 63 / 4,097 rows, untraced, prefill then 128 decode
#    steps, continuing prompts), and the prefill sanitizers on new; what does not fit is skipped by the guards (END).
# Predicted: the delta rule's kernels -55 to -65 µs at pp520 (18 x 3.5 µs: call 1's rule bench); dn_state_in's 10.4 gone,
# dn_prep +1 to +5 (its copy of 1 MB a layer, in its first wave); pp520 +2.5 to +3.5% over base; pp4096 / pp32768 equal
# (whole chunks: the rule's rows unchanged) to +0.1% (dn_state_in).
# Setup: .ab_base = git archive 1fc6e76, .ab_rr = git archive 9aa60de (docs removed), COMMIT files; carry [".whl", ".qla",
# "COMMIT", ".ab_base", ".ab_rr"]. Run as END=585 bash docs/results/2026-12-07-h100-s47/next_call.sh
set -u
source docs/results/device_call.sh --site
build_trees new rr base
gpu_tests dnprep new 60 "dn_prep_writes"
gpu_tests layers new 200 "(every_layer_of_the_prompt and (1 or 63 or 4097)) or untraced or 128_decode or continuing"
for side in base rr new new rr base; do
  if [ $((END - SECONDS)) -lt 60 ]; then echo "prefill $side: skipped"; continue; fi
  in_tree $side 80 python3 -m compare prefill --pp 520 --reference-pp 0 --out $OUT/r/prefill_${side}_$SECONDS > $OUT/r/prefill_${side}_$SECONDS.txt 2>&1
  echo "prefill $side: exit $? ${SECONDS}s"; pack
done
for side in new base; do bench_pp $side 4096 5 80 90; done
for side in new base; do bench_pp $side 32768 3 90 100; done
gpu_tests sanitizers new 150 "sanitizer"
true
