#!/usr/bin/env bash
# Session 20, call 1 (issue 22). The working tree (COMMIT): session 19's last tree (afc707d) + the producer's
# chunk count saturating at S + 1 (17c79bf). "base" = .ab_base (afc707d).
# 1. builds at once: the family's four sizes (new), the 0.8B new and base;
# 2. the family's GPU tests at tiny-megakernel and the 4B (every layer at 16 and 300 tokens, 128 teacher-forced
#    steps, poison + repeatability + prefill-then-decode, both schedules x grids 132 / 97 / 40 to the same bits,
#    many tokens per launch = a launch a step): never run since the chunk fix (tiny) / ever (4B);
# 3. their compute-sanitizer memcheck.
# Prediction: all pass (the ring model found 0 errors at both sizes and every grid); tiny's file in < 60 s,
# the 4B's ~2 min (between the 2B's and the 9B's).
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
in_tree base 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_base.log" 2>&1 &
for size in tiny-megakernel qwen3.5-4b qwen3.5-2b qwen3.5-9b; do
  in_tree new 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" \
      > "$OUT/r/build_new_$size.log" 2>&1 &
done
in_tree new 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
SECONDS=0
in_tree new 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py -k "tiny and not sanitizer" \
    -o faulthandler_timeout=120 > "$OUT/r/tests_tiny.txt" 2>&1
echo "tiny-megakernel: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  |Timeout" "$OUT/r/tests_tiny.txt" | tail -10 | cut -c1-300; pack
SECONDS=0
in_tree new 240 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py -k "4b and not sanitizer" \
    -o faulthandler_timeout=200 > "$OUT/r/tests_4b.txt" 2>&1
echo "4B: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  |Timeout" "$OUT/r/tests_4b.txt" | tail -10 | cut -c1-300; pack
SECONDS=0
in_tree new 150 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py -k "sanitizer and (tiny or 4b)" \
    > "$OUT/r/tests_memcheck.txt" 2>&1
echo "memcheck: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  |ERROR SUMMARY" "$OUT/r/tests_memcheck.txt" | tail -10 | cut -c1-300
cp "$OUT"/sanitizers_family.log "$OUT/r/" 2>/dev/null; pack
