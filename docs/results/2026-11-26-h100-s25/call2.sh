#!/usr/bin/env bash
# Session 25 call 2 (issue 21; the machine of call 1, warm: builds and caches kept). compare prefill, prev new new prev,
# and prelude_split again in the other order (new prev). Predictions as call 1's.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s25; S24=docs/results/2026-11-26-h100-s24
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
[ -d /tmp/site/flash_qla ] || { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl; for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel-$side WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 120 python3 -m compare prefill --pp 64,520,1024 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp|^\|" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-200 | head -8; pack
done
i=2
for side in new prev; do
  i=$((i + 1))
  in_tree $side 75 python3 $ROOT/$S24/prelude_split.py "$OUT/r/split_${i}_$side.json" 64,520 > "$OUT/r/split_${i}_$side.txt" 2>&1
  echo "split $i $side: exit $? ${SECONDS}s"; grep "^pp" "$OUT/r/split_${i}_$side.txt" | cut -c1-250; pack
done
true
