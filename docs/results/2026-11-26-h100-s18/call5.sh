#!/usr/bin/env bash
# Session 18, call 5. "new" = the working tree (COMMIT: _chunk_intra with 64-row dots through a scratch),
# "var" = .ab_var (4cfd724: 16 x 16 block dots), "base" = .ab_base (2df1f25: fla). The delta rule alone in
# new and var (delta_rule_bench.py: fla and ours, each tree's kernel); the delta rule and prefill GPU tests
# (with the op-shape test) in new; pp520 / pp4096 A/B base vs new.
# Prediction: _chunk_intra 23 -> ~12 us at T = 520, 113 -> ~60 us at 4096 (fla kkt_solve + w_u: 22, 67).
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
B=$ROOT/docs/results/2026-11-26-h100-s18/delta_rule_bench.py
for side in new var; do
  in_tree $side 150 python3 $B "$OUT/r/delta_rule_bench_$side.json" > "$OUT/r/delta_rule_bench_$side.md" 2>&1
  echo "bench $side: exit $?"; grep -E "^\| [0-9]" "$OUT/r/delta_rule_bench_$side.md"; pack
done
in_tree new 120 python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/test_megakernel_delta_rule.py > "$OUT/r/tests_delta_rule.txt" 2>&1
echo "delta rule tests: exit $?"; grep -E "^T=|passed|failed|Error" "$OUT/r/tests_delta_rule.txt" | tail -14; pack
in_tree new 240 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_prefill_decode.py \
    "tests/test_megakernel.py::test_opcheck_every_op" "tests/test_megakernel.py::test_an_op_given_a_wrong_shape_raises_naming_it" \
    -k "not initcheck and not synccheck" > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $?"; grep -E "passed|failed|FAILED|ERROR|Fatal" "$OUT/r/tests_prefill.txt" | tail -8; pack
for side in base new; do
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 520,4096 --tg 0 \
      --json "$OUT/r/pp_${side}_1.json" > "$OUT/r/pp_${side}_1.md" 2>&1
  echo "pp $side 1: exit $?"; grep -E "^\| megakernel" "$OUT/r/pp_${side}_1.md" | cut -c1-75; pack
done
