#!/usr/bin/env bash
# Session 21, call 1 (issue 20 part 5). "new" = the working tree (COMMIT): every activation between two phases of a
# decode step fp32 (the workspace's hidden, zab, obuf, qkv, attn, act areas; the matrix phases' input vectors in
# shared memory, at xs_slot so a lane's two 16-byte reads are conflict-free; the bf16 roundings that copied
# transformers' dropped; a batch's mma takes each fp32 input as bf16 hi + lo, two mmas); the conv ring, the K/V
# cache and the logits stay bf16. "base" = .ab_base (7b41f40).
# 1. builds; 2. compare diff --tiers hf,megakernel on the issue's three cases (a 16-token prompt, a 3-token prompt
# with hazard weights, a 1,100-token prompt), new then base: the ratio to transformers' bf16 error over the decode
# steps alone; 3. A/B one round: tg128 b1 / b8, tg128 @ d32768; 4. the 0.8B's GPU tests (megakernel, batch, many tokens).
# Prediction: decode-step ratios 0.1-0.3x on every layer (the CPU study: 0.11-0.27x); tg128 b1 within +-0.5%;
# b8 -2 to -5% (twice the mma work, the split); d32768 within +-0.5%; tests pass (bounds are against fp32).
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
in_tree base 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_base.log" 2>&1 &
in_tree new 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
diffs() {
  local side=$1
  in_tree $side 90 python3 -m compare diff --tiers hf,megakernel --prompt-len 16 --decode-steps 8 --json "$OUT/r/diff_p16_$side.json" > "$OUT/r/diff_p16_$side.txt" 2>&1
  echo "diff p16 $side: exit $?"; grep -E "^worst ratio" "$OUT/r/diff_p16_$side.txt"
  in_tree $side 90 python3 -m compare diff --tiers hf,megakernel --weights hazard --prompt-len 3 --decode-steps 8 --json "$OUT/r/diff_hz3_$side.json" > "$OUT/r/diff_hz3_$side.txt" 2>&1
  echo "diff hazard p3 $side: exit $?"; grep -E "^worst ratio" "$OUT/r/diff_hz3_$side.txt"
  in_tree $side 120 python3 -m compare diff --tiers hf,megakernel --prompt-len 1100 --decode-steps 4 --json "$OUT/r/diff_p1100_$side.json" > "$OUT/r/diff_p1100_$side.txt" 2>&1
  echo "diff p1100 $side: exit $?"; grep -E "^worst ratio" "$OUT/r/diff_p1100_$side.txt"; pack
}
SECONDS=0; diffs new; echo "diffs new: ${SECONDS}s"
for side in base new; do
  in_tree $side 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 --batch 1,8 \
      --json "$OUT/r/short_$side.json" > "$OUT/r/short_$side.md" 2>&1
  echo "d0 $side: exit $?"; grep -E "^\| megakernel" "$OUT/r/short_$side.md" | cut -c1-75
  in_tree $side 150 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 32768 --batch 1 \
      --json "$OUT/r/long_$side.json" > "$OUT/r/long_$side.md" 2>&1
  echo "d32768 $side: exit $?"; grep -E "^\| megakernel" "$OUT/r/long_$side.md" | cut -c1-75; pack
done
SECONDS=0
in_tree new 240 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py tests/test_batch_gpu.py tests/test_many_tokens_gpu.py \
    -k "not sanitizer and not memcheck and not initcheck and not racecheck and not synccheck" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; grep -E "passed|failed|^E  |^FAILED" "$OUT/r/tests.txt" | tail -12 | cut -c1-300; pack
SECONDS=0; diffs base; echo "diffs base: ${SECONDS}s"; pack
