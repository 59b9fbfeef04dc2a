#!/usr/bin/env bash
# Session 17, call 12: turn_lengths.py on base (main 5464ca5) and new (pad-turns 47df225), twice each.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
in_tree base 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_base.log" 2>&1 &
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
for round in 1 2; do for side in base new; do
  echo -n "$side $round: "; in_tree $side 100 python3 "$ROOT/docs/results/2026-11-26-h100-s17/turn_lengths.py" "$OUT/r/turns_${side}_$round.json" 2>&1 | tail -1
done; done
