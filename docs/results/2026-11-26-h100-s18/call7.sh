#!/usr/bin/env bash
# Session 18, call 7. "new" = the working tree (COMMIT: the chunked delta rule with _chunk_intra at 2 warps,
# KB = 32: call 6 measured it equal to fla per layer), "base" = .ab_base (2df1f25, fla). The GPU tests of the
# prefill (with memcheck and opcheck), of the delta rule and the op-error test; then the end-to-end A/B:
# pp520 / pp4096 two rounds interleaved, pp32768 and pp256 @ d16384 one round.
# Prediction: every row within +-1.5% of base (the kernel's time equal, the state copies' ~3 us a layer saved).
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
in_tree base 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_base.log" 2>&1 &
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
tail -qn1 "$OUT"/r/build_*.log
in_tree new 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_megakernel_delta_rule.py \
    "tests/test_megakernel.py::test_opcheck_every_op" "tests/test_megakernel.py::test_an_op_given_a_wrong_shape_raises_naming_it" \
    -k "not initcheck and not synccheck" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $?"; grep -E "passed|failed|FAILED|SKIPPED|Fatal" "$OUT/r/tests.txt" | tail -8 | cut -c1-240; pack
ab() {
  local name=$1 limit=$2 rounds=$3 side round; shift 3
  for round in $(seq 1 $rounds); do
    for side in base new; do
      in_tree $side "$limit" python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --tg 0 --depth 0 "$@" \
          --json "$OUT/r/${name}_${side}_$round.json" > "$OUT/r/${name}_${side}_$round.md" 2>&1
      echo "$name $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/${name}_${side}_$round.md" | cut -c1-60; pack
    done
  done
}
ab pp 70 2 --pp 520,4096
ab long 90 1 --pp 32768
in_tree base 90 python3 -m compare prefill --pp 256 --depth 16384 --reference-pp 0 --reps 3 --out "$OUT/r/turn_base" > "$OUT/r/turn_base.txt" 2>&1
echo "turn base: exit $?"; grep -E "^\| pp" "$OUT/r/turn_base.txt" | cut -c1-60
in_tree new 90 python3 -m compare prefill --pp 256 --depth 16384 --reference-pp 0 --reps 3 --out "$OUT/r/turn_new" > "$OUT/r/turn_new.txt" 2>&1
echo "turn new: exit $?"; grep -E "^\| pp" "$OUT/r/turn_new.txt" | cut -c1-60; pack
