#!/usr/bin/env bash
# Session 38, call 1: session 37's prepared swizzles and two changes of this session on them, against main.
# Trees: new (main, 06b626e + this session's docs), rswz (branch s37-ring-swizzle, cfa879f, on s37-xs-swizzle: a batch's
# x planes swizzled, and the K = D weight chunks landing swizzled in the ring), norm (s38-norm-deferred, on
# rswz: the in-projections' and gate/up's x planes hold x (1 + w) unscaled, each dot times its row's 1 / rms in the
# epilogue: one block barrier before the tiles, not two), pairs (s38-kd-pairs, on norm: a warp takes two tiles over a k
# eighth, not one over a quarter, so each x plane block it loads serves two tiles: the x reads of a K = D item halved).
# Predicted: rswz bits identical to new; norm not identical (one rounding moved), within the bounds (the batch
# GPU tests); tg128 b8 rswz +1 to +6% (v35: ~2.2 µs of bank time an item, 48 such phases a step),
# norm +1 to +2% over rswz (49 norms a step, ~0.3 µs each: a barrier, the sums' shuffles and the rsqrt off the path);
# pairs +1 to +2% over norm (x: 128 KB of an item's 256 KB of shared-memory reads, halved; its B = 8 one-step kernel
# spills 84 / 80 B, against norm's 8 / 32, at the kernel's start: a few reloads a phase);
# batch 1 not run: its kernels' SASS is identical in all four trees (checked on the CPU, sm_90a); the Triton tier and
# pairs' megakernel at B = 8 in one run last (the issue's 2x bar).
# Setup (from main's checkout):
#   for s in rswz:s37-ring-swizzle norm:s38-norm-deferred pairs:s38-kd-pairs; do n=${s%%:*}; rm -rf .ab_$n && mkdir .ab_$n \
#     && git archive ${s#*:} | tar -x -C .ab_$n && rm -rf .ab_$n/docs && git rev-parse --short ${s#*:} > .ab_$n/COMMIT; done
#   git rev-parse --short HEAD > COMMIT   (carry .whl .qla COMMIT .ab_rswz .ab_norm .ab_pairs)
set -u
source docs/results/device_call.sh --site
build_trees new rswz norm pairs
for side in new rswz; do
  in_tree $side 90 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_$side.pt > "$OUT/r/snapshot_$side.txt" 2>&1
  echo "snapshot $side: exit $? ${SECONDS}s"
done
for side in rswz; do
  python3 tests/gpu/ab_commits.py compare /tmp/snap_new.pt /tmp/snap_$side.pt > "$OUT/r/bits_$side.txt" 2>&1
  echo "bits $side: exit $?"; tail -3 "$OUT/r/bits_$side.txt" | cut -c1-200
done
pack
n=0
for side in new rswz norm pairs pairs norm rswz new; do n=$((n + 1)); tg_bench $n $side 8 400; done
if [ $((480 - SECONDS)) -gt 60 ]; then
  in_tree pairs 60 python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
  echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| tg128' "$OUT/r/bench_triton_b8.txt" | cut -c1-110; pack
fi
if [ $((500 - SECONDS)) -gt 50 ]; then
  in_tree pairs 50 python3 -m pytest -q tests/test_batch_gpu.py -k "megakernel and (alone or bounds or int8 or poison)" > "$OUT/r/tests_pairs.txt" 2>&1
  echo "tests pairs: exit $? ${SECONDS}s"; tail -2 "$OUT/r/tests_pairs.txt"; pack
fi
true
