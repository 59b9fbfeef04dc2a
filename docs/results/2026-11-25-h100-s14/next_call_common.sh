#!/usr/bin/env bash
# What the next_call_*.sh scripts share (sourced, run from the repo root on the device machine):
# main's tree (side "new") and the variant in .ab_var (side "var"), each with its own build cache
# and its COMMIT file naming it in the bench headers (WORKBENCH_COMMIT: the device copy's own git
# HEAD is stale); results into $OUT/r, packed as $OUT/results.tgz after every stage.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; VAR=$ROOT/.ab_var
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"

tree_of() { if [ "$1" = var ]; then echo "$VAR"; else echo "$ROOT"; fi; }
# in_tree SIDE SECONDS COMMAND...: COMMAND in SIDE's tree, with its imports, build cache and commit
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side \
      PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
# both trees' kernels built, side by side
build_both() {
  in_tree var 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_var.log" 2>&1 &
  in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
  wait; tail -1 "$OUT/r/build_var.log"
}
# ab_bench NAME SECONDS BENCH_ARGS...: compare bench of the megakernel tier, new and var alternating, 2 rounds
ab_bench() {
  local name=$1 limit=$2 round side; shift 2
  for round in 1 2; do
    for side in new var; do
      in_tree $side "$limit" python3 -m compare bench --tiers megakernel --repeats 3 --no-progress "$@" \
          --json "$OUT/r/${name}_${side}_$round.json" > "$OUT/r/${name}_${side}_$round.md" 2>&1
      echo "$name $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/${name}_${side}_$round.md" | cut -c1-70; pack
    done
  done
}
