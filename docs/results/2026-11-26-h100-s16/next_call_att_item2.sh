#!/usr/bin/env bash
# For the next session (not run: session 16's device time ran out). Side "new" = main (the attention
# core by groups, 2457b9e or later), side "var" = the same with ATT_ITEM_CHUNKS = 2 (the attention core releases its ring chunks two at a time, not
# four: the producer refills sooner, one more block barrier per two chunks). Same bits. tg128 at d0
# and d32768, B = 1 and 8, with the stream rows (`tg128 stream b8`: bench --stream at a batch, new
# since call 8, not yet run on a GPU), alternating. Prepare:
#   rm -rf .ab_var && mkdir .ab_var && git archive HEAD reference compare triton_kernels megakernel pyproject.toml tests \
#     | tar -x -C .ab_var && sed -i 's/^constexpr int ATT_ITEM_CHUNKS = 4;/constexpr int ATT_ITEM_CHUNKS = 2;/' \
#     .ab_var/megakernel/csrc/gated_attention.cuh && echo "$(git rev-parse --short HEAD)+item2" > .ab_var/COMMIT
#   git rev-parse --short HEAD > COMMIT
# and run with carry [".whl", ".ab_var"] on nvidia-h100-x1. Predicted: tg128 @ d32768 ±2% (the
# producer waits ~97 µs a token for slots the core holds: NOTES v19, call 7).
source "$(dirname "$0")/../2026-11-25-h100-s14/next_call_common.sh"
build_both
ab_bench bench 150 --pp 0 --tg 128 --depth 0,32768 --batch 1,8 --stream
