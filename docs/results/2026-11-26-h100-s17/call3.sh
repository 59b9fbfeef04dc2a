#!/usr/bin/env bash
# Session 17, call 3 (two runs: STAGE=1, then STAGE=2 on the warm machine, its builds cached). Trees:
# "new" = the working tree (4578e68: the prefill's plans keyed by (T, max_seq, start == 0), the start in
# the device table, flash varlen attention after earlier tokens, SDPA for a fresh prompt), "base" =
# .ab_base (113cffc), "var" = .ab_var (8680f7a with ATT_MAX_SPLIT = 66; its decode kernel is new's).
# Stage 1: the prefill GPU tests (not the initcheck / synccheck runs, which outlast their 240 s on
# cuBLAS and fla: call 2), pp A/B base/new. Stage 2: decode A/B new/var at d32768.
# Predictions: pp256 @ d16384 16k -> ~46k (call 2), fresh pp rows equal to base (+-2%); 66 splits
# d32768 +0.5-1%, tg128 / b8 unchanged.
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
for side in base var; do in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 & done
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1; wait
tail -qn1 "$OUT"/r/build_*.log
# ab NAME SECONDS SIDE_A SIDE_B BENCH_ARGS...: compare bench of the megakernel tier, alternating, 2 rounds
ab() {
  local name=$1 limit=$2 sa=$3 sb=$4 round side; shift 4
  for round in 1 2; do
    for side in $sa $sb; do
      in_tree $side "$limit" python3 -m compare bench --tiers megakernel --repeats 3 --no-progress "$@" \
          --json "$OUT/r/${name}_${side}_$round.json" > "$OUT/r/${name}_${side}_$round.md" 2>&1
      echo "$name $side $round: exit $?"; grep -E "^\| megakernel" "$OUT/r/${name}_${side}_$round.md" | cut -c1-75; pack
    done
  done
}
STAGE=${STAGE:-1}
if [ "$STAGE" = 1 ]; then
  in_tree new 300 python3 -m pytest -q -x -m gpu tests/test_megakernel_prefill.py "tests/test_megakernel.py::test_opcheck_every_op" \
      -k "not initcheck and not synccheck" > "$OUT/r/tests_prefill.txt" 2>&1; echo "prefill tests: exit $?"; tail -n 3 "$OUT/r/tests_prefill.txt"; pack
  ab pp 150 base new --pp 256,520 --depth 16384 --tg 0
  ab pplong 150 base new --pp 4096,32768 --depth 0 --tg 0
else
  ab split 150 new var --pp 0 --tg 128 --depth 32768 --batch 1,8
fi
