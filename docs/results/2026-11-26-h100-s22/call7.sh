#!/usr/bin/env bash
# Session 22, call 7 (owed by session 21, NOTES v23): the 4B and the 9B after xs_bytes (c923287: batch 1's input-vector
# area sized by its bytes, which by the shared-memory formulas gives the 4B and 9B back the ring slot 3f5a9fc took).
# "pre" = .ab_pre (7b41f40, before the fp32 activations), "new" = the tree (COMMIT). tg128 alternating, 2 rounds.
# Prediction: new within -0.5% of pre at both sizes (session 21's call 6 had 4B 320.5 -> 318.8, 9B 169.7 -> 167.3 with
# the slot missing).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in pre new; do
  for size in qwen3.5-4b qwen3.5-9b; do
    in_tree $side 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" > "$OUT/r/build_${side}_$size.log" 2>&1 &
  done
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build*.log | cut -c1-120
for round in 1 2; do
  for size in qwen3.5-4b qwen3.5-9b; do
    for side in pre new; do
      in_tree $side 120 python3 -m compare bench --config $size --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
          --json "$OUT/r/bench_${size}_${side}_$round.json" > "$OUT/r/bench_${size}_${side}_$round.md" 2>&1
      echo "$size $side $round: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/bench_${size}_${side}_$round.md" | cut -c1-70; pack
    done
  done
done
