#!/usr/bin/env bash
# For the next session (not run): the fast prefill after earlier tokens. Main (a shape's graph
# captured at its second prefill: 4e9c6f3) against main + variant_prefill_lower_right_causal.patch
# (.ab_var: the causal mask as a lower-right bias, SDPA's flash kernel): the prefill GPU tests of
# both (generous limits: the fla kernels compile on a fresh machine), then pp256 / pp520 fresh and
# on top of a 16k context, base and variant alternating (session 14's call 1, 6aa122a: pp256 @
# d16384 6,348 tok/s against the Triton tier's 31,861). Prepare .ab_var first:
#   rm -rf .ab_var && mkdir .ab_var && git archive HEAD reference compare triton_kernels megakernel \
#     pyproject.toml tests | tar -x -C .ab_var && (cd .ab_var && patch -p1 < ../docs/results/2026-11-25-h100-s14/variant_prefill_lower_right_causal.patch)
# then `git rev-parse --short HEAD > COMMIT` (main) and the variant's commit into .ab_var/COMMIT (the bench
# headers name them: WORKBENCH_COMMIT; the device copy's own git HEAD is stale), and run with carry
# [".whl", ".ab_var"].
source "$(dirname "$0")/next_call_common.sh"
for side in new var; do
  in_tree $side 240 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py > "$OUT/r/prefill_tests_$side.log" 2>&1
  echo "prefill tests $side: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/prefill_tests_$side.log" | tail -4; pack
done
ab_bench pp 120 --pp 256,520 --tg 0 --depth 16384
