#!/usr/bin/env bash
# Session 24 call 2 (main = 125b43c + this folder; att = branch variant-att-skip-corr 610c64d in .ab_att).
# 1. the segfault of call 1 (tests/test_megakernel_prefill.py died at test_dn_prep_writes_g_summed_within_chunks_when_asked[1-1]):
#    that test alone under faulthandler (the Python stack of the crash);
# 2. gaps.py on main at pp 2, 64, 520, 4096: where the ~350 µs between the kernel sum (2.53 ms) and the region (2.88 ms)
#    of pp520 go: host prelude (region - replay) or gaps inside the graph (replay - kernel sum).
#    Prediction: mostly inside the graph (~270 kernels, ~1 µs each);
# 3. issue 20 part 2: att's bits equal main's (ab_commits.py), tg128 at depth 0 / 32768, order main att att main.
#    Prediction (s23 next_call_att.sh): d32768 1,094 -> ~1,110 (+1.5%), d0 within 0.3%.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD; HERE=docs/results/2026-11-26-h100-s24
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SECONDS=0
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
for t in .qla/*.tar.xz; do tar -xJf $t -C /tmp/site; done
export PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = main ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir; shift 2; dir=$(tree_of "$side")
  (cd "$dir" && WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir:/tmp/site timeout "$limit" "$@")
}
for side in main att; do
  in_tree $side 240 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done; wait
echo "builds: ${SECONDS}s"; tail -qn1 "$OUT"/r/build_*.log | cut -c1-200
in_tree main 100 python3 -X faulthandler -m pytest -q -s -m gpu tests/test_megakernel_prefill.py -k dn_prep -p no:cacheprovider \
    > "$OUT/r/tests_dn_prep.txt" 2>&1
echo "dn_prep tests: exit $? ${SECONDS}s"; tail -30 "$OUT/r/tests_dn_prep.txt" | cut -c1-250; pack
in_tree main 90 python3 $HERE/gaps.py "$OUT/r/gaps.json" 2,64,520,4096 > "$OUT/r/gaps.txt" 2>&1
echo "gaps: exit $? ${SECONDS}s"; cat "$OUT/r/gaps.txt" | cut -c1-250; pack
for side in main att; do
  in_tree $side 100 python3 "$ROOT/tests/gpu/ab_commits.py" snapshot "$OUT/r/snap_$side.pt" > "$OUT/r/snap_$side.log" 2>&1
done
python3 tests/gpu/ab_commits.py compare "$OUT/r/snap_main.pt" "$OUT/r/snap_att.pt" > "$OUT/r/bits.txt" 2>&1
echo "bits: exit $? ${SECONDS}s"; tail -5 "$OUT/r/bits.txt"; rm -f "$OUT"/r/snap_*.pt; pack
i=0
for side in main att att main; do
  i=$((i + 1))
  in_tree $side 100 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0,32768 \
      --batch 1 --json "$OUT/r/tg_${i}_${side}.json" > "$OUT/r/tg_${i}_${side}.md" 2>&1
  echo "run $i $side: exit $? ${SECONDS}s"; grep -E "^\| megakernel" "$OUT/r/tg_${i}_${side}.md" | cut -c1-75; pack
done
true
