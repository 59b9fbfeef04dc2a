#!/usr/bin/env bash
# Session 23, call 5 (issue 21). Call 4 (b7a3c45 vs 2e81ddd): pp520 183.5k / 182.9k -> 192.0k / 190.0k, pp4096 332.9k ->
# 361.6k / 362.8k, pp8192 equal (368-376k); dn_prep still +10% at 4k-8k rows (971 -> 1,070 µs at 4096, 1,981 -> 2,176
# at 8192): its 4 KB of static shared memory (the gate blocks' staging) applied to every block, likely shrinking the
# conv blocks' L1. Now "new" (COMMIT): gate blocks in registers (no shared memory), the dn_prep test's state kept alive
# (call 4's failure: the table pointed into a freed conv ring). 1. builds; 2. the prefill GPU tests; 3. compare prefill
# alternating with base (2e81ddd), 2 rounds; 4. the family's prefill tests (tiny-megakernel, 4B); 5. compare bench pp rows.
# Prediction: dn_prep back to base's time or below at every length (-100 µs at 4096, -200 at 8192 vs call 4);
# pp520 ~191k (as call 4), pp4096 ~370k, pp8192 ~+1-2% over base.
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
in_tree new 200 python3 -m pytest -q -m gpu -x tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
for round in 1 2; do
  for side in base new; do
    in_tree $side 130 python3 -m compare prefill --pp 520,4096,8192 --reference-pp 0 --out "$OUT/r/prefill_${side}_$round" \
        > "$OUT/r/prefill_${side}_$round.txt" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${side}_$round.txt" | cut -c1-250; pack
  done
done
in_tree new $((520 - SECONDS)) python3 -m pytest -q -m gpu tests/test_megakernel_family.py -k "(tiny or 4b) and (prefill or every_layer)" \
    -p no:cacheprovider > "$OUT/r/tests_family.txt" 2>&1
echo "family tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_family.txt" | cut -c1-300; pack
in_tree new $((595 - SECONDS)) python3 -m compare bench --tiers megakernel --pp 520,4096 --tg 0 --depth 0 --repeats 3 --no-progress \
    --json "$OUT/r/bench_pp.json" > "$OUT/r/bench_pp.md" 2>&1
echo "bench: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/bench_pp.md" | cut -c1-120; pack
true
