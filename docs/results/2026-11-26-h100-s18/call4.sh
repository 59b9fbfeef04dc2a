#!/usr/bin/env bash
# Session 18, call 4. "new" = the working tree (its COMMIT: the fast prefill's own chunked delta rule),
# "base" = .ab_base (2df1f25, fla's chunk_gated_delta_rule). Builds both; the delta rule alone against fla
# (delta_rule_bench.py); the new kernel's GPU test against fla; the prefill GPU tests (session 17's
# review mends, not yet run on a GPU, and the new kernel inside the prefill) and opcheck.
# (call 1 ran it with the P V′ dot in bf16: wrong on the GPU; calls 2-3 found it and measured variants)
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
in_tree new 200 python3 docs/results/2026-11-26-h100-s18/delta_rule_bench.py "$OUT/r/delta_rule_bench.json" > "$OUT/r/delta_rule_bench.md" 2>&1
echo "bench: exit $?"; tail -n 20 "$OUT/r/delta_rule_bench.md"; pack
in_tree new 150 python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/test_megakernel_delta_rule.py > "$OUT/r/tests_delta_rule.txt" 2>&1
echo "delta rule tests: exit $?"; grep -E "^T=|passed|failed|Error" "$OUT/r/tests_delta_rule.txt" | tail -16; pack
in_tree new 280 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_prefill.py tests/test_prefill_decode.py \
    "tests/test_megakernel.py::test_opcheck_every_op" -k "not initcheck and not synccheck" > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $?"; grep -E "passed|failed|FAILED|ERROR" "$OUT/r/tests_prefill.txt" | tail -8; pack
ab() {
  local name=$1 limit=$2 sa=$3 sb=$4 round side; shift 4
  for round in 1; do
    for side in $sa $sb; do
      in_tree $side "$limit" python3 -m compare bench --tiers megakernel --repeats 3 --no-progress "$@" \
          --json "$OUT/r/${name}_${side}_$round.json" > "$OUT/r/${name}_${side}_$round.md" 2>&1
      echo "$name $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/${name}_${side}_$round.md" | cut -c1-75; pack
    done
  done
}
ab pp 100 base new --pp 520,4096 --tg 0
