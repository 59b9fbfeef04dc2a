#!/usr/bin/env bash
# Session 21, call 3 (issue 20 part 5). Call 2 (same machine, one round): base 7b41f40 tg128 1,493.9 / b8 8,959 / d32768
# 1,090.2; full fp32 (5ea3abf) 1,483.6 / 7,781 / 1,083.6; 299b7cc (a batch's out- and down inputs bf16, its K = D inputs
# as hi / lo planes) 1,482.0 / 8,575 / 1,083.1, decode-step error 0.45-0.48x transformers'. So batch 1's 0.8% is not the
# down's copy (cp.async changed nothing): read as the shared-memory bytes of an fp32 x in the out- and down
# projections' dots (x bytes 2x the weights' there, 1x before).
# "new" = the working tree (COMMIT): the out-projections' and down's inputs bf16 at every batch size (rounded once,
# by their writer: the gated norm, the attention's gate, silu(gate) * up), every other activation fp32; batch 1's and a
# batch's rows then round at the same points. "v3" = .ab_v3 (299b7cc), "base" = .ab_base (7b41f40).
# 1. builds; 2. A/B/C one round: tg128 b1 / b8, tg128 @ d32768; 3. compare diff --tiers hf,megakernel on the three
# cases and --batch 8 (the final norm's trace of a batch fixed: it read the planes as fp32), new.
# Prediction: new vs base: tg128 b1 -0.2 to -0.5%, b8 as 299b7cc (-4%), d32768 -0.3%; decode-step ratios 0.5-0.65x
# (the study's v3 less the out- and down inputs), under the issue's 0.7x.
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
