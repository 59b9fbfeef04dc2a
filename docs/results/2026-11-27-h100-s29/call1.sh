#!/usr/bin/env bash
# Session 29 call 1 (issue 21; branch variant-scan-delta-rule): the delta rule in scan form, its first GPU run
# (csrc/prefill_delta_rule.cu: FlashQLA's kkt_solve, then scan_prep (every chunk's W, U, P and its state transition
# T_c = −Wᵀ Kd, B_c = Uᵀ Kd at once), scan_state (one product a chunk: S = e^{γ_C} S + S_c T_c + B_c, 2 warps of 16
# rows a block, 64 blocks), scan_out (every chunk's output at once)); the rule "scan". Correctness, then speed.
# Predicted: errors within 0.98-1.03x of fla's (the CPU emulation, s28/scan_rounding_diag_cpu.txt); one layer at 520
# rows ~6.5 (kkt_solve) + ~4 (prep) + ~5 (state, 9 chunks of ~0.6 µs) + ~3 (out) = ~18-20 µs against FlashQLA's 29.5
# (s28 call 7), at 1,024 ~25 against 37; pp520 -150..-200 µs of kernels.
# Before the call: nothing to carry but [".whl", ".qla"] (run from a checkout of the branch).
set -u
source docs/results/device_call.sh --site
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; tail -2 "$OUT/r/build.log"
in_tree new 200 python3 -m compare delta-rule --pp 256,520,1024,4096 --out "$OUT/r/delta_rule" > "$OUT/r/delta_rule.txt" 2>"$OUT/r/delta_rule.err"
echo "delta-rule: exit $? ${SECONDS}s"; grep -E "scan|flash-qla" "$OUT/r/delta_rule.txt" | cut -c1-130; tail -3 "$OUT/r/delta_rule.err"; pack
i=0
for rule in flash-qla scan scan flash-qla; do
  i=$((i + 1))
  [ $SECONDS -gt 420 ] && break
  in_tree new 60 python3 -m compare prefill --pp 520,1024 --reference-pp 0 --delta-rule $rule --out "$OUT/r/prefill_${i}_$rule" \
      > "$OUT/r/prefill_${i}_$rule.txt" 2>&1
  echo "prefill $i $rule: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$rule.txt" | cut -c1-250; pack
done
[ $SECONDS -lt 480 ] && in_tree new $((585 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider \
    -k "each_delta_rule" > "$OUT/r/tests_rule.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_rule.txt"; pack
true
