#!/usr/bin/env bash
# Session 21, call 7: synccheck of the ring schedule at batch 1 fails on base 7b41f40 and on new alike (call 6:
# "overflow of tracked cuda::barrier structures" with --num-cuda-barriers 1024, then an unspecified launch failure):
# not this change. Is 1024 tracked mbarriers too few now (132 blocks x 32 ring mbarriers = 4,224)? Tried: 4224, 8192.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel PYTHONPATH=$ROOT:/tmp/site WORKBENCH_COMMIT=$(cat COMMIT)
SAN=$(which compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; tail -1 "$OUT/r/build.log"
for n in 4224 8192; do
  SECONDS=0
  timeout 100 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDA_LAUNCH_BLOCKING=1 $SAN --tool synccheck --num-cuda-barriers $n \
      --kernel-name kns=mk_decode_kernel --error-exitcode 3 python3 -m megakernel sanitize-run --steps 2 --schedule ring --batch 1 \
      > "$OUT/r/synccheck_$n.log" 2>&1
  echo "synccheck ring b1 --num-cuda-barriers $n: exit $? ${SECONDS}s"; grep -E "ERROR SUMMARY|overflow|RuntimeError" "$OUT/r/synccheck_$n.log" | head -3
  [ -f "$OUT/r/synccheck_$n.log" ] && grep -q "0 errors" "$OUT/r/synccheck_$n.log" && break
done
