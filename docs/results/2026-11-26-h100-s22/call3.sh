#!/usr/bin/env bash
# Session 22, call 3 (issue 21). "new" = the tree (COMMIT): dn_prep convolves 8 tokens a block (the conv weights,
# 16 KB a pass, and each input row read once per block instead of 4x per token: each token's arithmetic and bits
# unchanged), and a fresh prompt's last layer computes its attention core, out-projection and MLP for the last row
# alone. "base" = .ab_base (fe8cb66: FlashQLA the default, the rest as before). Both with FlashQLA installed.
# 1. builds; 2. compare bench pp256 / pp520 / pp4096 / pp32768, base and new alternating, 2 rounds; 3. compare
# prefill (breakdown) on new.
# Prediction (call 2's breakdown): dn_prep 187 -> ~70 µs at pp520 (10.4 -> ~4 µs a layer: ~20 MB of L2/HBM traffic
# instead of ~55), 1,041 -> ~600 at pp4096, 9,052 -> ~5,000 at pp32768; the last layer's row: -50 µs at pp520, -9 ms
# at pp32768 (its attention core 7.6 ms, 3/4 of its GEMMs 1.6 ms). pp520 2.93 -> ~2.78 ms (~187k), pp4096 12.7 ->
# ~12.1 ms (~338k), pp32768 117 -> ~103 ms (~318k).
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
    in_tree $side 150 python3 -m compare bench --tiers megakernel --pp 256,520,4096,32768 --tg 0 --depth 0 --repeats 3 --no-progress \
        --json "$OUT/r/pp_${side}_$round.json" > "$OUT/r/pp_${side}_$round.md" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/pp_${side}_$round.md" | cut -c1-60; pack
  done
done
in_tree new 150 python3 -m compare prefill --pp 256,520,4096,32768 --reference-pp 0 --out "$OUT/r/prefill" > "$OUT/r/prefill.txt" 2>&1
echo "prefill: exit $? ${SECONDS}s"; tail -7 "$OUT/r/prefill.txt" | cut -c1-260; pack
