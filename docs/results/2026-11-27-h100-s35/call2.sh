#!/usr/bin/env bash
# Session 35, call 2. Issue 19: branch variant-lm-batch-compact (new) against main (.ab_main): a batch's int8 argmax
# keeps in each batch row's list only the rows whose upper bound reaches its final best lower bound before pass 2
# (warp b compacts row b's list; pass 2 reads rows only). A CPU simulation on the built-in head (call 1's cap-40
# failure explained: ~14 rows a batch row a block, up to 43) gives ~5 after the final filter, so pass 2 takes one round
# of 64 entries at B = 8 instead of two; sm_90a: B = 8's one-step kernel's spills 68 / 40 → 0 / 0 B (many-token B = 8
# 80 / 92 → 156 / 128). Predicted: bits identical (the same rows reach the comparison); B = 8 +0.5 to +1%, B = 2-4
# +0 to +0.5%, batch 1 equal (its kernel unchanged). Also: the Triton tier at B = 8 in the same run (the bar's 2x),
# memcheck of the batch kernel, and (issue 21) cuBLAS's GEMM time against the rows M around 520 (gemm_m.py).
set -u
source docs/results/device_call.sh --site
for side in new main; do
  in_tree $side 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_$side.log" 2>&1 &
done
wait
echo "builds: ${SECONDS}s"; pack
in_tree new 200 python3 -m pytest -q -m gpu -p no:cacheprovider -o faulthandler_timeout=190 tests/test_batch_gpu.py \
    -k "int8_argmax_of_a_batch or poison_proof" > "$OUT/r/tests_batch.txt" 2>&1
echo "tests batch: exit $? ${SECONDS}s"; tail -1 "$OUT/r/tests_batch.txt" | cut -c1-200; pack
bench() {  # n side
  if [ $((585 - SECONDS)) -lt 45 ]; then echo "$1 $2: skipped"; return; fi
  in_tree $2 90 python3 -m compare bench --tiers megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
      --batch 1,2,4,8 --json "$OUT/r/bench_${1}_$2.json" > "$OUT/r/bench_${1}_$2.txt" 2>&1
  echo "$1 $2: exit $? ${SECONDS}s"; grep -E '\| tg128' $OUT/r/bench_${1}_$2.txt | cut -c1-110; pack
}
bench 1 main; bench 2 new; bench 3 main; bench 4 new
in_tree new 120 python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
    --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| tg128|x ' $OUT/r/bench_triton_b8.txt | cut -c1-120; pack
in_tree new 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "compute_sanitizer and memcheck-ring-8" \
    > "$OUT/r/sanitizer_memcheck.txt" 2>&1
echo "memcheck: exit $? ${SECONDS}s"; tail -1 "$OUT/r/sanitizer_memcheck.txt" | cut -c1-200; pack
if [ $((585 - SECONDS)) -gt 50 ]; then
  in_tree new 60 python3 docs/results/2026-11-27-h100-s35/gemm_m.py "$OUT/r/gemm" > "$OUT/r/gemm_m.txt" 2>&1
  echo "gemm_m: exit $? ${SECONDS}s"; cat "$OUT/r/gemm/gemm_m.md" 2>/dev/null | cut -c1-200; pack
fi
true
