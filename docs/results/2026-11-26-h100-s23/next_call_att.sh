#!/usr/bin/env bash
# For a next session (issue 20 part 2, tg128 @ d32768 >= 1,100; written at the end of session 23, not run). Branch
# `variant-att-skip-corr` (610c64d): batch 1's attention core skips the online softmax's rescale (an exp and 9
# multiplies a group of 2 positions) when the group does not raise the warp's running max, whose factor is exp(0) = 1:
# the same bits. Compile check (sm_90a, CPU): every instantiation spills as main's; the B = 1 one-step kernel 32 SASS
# instructions shorter, 9 more branches. Before the call: `rm -rf .ab_att && mkdir .ab_att && git archive
# variant-att-skip-corr reference compare triton_kernels megakernel pyproject.toml tests | tar -x -C .ab_att &&
# echo 610c64d > .ab_att/COMMIT`; carry .whl and .ab_att.
# Prediction: the core at d32768 is issue-bound (NOTES v17-v22: ~60 instructions a position and warp); the running max
# of 512 positions grows ~ln(512) ~ 6 times a warp, so ~10 of ~120 instructions a group go: the core 38.5 -> ~36 µs a
# layer, -15 µs a token: tg128 @ d32768 1,094 -> ~1,110 (+1.5%); tg128 at d0 within +-0.3% (1-5 splits); B = 8 equal
# (its kernels keep the unconditional form); bits identical (ab_commits.py).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = main ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in main att; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
for side in main att; do
  in_tree $side 150 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_att.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -5 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
for round in 1 2; do
  for side in main att; do
    in_tree $side 150 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0,32768 \
        --batch 1 --json "$OUT/r/tg_${side}_$round.json" > "$OUT/r/tg_${side}_$round.md" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/tg_${side}_$round.md" | cut -c1-75; pack
  done
done
true
