#!/usr/bin/env bash
# For the next session's first call (written at the end of session 23; not run). The review mends of 0b81c6e were never
# on a GPU: dn_out_norm on >= 128 blocks (a short prompt's state copy), split-K only at hidden 1,024 / torch >= 2.8,
# FlashQLA in at most four pieces, the new dn_prep (padding rows) and add_rms_norm (fp32 partials) tests.
# 1. builds of the tree and of .ab_prev (af04810: call 6's kernels; `git archive af04810 ... | tar -x -C .ab_prev`);
# 2. the prefill GPU tests, the opcheck / prefill tests of test_megakernel.py, the family's prefill tests at the 4B;
# 3. compare prefill --pp 2,16,64,520 alternating, 2 rounds.
# Prediction: tests pass; pp2 / pp16 faster (the state copy of 18 layers on 2 / 16 blocks: estimated tens of µs a
# layer at 2 rows), pp64 / pp520 unchanged.
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
for side in prev new; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
in_tree new 240 python3 -m pytest -q -m gpu tests/test_megakernel_prefill.py -p no:cacheprovider > "$OUT/r/tests_prefill.txt" 2>&1
echo "prefill tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_prefill.txt" | cut -c1-300; pack
in_tree new 120 python3 -m pytest -q -m gpu tests/test_megakernel.py -k "prefill or opcheck" -p no:cacheprovider > "$OUT/r/tests_mk.txt" 2>&1
echo "megakernel tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_mk.txt" | cut -c1-300; pack
in_tree new 200 python3 -m pytest -q -m gpu tests/test_megakernel_family.py -k "4b and (prefill or every_layer)" -p no:cacheprovider \
    > "$OUT/r/tests_family.txt" 2>&1
echo "family tests: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_family.txt" | cut -c1-300; pack
for round in 1 2; do
  for side in prev new; do
    in_tree $side 60 python3 -m compare prefill --pp 2,16,64,520 --reference-pp 0 --out "$OUT/r/prefill_${side}_$round" \
        > "$OUT/r/prefill_${side}_$round.txt" 2>&1
    echo "round $round $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${side}_$round.txt" | cut -c1-150; pack
  done
done
true
