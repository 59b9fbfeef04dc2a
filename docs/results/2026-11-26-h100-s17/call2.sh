#!/usr/bin/env bash
# Session 17, call 2 (run from the repo root on the device machine). Three trees, each with its own
# build cache and COMMIT file: "new" = the working tree (8680f7a: the prefill's plans keyed by (T,
# max_seq), the start in the device table, flash varlen attention), "base" = .ab_base (113cffc, the
# plans keyed by (T, start, max_seq), SDPA with the lower-right causal bias), "var" = .ab_var (8680f7a
# with ATT_MAX_SPLIT = 66: 132 attention units at d32768 for the 132 SMs, not 128).
# Stages: GPU tests of the prefill (new); pp A/B base/new alternating; decode A/B new/var alternating.
# Predictions (NOTES Prefill v5, v20): pp256 @ d16384 13-18k -> >= 60k tok/s; fresh pp unchanged
# (+-2%); d32768 +0.5-1% with 66 splits, tg128 / b8 unchanged.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side \
      PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in base var; do in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 & done
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
tail -n1 "$OUT"/r/build_*.log
# ab NAME SECONDS SIDE_A SIDE_B BENCH_ARGS...: compare bench of the megakernel tier, alternating, 2 rounds
ab() {
  local name=$1 limit=$2 sa=$3 sb=$4 round side; shift 4
  for round in 1 2; do
    for side in $sa $sb; do
      in_tree $side "$limit" python3 -m compare bench --tiers megakernel --repeats 3 --no-progress "$@" \
          --json "$OUT/r/${name}_${side}_$round.json" > "$OUT/r/${name}_${side}_$round.md" 2>&1
      echo "$name $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/${name}_${side}_$round.md" | cut -c1-75; pack
    done
  done
}
in_tree new 420 python3 -m pytest -q -x -m gpu tests/test_megakernel_prefill.py "tests/test_megakernel.py::test_opcheck_every_op" \
    > "$OUT/r/tests_prefill.txt" 2>&1; echo "prefill tests: exit $?"; tail -n 3 "$OUT/r/tests_prefill.txt"; pack
ab pp 150 base new --pp 256,520 --depth 16384 --tg 0
ab pplong 150 base new --pp 4096,32768 --depth 0 --tg 0
ab split 150 new var --pp 0 --tg 128 --depth 32768 --batch 1,8
