#!/usr/bin/env bash
# Session 20, call 4 (issue 22 follow-up). The 4B's ring: chunks of 4 whole rows in 20 KB slots (10 slots)
# instead of 2 rows in 16 KB slots (12 slots, 62% full); its down chunks 4 pieces of 4.5 KB (18 KB) instead of 2.
# The other sizes' SASS is byte for byte unchanged (checked on the CPU). "new" = the working tree (COMMIT),
# "base" = .ab_base (e8612fa).
# 1. the 4B's family GPU tests on the new tree (every layer, teacher-forced, poison, both schedules x three
#    grids, many tokens per launch) and its memcheck;
# 2. A/B of the 4B's tg128, base vs new, alternating, two rounds (each process draws the 4.2 G weights, ~53 s).
# Prediction (call 3: the 4B's gate/up streams at the 2B's rate once the ring's prefetch is counted; the ring
# now holds 200 KB of K = D rows instead of 120 KB): tg128 260 -> 275-290 tok/s (78-83% of the byte floor);
# tests pass.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
SECONDS=0
for side in base new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('qwen3.5-4b'))" \
      > "$OUT/r/build_${side}_4b.log" 2>&1 &
done
wait; echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
SECONDS=0
in_tree new 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py -k "4b" \
    -o faulthandler_timeout=150 > "$OUT/r/tests_4b.txt" 2>&1
echo "4B tests: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  |Timeout" "$OUT/r/tests_4b.txt" | tail -10 | cut -c1-300
cp "$OUT"/sanitizers_family.log "$OUT/r/" 2>/dev/null; pack
for round in 1 2; do
  for side in base new; do
    SECONDS=0
    in_tree $side 110 python3 -m compare bench --config qwen3.5-4b --tiers megakernel --repeats 3 --no-progress --depth 0 --pp 0 --tg 128 \
        --json "$OUT/r/tg_${side}_$round.json" > "$OUT/r/tg_${side}_$round.md" 2>&1
    echo "tg128 4B $side $round: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/tg_${side}_$round.md" | cut -c1-100; pack
  done
done
