#!/usr/bin/env bash
# Session 45, call 3 (issue 21; the session's last device time): tl3 = branch s45-tail3 (s45-tail2 with attn_last_row
# reworked: call 2's kernel table gave it 17.9 µs at 520 rows, against ~13 for what it replaced — a warp's keys now
# loaded 4 at a time, the merge's maxima / weights / sum through shared memory and each dim's S partials loaded
# together). Its kernel tests, attn_last_row_bench.py at 520 / 4,096 / 32,768 keys (against SDPA's one row +
# attn_gate), then, time left, the untraced-logits test at 520 rows. Predicted: attn_last_row ~3-5 µs at 520 rows.
# Setup: rm -rf .ab_tl3 && mkdir .ab_tl3 && git archive s45-tail3 | tar -x -C .ab_tl3 && rm -rf .ab_tl3/docs &&
#   git rev-parse --short s45-tail3 > .ab_tl3/COMMIT; git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_tl3"]; run as END=280 bash docs/results/2026-12-07-h100-s45/call3.sh
set -u
source docs/results/device_call.sh --site
build_trees tl3
gpu_tests tl3 tl3 60 "attn_last_row or gemv_add_row or gate_up_swiglu"
in_tree tl3 60 python3 "$ROOT/docs/results/2026-12-07-h100-s45/attn_last_row_bench.py" 520 4096 32768 > "$OUT/r/attn_last_row.txt" 2>&1
echo "attn_last_row_bench: exit $? ${SECONDS}s"; cat "$OUT/r/attn_last_row.txt" | grep "^T"; pack
gpu_tests tl3_untraced tl3 110 "untraced and 520"
true
