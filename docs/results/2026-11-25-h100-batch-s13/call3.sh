#!/usr/bin/env bash
# Device call 3 (2026-11-25, session 13): the report of badb6be (compare bench --batch 1,2,4,8 of the
# triton and megakernel tiers in one run, compare diff --batch 8), then two variants of its batch
# DeltaNet core against it (.ab_var: the state rows loaded at the core's start instead of before the
# barrier; .ab_var2: the same plus an L2 prefetch of them before the barrier), bits and batch_check
# timings, one round each in the order new, var1, var2; initcheck at B = 8; the batch diff last.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }  # after every stage: what ran comes back if a later one is cut
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/r/device.txt"
for v in ab_var ab_var2; do
  (cd "$ROOT/.$v" && PYTHONPATH=$ROOT/.$v:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/r/build_$v.log" 2>&1 &
done
export PYTHONPATH=$ROOT:/tmp/site
python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1
timeout 200 python3 -m compare bench --tiers triton,megakernel --batch 1,2,4,8 --pp 0 --depth 0 --repeats 3 --no-progress \
    --json "$OUT/r/bench_batch.json" > "$OUT/r/bench_batch.md" 2>&1
echo "batch bench: exit $?"; cat "$OUT/r/bench_batch.md" | grep -E "^\|" | head -20; pack
wait
timeout 60 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_new.pt > /dev/null
for v in ab_var ab_var2; do
  (cd "$ROOT/.$v" && PYTHONPATH=$ROOT/.$v:/tmp/site timeout 60 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot /tmp/snap_$v.pt > /dev/null)
  echo "$v bits:"; python3 tests/gpu/ab_commits.py compare /tmp/snap_new.pt /tmp/snap_$v.pt | tee "$OUT/r/bits_$v.txt"
done
for side in new ab_var ab_var2; do
  dir=$ROOT; [ $side != new ] && dir=$ROOT/.$side
  (cd "$dir" && PYTHONPATH=$dir:/tmp/site timeout 100 python3 "$ROOT/tests/gpu/batch_check.py" --tiers megakernel --skip-checks \
      --json "$OUT/r/batch_$side.json" > "$OUT/r/batch_$side.log" 2>&1)
  echo "$side: exit $?"; grep -E "phases B=(2|8)|back to back.*'batch': 8|^tg" "$OUT/r/batch_$side.log" | sed -E "s/'seconds'[^,]*, //; s/, 'tier'[^}]*//; s/'steps': 128, //"
done
pack
OUT=$OUT/r timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "initcheck-ring-8" > "$OUT/r/sanitize.log" 2>&1
echo "initcheck B=8: exit $?"; tail -1 "$OUT/r/sanitize.log"; pack
timeout 120 python3 -m compare diff --batch 8 --json "$OUT/r/diff_batch.json" > "$OUT/r/diff_batch.txt" 2>&1
echo "batch diff: exit $?"; tail -8 "$OUT/r/diff_batch.txt"
pack && rm -rf "$OUT/r"
