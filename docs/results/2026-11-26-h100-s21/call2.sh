#!/usr/bin/env bash
# Session 21, call 2 (issue 20 part 5). Call 1 measured full fp32 activations (5ea3abf, "v3") at B = 8 -13%
# (8,998 -> 7,821 tok/s), B = 1 -1.2%, d32768 -0.5%; decode-step error 0.45-0.48x transformers'. Where B = 8's cost
# was read to come from: every block reads the out-projections' and down's inputs whole from global memory (at 8
# rows fp32: ~567 MB of L2 reads a step instead of ~283), and the K = D inputs' hi / lo split in every tile.
# "new" = the working tree (COMMIT): batch 1 as v3 but the down's 14 KB copy into shared memory by cp.async (one
# round trip, not two); a batch: the K = D inputs as hi / lo bf16 planes written once by the norm (no split in the
# tiles), the out- and down projections' inputs bf16 again (rounded once by their writer), as at 7b41f40.
# "v3" = .ab_v3 (5ea3abf), "base" = .ab_base (7b41f40).
# 1. builds; 2. A/B/C one round: tg128 b1 / b8, tg128 @ d32768; 3. compare diff --tiers hf,megakernel on the three
# cases and --batch 8, new.
# Prediction: new vs base: tg128 b1 -0.3 to -0.8%, b8 -3 to -6% (the K = D mmas doubled, 11 ring slots at B = 7-8
# instead of 12), d32768 -0.3%; decode-step ratios at batch 1 as v3 (0.45-0.48x).
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
for side in base v3 new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
for side in base v3 new; do
  in_tree $side 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 --batch 1,8 \
      --json "$OUT/r/short_$side.json" > "$OUT/r/short_$side.md" 2>&1
  echo "d0 $side: exit $?"; grep -E "^\| megakernel" "$OUT/r/short_$side.md" | cut -c1-75
  in_tree $side 150 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 32768 --batch 1 \
      --json "$OUT/r/long_$side.json" > "$OUT/r/long_$side.md" 2>&1
  echo "d32768 $side: exit $?"; grep -E "^\| megakernel" "$OUT/r/long_$side.md" | cut -c1-75; pack
done
SECONDS=0
in_tree new 90 python3 -m compare diff --tiers hf,megakernel --prompt-len 16 --decode-steps 8 --json "$OUT/r/diff_p16_new.json" > "$OUT/r/diff_p16_new.txt" 2>&1
echo "diff p16 new: exit $?"; grep -E "^worst ratio" "$OUT/r/diff_p16_new.txt"
in_tree new 90 python3 -m compare diff --tiers hf,megakernel --weights hazard --prompt-len 3 --decode-steps 8 --json "$OUT/r/diff_hz3_new.json" > "$OUT/r/diff_hz3_new.txt" 2>&1
echo "diff hazard p3 new: exit $?"; grep -E "^worst ratio" "$OUT/r/diff_hz3_new.txt"
in_tree new 120 python3 -m compare diff --tiers hf,megakernel --prompt-len 1100 --decode-steps 4 --json "$OUT/r/diff_p1100_new.json" > "$OUT/r/diff_p1100_new.txt" 2>&1
echo "diff p1100 new: exit $?"; grep -E "^worst ratio" "$OUT/r/diff_p1100_new.txt"; pack
in_tree new 120 python3 -m compare diff --tiers megakernel --batch 8 --json "$OUT/r/diff_batch8_new.json" > "$OUT/r/diff_batch8_new.txt" 2>&1
echo "diff batch 8 new: exit $? ${SECONDS}s"; tail -14 "$OUT/r/diff_batch8_new.txt" | cut -c1-160; pack
