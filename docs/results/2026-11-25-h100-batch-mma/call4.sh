#!/usr/bin/env bash
# Device call 4 (2026-11-25, session 12): three batch trees alternating, twice (phases + tg per B):
# var (.ab_var: call 3's winner), c (.ab_c: + act from global, + an 11th ring slot), new (this tree:
# + the core's loads issued first); then this tree's megakernel batch GPU tests and memcheck at B = 8.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$OUT/device.txt"
dir_of() { case $1 in new) echo $ROOT;; var) echo $ROOT/.ab_var;; c) echo $ROOT/.ab_c;; esac; }
for side in var c new; do
  d=$(dir_of $side); (cd $d && PYTHONPATH=$d:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/build_$side.log" 2>&1 &
done
wait
for round in 1 2; do for side in var c new; do
  d=$(dir_of $side)
  (cd $d && PYTHONPATH=$d:/tmp/site timeout 60 python3 tests/gpu/batch_check.py --tiers megakernel --skip-checks \
      --json "$OUT/batch_${side}_$round.json" > "$OUT/batch_${side}_$round.log" 2>&1); echo "batch $side $round: exit $?"
  grep -E "phases B=8" "$OUT/batch_${side}_$round.log"; grep -E "^tg" "$OUT/batch_${side}_$round.log" | sed -E "s/'seconds'[^,]*, //; s/'steps': 128, //"
done; done
export PYTHONPATH=$ROOT:/tmp/site
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_batch_gpu.py -k "megakernel" > "$OUT/gpu_tests.log" 2>&1
echo "batch tests: exit $?"; grep -E "passed|failed|^E " "$OUT/gpu_tests.log" | tail -12
timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "memcheck-ring-8" > "$OUT/sanitize.log" 2>&1
echo "memcheck B=8: exit $?"; tail -2 "$OUT/sanitize.log"
