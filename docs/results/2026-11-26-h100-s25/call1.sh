#!/usr/bin/env bash
# Session 25 call 1 (issue 21). new = branch variant-bind-kernel (bind() as one launch, prefill_bind; the id range
# checked with one sync), prev = main (.ab_prev).
# Predictions: bind() 58-106 -> ~20-30 µs of host time; the GPU idle before replay() -40 to -70 µs; pp64 +3%, pp520 +2%.
# gemm_tl.py: TileLang GEMMs at 520 rows; predicted: the N = 1,024 shapes (out 7.3, down 10.3 µs by cuBLAS) at
# 64 x 128 tiles split in 2 (144 blocks) ~4.5 / ~7 µs; SwiGLU in the gate/up epilogue ~15 µs against mm+silu ~19.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s25; S24=docs/results/2026-11-26-h100-s24
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel-$side WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in prev new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
in_tree new 200 python3 $ROOT/$HERE/gemm_tl.py --compile > "$OUT/r/gemm_tl_compile.txt" 2>&1 &
wait
echo "builds + TileLang compile: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200; tail -5 "$OUT/r/gemm_tl_compile.txt" | cut -c1-300
in_tree new 150 python3 $ROOT/$HERE/gemm_tl.py "$OUT/r/gemm_tl" 520 > "$OUT/r/gemm_tl.txt" 2>&1
echo "gemm_tl: exit $? ${SECONDS}s"; grep -v INFO "$OUT/r/gemm_tl.txt" | tail -30 | cut -c1-400; pack
in_tree new 150 python3 -X faulthandler -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider \
    -k "bind or back_to_back or every_layer_of or graph_replay or refusals" > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -4 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
in_tree new 60 python3 -m pytest -q -m gpu tests/test_megakernel.py -k "opcheck or wrong_shape" -p no:cacheprovider > "$OUT/r/tests_mk.txt" 2>&1
echo "opcheck: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_mk.txt" | cut -c1-300; pack
i=0
for side in prev new; do
  i=$((i + 1))
  in_tree $side 75 python3 $ROOT/$S24/prelude_split.py "$OUT/r/split_${i}_$side.json" 64,520 > "$OUT/r/split_${i}_$side.txt" 2>&1
  echo "split $i $side: exit $? ${SECONDS}s"; grep "^pp" "$OUT/r/split_${i}_$side.txt" | cut -c1-250; pack
done
true
