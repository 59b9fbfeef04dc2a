#!/usr/bin/env bash
# Session 24 call 5 (call 4 again without its tests, which passed there: the two trees share one build hash, and
# each process rebuilt in the shared cache folder until its time ran out; now a cache folder per tree): the prefill's host prelude. prev = c7159a6 (.ab_prev), new = the tree: bind() stages the ids,
# state table and flash's lengths in pinned host memory, one transfer, no sync; the interface hands the megakernel
# tier CPU ids as given (no pageable copy + sync); one aminmax instead of min and max.
# Prediction (call 3: pp520 host call 304 µs, region - replay 240 µs; the prelude's pageable copies, syncs and
# 4 small launches): region - replay 240 -> ~60 µs at every length; pp520 region 2,803 -> ~2,620 µs (+7% tok/s),
# pp64 ~+10%; the replay itself unchanged.
# 1. builds; 2. the prefill GPU tests (new: back-to-back prompts on one plan) and test_megakernel.py's prefill ones;
# 3. gaps.py (region / replay / kernels) at pp 64, 520 (prev, new); the tests; compare prefill --pp 64,520,1024, order
#    prev new new prev.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s24
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
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
i=0
for side in prev new; do
  i=$((i + 1))
  in_tree $side 150 python3 $ROOT/$HERE/gaps.py "$OUT/r/gaps_${i}_$side.json" 64,520 > "$OUT/r/gaps_${i}_$side.txt" 2>&1
  echo "gaps $i $side: exit $? ${SECONDS}s"; grep "^pp" "$OUT/r/gaps_${i}_$side.txt" | cut -c1-130; pack
done
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 100 python3 -m compare prefill --pp 64,520,1024 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-60; pack
done
true
