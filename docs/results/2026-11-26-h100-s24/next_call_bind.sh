#!/usr/bin/env bash
# For a next session (issue 21; written at the end of session 24, NOT RUN). Branch `variant-bind-kernel`: bind() as
# one launch (prefill_bind: the ids, the state table and flash's lengths written by a kernel from its arguments)
# instead of 5-6 torch ops and a pageable copy with a sync (call 6: bind 58-106 µs of host time, the GPU idle).
# Before the call (on the branch): `rm -rf .ab_prev && mkdir .ab_prev && git archive main reference compare
# triton_kernels megakernel pyproject.toml tests docs/results/2026-11-26-h100-s24 | tar -x -C .ab_prev &&
# git rev-parse --short main > .ab_prev/COMMIT`; `git rev-parse --short HEAD > COMMIT`; carry .whl .qla .ab_prev.
# Prediction: bind() 58-106 -> ~20-30 µs; the GPU idle before replay() -40 to -70 µs; pp64 +3%, pp520 +2%, pp1024 +1%;
# the new test and the opcheck of every prefill op pass.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s24
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel-$side WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in prev new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
in_tree new 200 python3 -X faulthandler -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider \
    -k "bind or back_to_back or every_layer_of or continuing or conversation or graph_replay or refusals" > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -8 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
in_tree new 90 python3 -m pytest -q -m gpu tests/test_megakernel.py -k "opcheck" -p no:cacheprovider > "$OUT/r/tests_mk.txt" 2>&1
echo "opcheck: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_mk.txt" | cut -c1-300; pack
i=0
for side in prev new prev new; do
  i=$((i + 1))
  in_tree $side 100 python3 $ROOT/$HERE/prelude_split.py "$OUT/r/split_${i}_$side.json" 64,520 > "$OUT/r/split_${i}_$side.txt" 2>&1
  echo "split $i $side: exit $? ${SECONDS}s"; grep "^pp" "$OUT/r/split_${i}_$side.txt" | cut -c1-250; pack
done
i=0
for side in prev new new prev; do
  i=$((i + 1))
  in_tree $side 100 python3 -m compare prefill --pp 64,520,1024 --reference-pp 0 --out "$OUT/r/prefill_${i}_$side" \
      > "$OUT/r/prefill_${i}_$side.txt" 2>&1
  echo "prefill $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${i}_$side.txt" | cut -c1-60; pack
done
true
