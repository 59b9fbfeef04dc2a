#!/usr/bin/env bash
# Session 24 call 6: prelude_split.py on prev (c7159a6) and new (e77b31b: the staged bind), pp 64, 520, order prev new
# prev new. Question: of pp520's ~250 µs between region and replay, how much is host time before graph.replay()
# (GPU idle) and how much the launch; does the staged bind shorten the first?
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
for side in prev new prev new; do
  i=$((i + 1))
  in_tree $side 100 python3 $ROOT/$HERE/prelude_split.py "$OUT/r/split_${i}_$side.json" 64,520 > "$OUT/r/split_${i}_$side.txt" 2>&1
  echo "split $i $side: exit $? ${SECONDS}s"; grep "^pp" "$OUT/r/split_${i}_$side.txt" | cut -c1-250; pack
done
true
