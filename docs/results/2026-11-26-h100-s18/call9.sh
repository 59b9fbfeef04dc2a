#!/usr/bin/env bash
# Session 18, call 9: why the prefill's initcheck and synccheck GPU tests outlast their 240 s (every session
# since 2026-11-24). Main (COMMIT). The test's command with a 400 s limit, timed: initcheck as the test runs
# it; synccheck as the test runs it and with the kernels filtered to ours (`--kernel-name kns=mkp`, the
# prefill.cu namespace); the three at once (one GPU, 80 GB).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new WORKBENCH_COMMIT=$(cat COMMIT)
export PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDA_LAUNCH_BLOCKING=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; tail -n1 "$OUT/r/build.log"
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
t0=$(date +%s); timeout 60 python3 -m megakernel sanitize-run --prefill 70 > "$OUT/r/plain.txt" 2>&1; echo "plain: exit $? in $(( $(date +%s) - t0 )) s"
run() {
  local name=$1; shift; local t0=$(date +%s)
  timeout 400 $S "$@" --error-exitcode 3 python3 -m megakernel sanitize-run --prefill 70 > "$OUT/r/$name.txt" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY' "$OUT/r/$name.txt" | tail -1)" >> "$OUT/r/summary.txt"
}
run initcheck --tool initcheck &
run synccheck --tool synccheck &
run synccheck_ours --tool synccheck --kernel-name kns=mkp &
wait; cat "$OUT/r/summary.txt"
for f in initcheck synccheck synccheck_ours; do echo "== $f"; grep -E "^=========" "$OUT/r/$f.txt" | head -6 | cut -c1-200; tail -n 3 "$OUT/r/$f.txt" | cut -c1-200; done
