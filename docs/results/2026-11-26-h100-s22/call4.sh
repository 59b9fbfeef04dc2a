#!/usr/bin/env bash
# Session 22, call 4 (issue 21). Call 3: the 8-tokens-a-block dn_prep was slower (pp520 187 -> 222 µs, pp256 128 -> 191:
# fewer blocks, each a chain of 8 tokens; the weights' re-reads were L2 hits, not the cost), while the last-row-only
# last layer took pp32768 from 279k to 305k (attention 45.6 -> 34.1 ms). Trees: "base" = .ab_base (fe8cb66),
# "trim" = .ab_trim (the tree with fe8cb66's dn_prep: the last layer's row alone), "new" = the tree (COMMIT): dn_prep a
# block per (token, pass of 2048 channels), every load of a block independent (one round trip instead of three
# passes in a row). 1. builds; 2. compare bench pp256 / pp520 / pp4096 / pp32768 alternating, 2 rounds;
# 3. compare prefill (breakdown) of new.
# Prediction: dn_prep 187 -> ~80 µs at pp520 (a third of the chain per block, 3x the blocks), 128 -> ~60 at pp256; pp520
# new vs trim -0.1 ms (+3-4%); trim vs base: pp520 -50 µs (+1.5%), pp32768 +9% (call 3).
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
for side in base trim new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
for round in 1 2; do
  for side in base trim new; do
    in_tree $side 120 python3 -m compare bench --tiers megakernel --pp 256,520,4096,32768 --tg 0 --depth 0 --repeats 3 --no-progress \
        --json "$OUT/r/pp_${side}_$round.json" > "$OUT/r/pp_${side}_$round.md" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/pp_${side}_$round.md" | cut -c1-60; pack
  done
done
in_tree new 120 python3 -m compare prefill --pp 256,520,4096,32768 --reference-pp 0 --out "$OUT/r/prefill" > "$OUT/r/prefill.txt" 2>&1
echo "prefill: exit $? ${SECONDS}s"; tail -7 "$OUT/r/prefill.txt" | cut -c1-260; pack
