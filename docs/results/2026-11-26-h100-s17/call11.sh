#!/usr/bin/env bash
# Session 17, call 11 (call8.sh's stages). "new" = the working tree (its COMMIT, branch pad-turns: a prompt
# after earlier tokens padded to a multiple of 64 rows, so turns of any length share graphs), "base" =
# .ab_base (main 5464ca5). The prefill GPU tests (turns of 20, 37, 64 tokens in one plan) and
# opcheck of new; pp A/B at d16384 alternating. Prediction: pp200 @ d16384 (256 rows) -3..-8%,
# pp520 @ d16384 (576 rows) -2..-5%, fresh rows equal.
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
in_tree base 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_base.log" 2>&1 &
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
tail -qn1 "$OUT"/r/build_*.log
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
in_tree new 240 python3 -m pytest -q -x -m gpu tests/test_megakernel_prefill.py tests/test_prefill_decode.py "tests/test_megakernel.py::test_opcheck_every_op" -k "not initcheck and not synccheck" \
    > "$OUT/r/tests_prefill.txt" 2>&1; echo "prefill tests: exit $?"; tail -n 3 "$OUT/r/tests_prefill.txt"; pack
ab pp 150 base new --pp 200,520 --depth 16384 --tg 0
