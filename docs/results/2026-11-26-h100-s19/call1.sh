#!/usr/bin/env bash
# Session 19, call 1 (issue 22). "new" = the working tree (COMMIT: the megakernel built per model size:
# rows cut into pieces, the norm's pairs per thread, value heads over key heads, the untied head, the
# ops' namespace per size), "base" = .ab_base (5ae003f, the 0.8B only).
# 1. four builds at once: base 0.8B, new 0.8B, new 2B, new 9B;
# 2. the family's GPU tests (2B, 9B: every layer, 128 teacher-forced steps, poison, repeatability, memcheck);
# 3. the 0.8B's GPU tests on the new tree (every layer, split-K, schedules, batch rows, prefill, many tokens);
# 4. A/B of the 0.8B, base vs new, alternating: tg128 b1, b8 and pp520.
# Prediction: every family test passes; the 0.8B's tests pass unchanged; the A/B within +-1% (the 0.8B's
# SASS differs only by the pieces' bookkeeping and a new Args field).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-$side \
      PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
SECONDS=0
in_tree base 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_base.log" 2>&1 &
for size in qwen3.5-2b qwen3.5-9b; do
  in_tree new 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" \
      > "$OUT/r/build_new_$size.log" 2>&1 &
done
in_tree new 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
SECONDS=0
in_tree new 420 python3 -m pytest -q -m gpu -rs -x -p no:cacheprovider tests/test_megakernel_family.py > "$OUT/r/tests_family.txt" 2>&1
echo "family tests: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|Error|error" "$OUT/r/tests_family.txt" | tail -12 | cut -c1-300; pack
SECONDS=0
in_tree new 300 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel.py tests/test_megakernel_prefill.py \
    tests/test_batch_gpu.py tests/test_many_tokens_gpu.py -k "not compute_sanitizer and not synccheck and not initcheck" \
    > "$OUT/r/tests_08b.txt" 2>&1
echo "0.8B tests: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED" "$OUT/r/tests_08b.txt" | tail -12 | cut -c1-300; pack
ab() {
  local name=$1 limit=$2 rounds=$3 side round; shift 3
  for round in $(seq 1 $rounds); do
    for side in base new; do
      in_tree $side "$limit" python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --depth 0 "$@" \
          --json "$OUT/r/${name}_${side}_$round.json" > "$OUT/r/${name}_${side}_$round.md" 2>&1
      echo "$name $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/${name}_${side}_$round.md" | cut -c1-70; pack
    done
  done
}
ab dec 90 2 --pp 520 --tg 128 --batch 1,8
