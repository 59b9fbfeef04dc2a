#!/usr/bin/env bash
# Prepared in session 53 (no device lent that session). Issue 21's A/B rows against FlashInfer's GDN prefill (the serving
# engines' other kernel; on Hopper a CuTe DSL kernel, compiled on its first call): `compare delta-rule` one layer at
# pp520 / 4096 / 32768 (fla, FlashQLA, FlashInfer; fresh and carried states; µs and errors against the fp32 rule),
# the prefill's GPU test of each rule (every layer of a 520-token prompt within the bf16 bounds), and the whole prefill
# with FlashQLA's rule against FlashInfer's (`compare ab` at pp520, interleaved).
# FlashInfer's site is ~80 MB packed, over what one call carries beside the tree (64 MiB), so it comes in two halves,
# each with one call on the same warm machine (docs/results/device_call.sh fi_site), and FlashQLA's site (.qla, whose
# tvm_ffi FlashInfer's CuTe DSL loads too) with a call before them: on a fresh machine this is the third call, e.g.
# s52's next_call.sh (carry .qla ...), next_call_b.sh (carry [".whl", "COMMIT", ".fi_a"]), then this one (carry
# [".whl", "COMMIT", ".fi_b"]); any call between them that carries neither .qla nor .fi_a keeps both there. The device
# budget (30 min a session, ~6 of them a machine's start) holds next_call, b and this, or next_call, b and c: where
# main meets the bar, c (the decode GPU file) comes first and this waits for a session with the time.
# *Predicted* (FlashInfer's PRs #3481 / #3866 time its SM90 rule on an H100 at Qwen3.5 head counts: 1.4-4.9x fla's
# Triton at 2k-64k tokens, none at 16 heads x 520): one layer at pp520 20-40 µs (FlashQLA here ~20, fla ~50), pp4096
# 100-200 (FlashQLA ~100 with its split forced), pp32768 400-900 (FlashQLA ~410); errors like the other fp32-state
# rules (~4e-3 output against the fp32 rule); the first call compiles each kernel variant (10-60 s).
# Run as END=<s> bash docs/results/2026-12-08-s53-cpu/next_call_fi.sh   (timeout 600; ~300 s)
set -u; source docs/results/device_call.sh --site; END=${END:-570}
[ -d /tmp/site/flash_qla ] || { echo "FlashQLA's site is missing (a fresh machine?): carry .qla and .whl"; exit 3; }
fi_site || exit 3
build_trees new
# what loads, and which of its routes FlashInfer takes for one sequence of the 0.8B's 16 value heads on this GPU
# (use_cp="auto": its context-parallel kernel where sequences x heads are few for the SMs)
in_tree new 60 python3 -c "import torch, flashinfer, cutlass, tvm_ffi, cuda.bindings as c
from flashinfer.gdn_kernels.delta_rule_dsl.varlen_helper import should_use_cp_host
p = torch.cuda.get_device_properties(0)
print('flashinfer', flashinfer.__version__, 'tvm_ffi', tvm_ffi.__version__, 'cuda.bindings', c.__version__, 'cutlass', cutlass.__version__)
print('context parallel for 1 x 16 heads:', should_use_cp_host(16, p.multi_processor_count, p.name,
      device_capability=torch.cuda.get_device_capability(0)))" > $OUT/r/fi_import.txt 2>&1
echo "import: exit $?"; tail -3 $OUT/r/fi_import.txt
mkdir -p $OUT/r/dr
in_tree new 300 python3 -m compare delta-rule --pp 520,4096,32768 --rules fla,flash-qla,flashinfer --out $OUT/r/dr \
    --png $OUT/r/dr/delta_rule.png > $OUT/r/dr.txt 2>&1
echo "delta-rule: exit $? ${SECONDS}s"; grep -E "^\| pp" $OUT/r/dr.txt | cut -c1-140; pack
gpu_tests fi_rule new 240 "each_delta_rule or padding_rows_to_its_chunk"
[ $((END - SECONDS)) -gt 100 ] && { in_tree new 90 python3 -m compare ab --tier megakernel qla:prefill_delta_rule=flash-qla \
    fi:prefill_delta_rule=flashinfer --tg 1 --pp 520 --rounds 3 --json $OUT/r/ab_pp520.json > $OUT/r/ab_pp520.txt 2>&1
  echo "ab: exit $? ${SECONDS}s"; tail -8 $OUT/r/ab_pp520.txt; pack; }
true
