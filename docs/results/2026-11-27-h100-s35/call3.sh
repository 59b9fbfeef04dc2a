#!/usr/bin/env bash
# Session 35, call 3 (main c23a5b1, the compacted batch argmax kept). (1) Issue 21: gemm_variants.py, other ways cuBLAS
# can run the prefill's five GEMM shapes at 520 rows (call 2's gemm_m.py: gate_up 15.18 µs at 520 rows against 12.84
# at 512, so the algorithm cuBLAS picks for 520 costs as much as 640 rows). Predicted: some way within ~5% of torch.mm
# for most shapes (s23 call 1), the K-major weights or the N-side batch possibly nearer 512 rows' time for gate_up.
# (2) Issue 19: the Triton tier and the megakernel at B = 8 in one run (the bar: 2x the Triton tier; call 2's try ran
# past its 120 s). Predicted: Triton ~5,300 (its last), megakernel ~9,300: 1.75x.
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_new.log" 2>&1 &
BUILD=$!
in_tree new 120 python3 docs/results/2026-11-27-h100-s35/gemm_variants.py "$OUT/r/gemm" > "$OUT/r/gemm_variants.txt" 2>&1
echo "gemm_variants: exit $? ${SECONDS}s"; cat "$OUT/r/gemm/gemm_variants.md" 2>/dev/null | cut -c1-400; pack
wait $BUILD; echo "build: exit $? ${SECONDS}s"
in_tree new 330 python3 -m compare bench --tiers triton,megakernel --repeats 3 --no-progress --pp 0 --tg 128 --depth 0 \
    --batch 8 --json "$OUT/r/bench_triton_b8.json" > "$OUT/r/bench_triton_b8.txt" 2>&1
echo "triton b8: exit $? ${SECONDS}s"; grep -E '\| (triton|megakernel) ' $OUT/r/bench_triton_b8.txt | cut -c1-120; pack
true
