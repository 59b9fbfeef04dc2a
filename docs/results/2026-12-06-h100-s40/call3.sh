#!/usr/bin/env bash
# Session 40, call 3 (issues 21 and 19):
#   new   main (1f1d880)
#   fold  .ab_fold, branch s40-prefill-norm-fold: past the split-K rows (> 256) the prefill's out-projections and downs
#         add into the residual stream (addmm_, beta = 1) and the norms before the gate/ups and the attention layers'
#         in-projections are folded into their weights (bf16(W (1 + w))): silu_mul and attn_prep apply each row's
#         1 / rms; 30 of pp520's 49 add_rms_norm launches gone
#   att2  .ab_att2, branch s40-att-warp-qk-on-main: s39-att-warp-qk's three commits cherry-picked onto main (without
#         s39-dn-butterfly, which call 1 measured -0.48% at B = 8)
# Runs: compare prefill --pp 520,4096 new fold fold new; the prefill GPU tests (all but the sanitizers) and the opcheck /
# prefill-then-decode tests on fold; tg128 b8 new att2 att2 new.
# Predicted: fold's kernels at pp520 -60 to -90 µs (30 x ~2.9 µs of add_rms_norm and its gap, less ~0.5 µs a silu_mul and
# ~0.3 an attn_prep for their 1 / rms), pp520 +2.5-3.5%; at pp4096 add_rms_norm 30 x ~9.8 µs less silu_mul's extra
# reads (~+90 µs): ~-200 µs, +2%. att2 at B = 8 +0.3 to +0.5% over new (call 1: att +0.44% over bf).
# Setup (from main's checkout): .ab_fold, .ab_att2 = git archive of the branches (less docs/), COMMIT files;
# carry [".whl", ".qla", "COMMIT", ".ab_fold", ".ab_att2"].
set -u
source docs/results/device_call.sh --site
build_trees new fold att2
i=0
for side in new fold fold new; do
  i=$((i + 1))
  in_tree $side 100 python3 -m compare prefill --pp 520,4096 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-250; pack
done
in_tree fold 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_megakernel.py \
    -k "not sanitizer and (prefill or opcheck or prompt or conversation or graph_replay)" > "$OUT/r/tests_fold.txt" 2>&1
echo "tests fold: exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_fold.txt"; pack
n=0
for side in new att2 att2 new; do n=$((n + 1)); tg_bench $n $side 8 585; done
true
