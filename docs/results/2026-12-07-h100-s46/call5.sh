#!/usr/bin/env bash
# Session 46, call 5 (issue 21): the tier's tuned GEMMs (megakernel/prefill_gemm.py, prefill_gemm_lt) on main's tree:
# their GPU tests, the every-layer test at 4,097 rows (the tuned shapes engaged), tuned_ab.py (tuned against torch's
# calls in one process) at 520 / 4,096 / 32,768 rows, then opcheck of every op (prefill_gemm_lt included).
# Predicted (calls 1 and 4): pp520 unchanged (torch's picks kept), pp4096 +2.0 to +2.5% (gate/up and the attention
# in-projection ~10% faster), pp32768 +1 to +3%.
# Setup: carry [".whl", ".qla", "COMMIT"]. Run as END=520 bash docs/results/2026-12-07-h100-s46/call5.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s46
build_trees new
gpu_tests gemm new 90 "prefill_gemm"
gpu_tests layers4097 new 100 "every_layer_of_the_prompt and 4097"
in_tree new 200 python3 $ROOT/$D/tuned_ab.py $OUT/r 520,4096,32768 > $OUT/r/tuned_ab.txt 2>&1
echo "tuned ab: exit $? ${SECONDS}s"; grep -E "^pp|beta" $OUT/r/tuned_ab.txt | cut -c1-200; tail -2 $OUT/r/tuned_ab.txt; pack
gpu_tests opcheck new 150 "opcheck_every_op" tests/test_megakernel.py
true
