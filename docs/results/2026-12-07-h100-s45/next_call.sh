#!/usr/bin/env bash
# Prepared in session 45, NOT RUN (the session's device time was spent; issue 21). Main after the merge of s45-tail3
# (new: the last layer's last row by attn_last_row, gemv_add_row and gate_up_swiglu_row; attn_last_row in its reworked
# form, never benched inside a prefill) against base = a5c51f9 (main before this session's code) by `compare bench`:
# pp520 and pp4096 alternating (new base base new, 10 repeats), pp32768 once each; before them the tests this session
# could not finish: test_opcheck_every_op (with a fresh folded plan; FlashQLA's kernels for its shapes compile first:
# s45 call 2 cut it at 60 s) and the whole prefill GPU file on new.
# Predicted: pp520 +1.2 to +1.5% (tl2's measured +1.03%, and attn_last_row 8.9 µs alone against tl2's 17.9 inside a
# prefill: inferred), pp4096 and pp32768 within ±0.3% (the GEMVs ~8 µs faster, attn_last_row 3-8 µs slower there).
# Setup: rm -rf .ab_base && mkdir .ab_base && git archive a5c51f9 | tar -x -C .ab_base && rm -rf .ab_base/docs &&
#   echo a5c51f9 > .ab_base/COMMIT; git rev-parse --short HEAD > COMMIT; carry [".whl", ".qla", "COMMIT", ".ab_base"]
# (.whl: fla 0.6.0's two wheels; .qla: FlashQLA 0.1.3 and its needs unpacked into one tar.xz, session 45's README)
# Run as END=585 bash docs/results/2026-12-07-h100-s45/next_call.sh
set -u
source docs/results/device_call.sh --site
build_trees new base
gpu_tests opcheck new 150 "opcheck_every_op" tests/test_megakernel.py
for side in new base base new; do bench_pp $side 520,4096 10 95 70; done
for side in new base; do bench_pp $side 32768 3 75 80; done
# (a second call: gpu_tests all new 300 "not slow" tests/test_megakernel_prefill.py)
true
