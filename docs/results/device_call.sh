# Sourced by a session's device call scripts (docs/results/<session>/callN.sh), from the repository root on the device:
#   source docs/results/device_call.sh [--site]
# gives: $OUT/r (created; what a call writes goes there), $ROOT, SECONDS = 0, `pack` (r/ into $OUT/results.tgz: only a
# few files come back one by one), $OUT/r/device.txt, PYTHONUNBUFFERED=1, WORKBENCH_COMMIT (from ./COMMIT), and
#   in_tree SIDE LIMIT CMD...   CMD under `timeout LIMIT` in tree SIDE (new: this checkout; other names: .ab_<side>,
#                               a `git archive` of the tree to compare), with its own megakernel build folder
# --site: the carried wheels (.whl: fla) and FlashQLA's site (.qla) installed into /tmp/site, on PYTHONPATH.
OUT=${OUT:-gpu-results}
mkdir -p "$OUT/r"
ROOT=$PWD
SECONDS=0
export PYTHONUNBUFFERED=1 WORKBENCH_COMMIT=$(cat COMMIT 2>/dev/null || echo unknown)
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
SITE=
if [ "${1:-}" = --site ]; then
  [ -d /tmp/site/flash_qla ] || {
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    for t in .qla/*.tar.xz; do tar -xJf "$t" -C /tmp/site; done
  }
  SITE=:/tmp/site
fi
export PYTHONPATH=$ROOT$SITE
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
tree_of() { if [ "$1" = new ]; then echo "$ROOT"; else echo "$ROOT/.ab_$1"; fi; }
in_tree() {
  local side=$1 limit=$2 dir
  shift 2
  dir=$(tree_of "$side")
  (cd "$dir" && QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel-$side \
    WORKBENCH_COMMIT=$(cat "$dir/COMMIT" 2>/dev/null || echo unknown) PYTHONPATH=$dir$SITE timeout "$limit" "$@")
}
# What most calls repeat (since session 37; earlier call scripts, the records of what ran, spell it out):
#   build_trees SIDE...             each tree's megakernel build, in parallel ($OUT/r/build_SIDE.log)
#   tg_bench N SIDE BATCHES [END]   the megakernel's tg128 at --batch BATCHES in tree SIDE ($OUT/r/bench_N_SIDE.json / .txt),
#                                   skipped when fewer than 45 s are left before END s (default 585) of the call
#   triton_b8 SIDE LIMIT            the Triton tier and the megakernel at B = 8 in one run (issue 19's ratio), in tree SIDE
#                                   under LIMIT s ($OUT/r/bench_triton_b8.json / .txt; a fresh machine's Triton compiles
#                                   took over 60 s in session 38), skipped when fewer than LIMIT + 10 s are left of 585
build_trees() {
  local side
  for side in "$@"; do
    in_tree "$side" 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
  done
  wait
  echo "builds: ${SECONDS}s"; pack
}
tg_bench() {
  local n=$1 side=$2 batches=$3 end=${4:-585}
  if [ $((end - SECONDS)) -lt 45 ]; then echo "$n $side: skipped"; return; fi
  in_tree "$side" 60 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch "$batches" --json "$OUT/r/bench_${n}_$side.json" > "$OUT/r/bench_${n}_$side.txt" 2>&1
  echo "$n $side: exit $? ${SECONDS}s"; grep -E '\| tg128' "$OUT/r/bench_${n}_$side.txt" | cut -c1-110; pack
}
triton_b8() {
  local side=$1 limit=$2
  if [ $((585 - SECONDS)) -lt $((limit + 10)) ]; then echo "triton b8: skipped"; return; fi
  in_tree "$side" "$limit" python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 \
      --depth 0 --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
  echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| tg128' "$OUT/r/bench_triton_b8.txt" | cut -c1-110; pack
}
# Since session 42 (END, default 585: the second past which nothing new starts; set it before sourcing or after):
#   gpu_tests NAME SIDE LIMIT FILTER [FILE]   pytest -m gpu -k FILTER of FILE (default the tree's
#                                   tests/test_megakernel_prefill.py) in tree SIDE ($OUT/r/tests_NAME.txt), skipped when
#                                   fewer than LIMIT + 5 s are left before END
#   call_span SIDE LIMIT GUARD      session 43's call_span.py at 520 rows in tree SIDE (a prefill call's whole time, host
#                                   prelude included: works in every tree), numbered in call order
#                                   ($OUT/r/span_<n>_SIDE.txt and folder), skipped when fewer than GUARD s are left before END
#   graph_time SIDE LIMIT GUARD     session 29's prelude_profile.py at 520 rows in tree SIDE (its gpu_graph: the prefill
#                                   graph's own time), numbered in call order ($OUT/r/prelude_<n>_SIDE.txt and folder),
#                                   skipped when fewer than GUARD s are left before END
END=${END:-585}
gpu_tests() {
  local name=$1 side=$2 limit=$3 filter=$4 file=${5:-tests/test_megakernel_prefill.py}
  if [ $((END - SECONDS)) -lt $((limit + 5)) ]; then echo "tests $name: skipped"; return; fi
  in_tree "$side" "$limit" python3 -m pytest -q -m gpu -p no:cacheprovider "$file" -k "$filter" > "$OUT/r/tests_$name.txt" 2>&1
  echo "tests $name: exit $? ${SECONDS}s"; tail -3 "$OUT/r/tests_$name.txt"; pack
}
# one numbered 520-row run of a results script (called as SCRIPT OUT_DIR 520) in tree SIDE: $OUT/r/KIND_N_SIDE.txt and
# folder, the output's lines matching PATTERN echoed; skipped when fewer than GUARD s are left before END
run_520() {
  local kind=$1 script=$2 pattern=$3 n=$4 side=$5 limit=$6 guard=$7 out
  out="$OUT/r/${kind}_${n}_$side"
  if [ $((END - SECONDS)) -lt "$guard" ]; then echo "$kind $n $side: skipped"; return; fi
  mkdir -p "$out"
  in_tree "$side" "$limit" python3 "$ROOT/$script" "$out" 520 > "$out.txt" 2>&1
  echo "$kind $n $side: exit $? ${SECONDS}s"; grep -E "$pattern" "$out.txt" | head -2; pack
}
# Since session 45:
#   bench_pp SIDE LENGTHS REPEATS LIMIT GUARD   `compare bench --pp LENGTHS` (megakernel, no tg) in tree SIDE under LIMIT s,
#                                   numbered in call order ($OUT/r/bench_pp_<n>_SIDE.json / .txt), skipped when fewer
#                                   than GUARD s are left before END
BENCH_N=0
bench_pp() {
  local side=$1 lengths=$2 repeats=$3 limit=$4 guard=$5
  BENCH_N=$((BENCH_N + 1))
  if [ $((END - SECONDS)) -lt "$guard" ]; then echo "bench $BENCH_N $side: skipped"; return; fi
  in_tree "$side" "$limit" python3 -m compare bench --tiers megakernel --repeats "$repeats" --no-progress --pp "$lengths" \
      --tg 0 --depth 0 --json "$OUT/r/bench_pp_${BENCH_N}_$side.json" > "$OUT/r/bench_pp_${BENCH_N}_$side.txt" 2>&1
  echo "bench $BENCH_N $side: exit $? ${SECONDS}s"; grep -E '\| pp' "$OUT/r/bench_pp_${BENCH_N}_$side.txt" | cut -c1-100; pack
}
GRAPH_N=0 SPAN_N=0
graph_time() { GRAPH_N=$((GRAPH_N + 1)); run_520 prelude docs/results/2026-11-27-h100-s29/prelude_profile.py gpu_graph "$GRAPH_N" "$@"; }
call_span() { SPAN_N=$((SPAN_N + 1)); run_520 span docs/results/2026-12-07-h100-s43/call_span.py "^pp" "$SPAN_N" "$@"; }
# Since session 50:
#   ncu_kernel SIDE KERNEL [SKIP [COUNT]]   ncu of COUNT (default 1) launches, after SKIP (default 0), of the kernels whose
#                                   name matches KERNEL in one eager prefill of 520 rows (session 44's prefill_once.py) in
#                                   tree SIDE: the sections SpeedOfLight, Occupancy, LaunchStats, WarpStateStats and
#                                   MemoryWorkloadAnalysis ($OUT/r/ncu_KERNEL.txt; its headline rows echoed), skipped
#                                   when fewer than 60 s are left before END
ncu_kernel() {
  local side=$1 k=$2 skip=${3:-0} count=${4:-1} ncu
  if [ $((END - SECONDS)) -lt 60 ]; then echo "ncu $k: skipped"; return; fi
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  in_tree "$side" 55 "$ncu" --clock-control none -k regex:"$k" --launch-skip "$skip" --launch-count "$count" \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      python3 "$ROOT/docs/results/2026-12-07-h100-s44/prefill_once.py" 520 1 > "$OUT/r/ncu_$k.txt" 2>&1
  echo "ncu $k: exit $? ${SECONDS}s"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Achieved Occupancy|Waves Per SM|Registers Per|Grid Size|Warp Cycles Per Issued" \
      "$OUT/r/ncu_$k.txt" | cut -c1-120
  pack
}
# Since session 53:
#   fi_site                         FlashInfer's GDN prefill and its CuTe DSL (docs/results/2026-12-08-s53-cpu/flashinfer_site.sh:
#                                   the folders .fi_a and .fi_b, ~40 MB each, so each comes with one call on the same warm
#                                   machine) joined, checked against .fi_b/fisite.sha256 and unpacked into /tmp/fisite once;
#                                   then on in_tree's PYTHONPATH after FlashQLA's site (whose tvm_ffi it shares): call it
#                                   just before the commands that need it (its protobuf and cuda-bindings shadow the
#                                   machine's). Returns 1, saying what is missing, where a part has not come.
fi_site() {
  local p
  if [ ! -d /tmp/fisite/flashinfer ]; then
    for p in .fi_a .fi_b; do
      [ -d "$ROOT/$p" ] || { echo "fi_site: $p has not come to this machine (each part comes with one call's carry)"; return 1; }
    done
    if [ "$(cat "$ROOT"/.fi_a/part.* "$ROOT"/.fi_b/part.* | sha256sum | cut -d' ' -f1)" != "$(cat "$ROOT/.fi_b/fisite.sha256")" ]; then
      echo "fi_site: .fi_a and .fi_b do not join into the packed site (sha256): parts of two different packings?"; return 1
    fi
    rm -rf /tmp/fisite /tmp/fisite.part; mkdir -p /tmp/fisite.part
    cat "$ROOT"/.fi_a/part.* "$ROOT"/.fi_b/part.* | tar -xJ -C /tmp/fisite.part && mv /tmp/fisite.part /tmp/fisite ||
      { echo "fi_site: unpacking failed"; rm -rf /tmp/fisite.part; return 1; }
  fi
  SITE=$SITE:/tmp/fisite:/tmp/fisite/nvidia_cutlass_dsl/dsl_packages
  echo "fi_site: ${SECONDS}s"
}
