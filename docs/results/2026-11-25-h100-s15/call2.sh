#!/usr/bin/env bash
# Session 15, call 2: the fast prefill after earlier tokens (issue 21). Main (eeccc27: a shape's
# graph captured at its second prefill) against main + variant_prefill_lower_right_causal.patch
# (.ab_var: the causal mask as a lower-right bias, SDPA's flash kernel). Main's prefill GPU tests
# first (its graph-at-the-second-prefill change never ran on a GPU), then pp256 / pp520 fresh and
# on top of a 16k context, main and variant alternating, then the variant's prefill tests.
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
in_tree new 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py > "$OUT/r/prefill_tests_new.log" 2>&1
echo "prefill tests new: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/prefill_tests_new.log" | tail -4; pack
ab_bench pp 90 --pp 256,520 --tg 0 --depth 16384
in_tree var 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py > "$OUT/r/prefill_tests_var.log" 2>&1
echo "prefill tests var: exit $?"; grep -E "passed|failed|FAILED" "$OUT/r/prefill_tests_var.log" | tail -4; pack
