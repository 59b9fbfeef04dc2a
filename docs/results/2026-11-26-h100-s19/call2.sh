#!/usr/bin/env bash
# Session 19, call 2 (issue 22). The working tree (COMMIT): call 1's tree with the tie check dropped from
# the binding (opcheck clones the tensors it is given) and the family's prefill-then-decode bound at the
# 0.8B's 8%. 1. the family's GPU tests for 2B and 9B (call 1 stopped at the 2B's first failure);
# 2. opcheck of the 0.8B's ops; 3. compare bench tg128 / pp520 of the megakernel and the Triton tier at
# 0.8B, 2B and 9B (the byte floor and the fraction reached per size).
# Prediction: every test passes; the megakernel's fraction of the byte floor at tg128 rises with size
# (the fixed per-step costs, barriers and the lm_head's share, are a smaller part of a longer step):
# 0.8B ~75%, 2B ~78-82%, 9B ~80-85%.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
run() { local limit=$1; shift; WORKBENCH_COMMIT=$(cat COMMIT) QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new PYTHONPATH=$ROOT:/tmp/site timeout "$limit" "$@"; }
SECONDS=0
for size in qwen3.5-2b qwen3.5-9b; do
  run 240 python3 -c "import megakernel.build as b; from reference import ModelConfig as M; b.load(config=M.named('$size'))" \
      > "$OUT/r/build_$size.log" 2>&1 &
done
run 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build*.log | cut -c1-200
SECONDS=0
run 330 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_megakernel_family.py \
    "tests/test_megakernel.py::test_opcheck_every_op" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $? ${SECONDS}s"; grep -E "passed|failed|FAILED|^E  " "$OUT/r/tests.txt" | tail -14 | cut -c1-300; pack
for size in qwen3.5-0.8b qwen3.5-2b qwen3.5-9b; do
  SECONDS=0
  run 200 python3 -m compare bench --config $size --tiers megakernel,triton --pp 520 --tg 128 --depth 0 --repeats 3 \
      --no-progress --json "$OUT/r/bench_$size.json" > "$OUT/r/bench_$size.md" 2>&1
  echo "bench $size: exit $? ${SECONDS}s"; grep -E "^\| (megakernel|triton)" "$OUT/r/bench_$size.md" | cut -c1-150; pack
done
