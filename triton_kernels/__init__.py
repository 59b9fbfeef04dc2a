"""The Triton tier: our own Triton kernels, one small module per operation, and fla's
gated-delta-rule kernels, behind the same keyword-only ops as `reference/ops.py`.

    ops.py            the op namespace (`HybridModel(config, weights, triton_kernels.ops)` runs)
    norms.py, qk_norm_rope.py, conv1d.py, delta_inputs.py, swiglu.py, gemv.py, lm_head.py,
    attention_decode.py, attention_prefill.py       one operation each
    delta_rule.py     fla's chunked / fused-recurrent gated delta rule
    fla_interpreter.py  lets fla's kernels run under TRITON_INTERPRET=1 (CPU)
    model.py          the forward pass the tier runs: fused weights, state updated in place
    graph.py          forward steps captured in CUDA graphs and replayed
    tier.py           `TritonTier` (name "triton")
    testing.py        relative error, NaN-poisoned allocations (tests and bench)
    compile_check.py  compiles every kernel for sm_90 without a GPU
    bench_dev.py      the device timing script (python -m triton_kernels.bench_dev)

On a CPU the kernels run under TRITON_INTERPRET=1 (fp32, tiny shapes): a smoke layer.
"""
