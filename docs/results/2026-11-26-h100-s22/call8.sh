#!/usr/bin/env bash
# Session 22, call 8 (issue 21). "new" = the tree (COMMIT): the prefill's own kernels (csrc/prefill.cu, ~141 of pp520's
# ~300 launches) launched with programmatic dependent launch (cudaLaunchAttributeProgrammaticStreamSerialization),
# each starting with griddepcontrol.wait; "base" = .ab_base (d3bac75, the kernels of ae34398). 1. builds; 2. compare
# prefill pp256 / pp520 / pp4096 alternating, 2 rounds; 3. the prefill GPU tests on new (graph = eager, NaN poison,
# memcheck).
# Prediction: the launch gap before each of our kernels (~0.9 µs a launch on average, call 2) about halved: pp520
# -0.05 to -0.1 ms (+2-3%), pp256 likewise, pp4096 within noise; the same bits (tests pass).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in base new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
for round in 1 2; do
  for side in base new; do
    in_tree $side 80 python3 -m compare prefill --pp 256,520,4096 --reference-pp 0 --out "$OUT/r/prefill_${side}_$round" > "$OUT/r/prefill_${side}_$round.txt" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^\| pp" "$OUT/r/prefill_${side}_$round.txt" | cut -c1-60; pack
  done
done
in_tree new 150 python3 -m pytest -q -m gpu -x tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
