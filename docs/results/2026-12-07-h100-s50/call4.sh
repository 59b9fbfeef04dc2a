#!/usr/bin/env bash
# Session 50, call 4 (main after the merge; run from main's checkout, carry [".whl", ".qla", "COMMIT"]): what calls 1-3
# left unrun on the merged tree and what the next lead needs. (1) the decode GPU tests (tests/test_megakernel.py; the
# change touches the binding all ops share); (2) `compare prefill --pp 520` twice (the kernel table: where the 2.36 ms
# go now that kkt_solve is gone); (3) session 43's call_span.py (the GPU's idle before the graph, host included);
# (4) ncu of the N = 1,024 GEMMs (out-projection / down: nvjet 64x88 "badd", 402 µs of s45's 1,121 µs of GEMMs at
# 520 rows): predicted L2-bound (their operand stream ~60 MB a GEMM from L2 against ~19 MB of HBM: "L2 Cache
# Throughput" > 70%, the tensor pipe < 40%) — what decides whether a GEMM of ours with TMA multicast could beat them.
set -u; source docs/results/device_call.sh --site; END=${END:-540}
build_trees new
gpu_tests decode new 200 "not sanitizer" tests/test_megakernel.py
for n in 1 2; do
  [ $((END - SECONDS)) -lt 70 ] && { echo "prefill $n: skipped"; continue; }
  in_tree new 60 python3 -m compare prefill --pp 520 --reference-pp 0 --out "$OUT/r/prefill_$n" > "$OUT/r/prefill_$n.txt" 2>&1
  echo "prefill $n: exit $? ${SECONDS}s"; grep "^| pp" "$OUT/r/prefill_$n/prefill_bench.md"; pack
done
call_span new 60 70
ncu_kernel new 64x88 2 2  # (the third and fourth out-projection / down GEMMs)
true
