#!/usr/bin/env bash
# Session 20, call 2 (issues 22 and 20; the machine warm after call 1, builds cached). Trees as in call 1.
# 1. A/B of the 0.8B, base afc707d vs new (the saturating chunk count), tests/gpu/run_all.sh's ab stage:
#    the same bits (snapshot), then tg128, tg128 @ d4096 and pp520 alternating, two rounds;
#    then tg128 b1 / b8 alternating (the many-token kernels' SASS changed most);
# 2. compare bench of the megakernel and the Triton tier at tiny-megakernel and the 4B (tg128, pp520, byte floor).
# Prediction: the same bits; A/B within +-0.5% (one select more per chunk in the producer; spills unchanged);
# the 4B at ~82-86% of its byte floor (between the 2B's 84.2% and the 9B's 87.9%, ~1.2x Triton); tiny-megakernel
# well under the 0.8B's fraction (a step of 5 layers is mostly fixed costs).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
SECONDS=0
WORKBENCH_COMMIT=$(cat COMMIT) AB_BASE=$ROOT/.ab_base OUT=$OUT/r AB_BENCH_LIMIT=120 bash tests/gpu/run_all.sh ab > "$OUT/r/ab_stage.log" 2>&1
echo "ab stage: exit $? ${SECONDS}s"; grep -E "bench|same|differ|tg128|pp520" "$OUT/r/ab.log" | tail -16 | cut -c1-160; pack
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for round in 1 2; do
  for side in base new; do
    in_tree $side 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --depth 0 --pp 0 --tg 128 --batch 1,8 \
        --json "$OUT/r/dec_${side}_$round.json" > "$OUT/r/dec_${side}_$round.md" 2>&1
    echo "dec $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/dec_${side}_$round.md" | cut -c1-70; pack
  done
done
for size in tiny-megakernel qwen3.5-4b; do
  SECONDS=0
  in_tree new 200 python3 -m compare bench --config $size --tiers megakernel,triton --pp 520 --tg 128 --depth 0 --repeats 3 \
      --no-progress --json "$OUT/r/bench_$size.json" > "$OUT/r/bench_$size.md" 2>&1
  echo "bench $size: exit $? ${SECONDS}s"; grep -E "^\| (megakernel|triton)" "$OUT/r/bench_$size.md" | cut -c1-150; pack
done
