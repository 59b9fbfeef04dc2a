#!/usr/bin/env bash
# Session 18, call 6. "new" = the working tree (COMMIT: _chunk_intra reading its inputs KB columns at a time),
# "var" = .ab_var (4cfd724: whole rows). The delta rule alone (fla and ours, at KB / intra warps variants);
# the op-error probe (call 5: a TORCH_CHECK in our op killed the process); then pp A/B base vs new.
# Prediction: _chunk_intra at 4096 113 -> ~70 us (fewer registers, more programs per SM); at 520 ~equal.
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
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1 &
R=$ROOT/docs/results/2026-11-26-h100-s18
in_tree new 150 python3 $R/delta_rule_bench.py "$OUT/r/delta_rule_bench_new.json" 32:4,64:4,16:4,32:2 > "$OUT/r/delta_rule_bench_new.md" 2>&1
echo "bench new: exit $?"; grep -E "^\| [0-9]" "$OUT/r/delta_rule_bench_new.md"; pack
in_tree var 90 python3 $R/delta_rule_bench.py "$OUT/r/delta_rule_bench_var.json" default > "$OUT/r/delta_rule_bench_var.md" 2>&1
echo "bench var: exit $?"; grep -E "^\| [0-9]" "$OUT/r/delta_rule_bench_var.md" | grep ours; wait; tail -qn1 "$OUT"/r/build_*.log; pack
for p in torch_op pybind megakernel; do
  in_tree new 200 python3 $R/op_error_probe.py $p > "$OUT/r/probe_$p.txt" 2>&1; echo "probe $p: exit $? $(grep -E 'RAISED|NO ERROR' "$OUT/r/probe_$p.txt")"
done
if command -v gdb > /dev/null; then
  in_tree new 200 gdb -q -batch -ex run -ex bt --args python3 $R/op_error_probe.py megakernel > "$OUT/r/probe_gdb.txt" 2>&1
  grep -E "^#[0-9]+ " "$OUT/r/probe_gdb.txt" | head -14 | cut -c1-200
else echo "no gdb"; fi
pack
in_tree new 120 python3 -m pytest -q -s -m gpu -p no:cacheprovider tests/test_megakernel_delta_rule.py > "$OUT/r/tests_delta_rule.txt" 2>&1
echo "delta rule tests: exit $?"; grep -E "passed|failed" "$OUT/r/tests_delta_rule.txt" | tail -2; pack
for side in base new; do
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 256,520,1024,4096 --tg 0 --depth 0 \
      --json "$OUT/r/pp_${side}_1.json" > "$OUT/r/pp_${side}_1.md" 2>&1
  echo "pp $side 1: exit $?"; grep -E "^\| megakernel" "$OUT/r/pp_${side}_1.md" | cut -c1-75; pack
done
