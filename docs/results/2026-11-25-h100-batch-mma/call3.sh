#!/usr/bin/env bash
# Device call 3 (2026-11-25, session 12): B = 1 A/B of the tensor-core batch tree against c217de7
# (.ab_old), then the batch variants one after the other: this tree and .ab_var (this tree + the
# batched DeltaNet core patch), then the batch GPU tests with the new greedy criterion.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$ROOT:/tmp/site PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
(cd .ab_var && PYTHONPATH=$ROOT/.ab_var:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/build_var.log" 2>&1 &
AB_ROUNDS=2 bash tests/gpu/run_all.sh ab | grep -E "same|differ|bench|megakernel|tg128|d4096|pp520" | tail -20
wait
for side in new var; do
  dir=$ROOT; [ $side = var ] && dir=$ROOT/.ab_var
  (cd "$dir" && PYTHONPATH=$dir:/tmp/site timeout 120 python3 tests/gpu/batch_check.py --tiers megakernel --check-steps 6 \
      --json "$OUT/batch_$side.json" > "$OUT/batch_$side.log" 2>&1); echo "batch $side: exit $?"; grep -E "phases B=8|check|tg" "$OUT/batch_$side.log"
done
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_batch_gpu.py -k "decode_as_alone and (megakernel-8 or triton-8 or megakernel-2)" \
    > "$OUT/gpu_tests.log" 2>&1; echo "tests: exit $?"; grep -E "passed|failed|Error" "$OUT/gpu_tests.log" | tail -8
