#!/usr/bin/env bash
# Prepared in session 53 (no device lent that session). Issue 21's A/B rows against FlashInfer's GDN prefill (the serving
# engines' other kernel; on Hopper a CuTe DSL kernel, compiled on its first call): `compare delta-rule` one layer at
# pp520 / 4096 / 32768 (fla, FlashQLA, FlashInfer; fresh and carried states; µs and errors against the fp32 rule),
# the prefill's GPU test of each rule (every layer of a 520-token prompt within the bf16 bounds), and the whole prefill
# with FlashQLA's rule against FlashInfer's (`compare ab` at pp520, interleaved).
# FlashInfer's site is ~80 MB packed, over what one call carries beside the tree (64 MiB), so it comes in two halves,
# each with one call on the same warm machine (docs/results/device_call.sh fi_site): .fi_a with one call before this
# one, .fi_b with this one. E.g. the session's calls: next_call_b.sh with carry [".whl", "COMMIT", ".fi_a"] (FlashQLA's
# .qla stays from call 1 on a warm machine: that script checks), then this with carry [".whl", "COMMIT", ".fi_b"].
# *Predicted* (FlashInfer's own README figures are for B200/H200 batches, not this shape): one layer at pp520 between
# FlashQLA's ~20 µs and fla's ~50 (a persistent CuTe DSL kernel with TMA, no intra-sequence split at this length);
# errors of the fp32-state rules, ~1e-3 output, ~1e-3 state; a first call's compile 10-60 s a variant.
# Run as END=<s> bash docs/results/2026-12-08-s53-cpu/next_call_fi.sh   (timeout 600; ~300 s)
set -u; source docs/results/device_call.sh --site; END=${END:-570}
[ -d /tmp/site/flash_qla ] || { echo "FlashQLA's site is missing (a fresh machine?): carry .qla and .whl"; exit 3; }
fi_site || exit 3
build_trees new
in_tree new 60 python3 -c "import flashinfer, cutlass, tvm_ffi, cuda.bindings as c; print('flashinfer', flashinfer.__version__, \
'tvm_ffi', tvm_ffi.__version__, 'cuda.bindings', c.__version__)" > $OUT/r/fi_import.txt 2>&1; echo "import: exit $?"; cat $OUT/r/fi_import.txt | tail -3
mkdir -p $OUT/r/dr
in_tree new 300 python3 -m compare delta-rule --pp 520,4096,32768 --rules fla,flash-qla,flashinfer --out $OUT/r/dr \
    --png $OUT/r/dr/delta_rule.png > $OUT/r/dr.txt 2>&1
echo "delta-rule: exit $? ${SECONDS}s"; grep -E "^\| pp" $OUT/r/dr.txt | cut -c1-140; pack
gpu_tests fi_rule new 120 "each_delta_rule"
[ $((END - SECONDS)) -gt 100 ] && { in_tree new 90 python3 -m compare ab qla:prefill_delta_rule=flash-qla \
    fi:prefill_delta_rule=flashinfer --tg 1 --pp 520 --rounds 3 --json $OUT/r/ab_pp520.json > $OUT/r/ab_pp520.txt 2>&1
  echo "ab: exit $? ${SECONDS}s"; tail -8 $OUT/r/ab_pp520.txt; pack; }
true
