#!/usr/bin/env bash
# Session 21, call 6 (issue 20 part 5), on 3f5a9fc's kernels (COMMIT = "new"; "base" = .ab_base, 7b41f40):
# 1. synccheck of the ring schedule at batch 1, base and new: it failed in call 5 ("overflow of tracked cuda::barrier
#    structures", then an unspecified launch failure); it last passed in session 15 (2026-11-25) with
#    --num-cuda-barriers 1024, so: is it this change or an earlier one? 2. the 9B's two family tests call 5 ran out
#    of time for; 3. tg128 of the 4B and the 9B, base and new alternating: their K = D phases take one whole row a
#    warp (the 4B) or one row in 4 pieces (the 9B), so an fp32 x is 2x their weights' shared-memory bytes there.
# Prediction: synccheck fails on base too (not this change); the 9B's tests pass; 4B and 9B tg128 -0.5 to -2%.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
SECONDS=0
for side in base new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
  for size in qwen3.5-4b qwen3.5-9b; do
    in_tree $side 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" > "$OUT/r/build_${side}_$size.log" 2>&1 &
  done
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build*.log | cut -c1-120
SAN=$(which compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for side in base new; do
  SECONDS=0
  in_tree $side 90 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDA_LAUNCH_BLOCKING=1 $SAN --tool synccheck --num-cuda-barriers 1024 \
      --kernel-name kns=mk_decode_kernel --error-exitcode 3 python3 -m megakernel sanitize-run --steps 2 --schedule ring --batch 1 \
      > "$OUT/r/synccheck_$side.log" 2>&1
  echo "synccheck ring b1 $side: exit $? ${SECONDS}s"; grep -E "ERROR SUMMARY|overflow|RuntimeError" "$OUT/r/synccheck_$side.log" | head -3; pack
done
SECONDS=0
in_tree new 150 python3 -m pytest -v -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py -k "9b and (schedules or many_tokens)" > "$OUT/r/tests_9b.txt" 2>&1
echo "9b tests: exit $? ${SECONDS}s"; grep -E "PASSED|FAILED| passed| failed" "$OUT/r/tests_9b.txt" | tail -3 | cut -c1-160; pack
for size in qwen3.5-4b qwen3.5-9b; do
  for side in base new; do
    in_tree $side 120 python3 -m compare bench --config $size --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
        --json "$OUT/r/bench_${size}_$side.json" > "$OUT/r/bench_${size}_$side.md" 2>&1
    echo "$size $side: exit $?"; grep -E "^\| megakernel" "$OUT/r/bench_${size}_$side.md" | cut -c1-90; pack
  done
done
