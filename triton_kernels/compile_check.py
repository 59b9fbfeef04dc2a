"""Compile every Triton-tier kernel for sm_90 on a machine without a GPU:
`python -m triton_kernels.compile_check` (TRITON_INTERPRET must be unset).

The interpreter runs a kernel's Python, which is more lenient than Triton's compiler (a
variable re-typed inside an `if`, for one), so this runs the real front end and ptxas on
the bf16 specialisations the tier launches at the model's shapes. Exit status 1 if any
kernel fails to compile.
"""

from __future__ import annotations

import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from . import (attention_decode, attention_prefill, conv1d, delta_inputs, gemv, lm_head, norms, qk_norm_rope, step_check,
               swiglu)
from ._util import interpreting

TARGET = GPUTarget("cuda", 90, 32)
BF16, F32, I32, I64 = "*bf16", "*fp32", "*i32", "*i64"


def _ints(*names):
    return {n: "i32" for n in names}


def cases():
    """(name, kernel, {arg: type string or constexpr value}, num_warps)."""
    rows = dict(x_ptr=BF16, res_ptr=BF16, w_ptr=BF16, out_ptr=BF16, res_out_ptr=BF16, eps="fp32",
                **_ints("R", "D", "stride_x", "stride_r"))
    for residual in (True, False):
        yield f"add_rms_norm residual={residual}", norms._add_rms_norm_kernel, \
            dict(rows, HAS_RESIDUAL=residual, BLOCK_R=1, BLOCK_D=1024), 4
    yield "gated_rms_norm", norms._gated_rms_norm_kernel, \
        dict(x_ptr=BF16, z_ptr=BF16, w_ptr=BF16, out_ptr=BF16, eps="fp32", BLOCK_R=16, BLOCK_D=128,
             **_ints("R", "H", "D", "sx_t", "sx_h", "sz_t", "sz_h")), 4
    for cache, valid in ((True, True), (True, False), (False, False)):
        yield f"qk_norm_rope cache={cache} valid={valid}", qk_norm_rope._qk_norm_rope_kernel, \
            dict(q_ptr=BF16, k_ptr=BF16, v_ptr=BF16, qo_ptr=BF16, ko_ptr=BF16, vo_ptr=BF16, qw_ptr=BF16,
                 kw_ptr=BF16, inv_freq_ptr=F32, pos_ptr=I64, valid_ptr=I64, eps="fp32", WRITE_CACHE=cache, ROT=64,
                 HALF=32, BLOCK_T=1, BLOCK_D=256, HAS_VALID=valid,
                 **_ints("NT", "T", "Hq", "Hkv", "D", "sp_b", "sp_t", "sq_b", "sq_t", "sq_h", "sk_b", "sk_t", "sk_h",
                         "sv_b", "sv_t", "sv_h", "so_b", "so_h", "so_t")), 2
    for state in (True, False):
        yield f"conv prefill state={state}", conv1d._conv_prefill_kernel, \
            dict(x_ptr=BF16, w_ptr=BF16, s_ptr=BF16, y_ptr=BF16, ns_ptr=BF16, HAS_STATE=state, K=4, BLOCK_T=16,
                 BLOCK_C=128, **_ints("T", "C", "sx_b", "sx_t")), 4
    for valid in (True, False):
        yield f"conv step valid={valid}", conv1d._conv_step_kernel, \
            dict(x_ptr=BF16, w_ptr=BF16, s_ptr=BF16, y_ptr=BF16, ns_ptr=BF16, valid_ptr=I64, K=4, KP=4, BLOCK_C=256,
                 HAS_VALID=valid, **_ints("C", "sx_b")), 4
        yield f"delta_rule_inputs valid={valid}", delta_inputs._delta_inputs_kernel, \
            dict(q_ptr=BF16, k_ptr=BF16, a_ptr=BF16, b_ptr=BF16, alog_ptr=BF16, dtb_ptr=BF16, qo_ptr=F32, ko_ptr=F32,
                 g_ptr=F32, beta_ptr=F32, valid_ptr=I64, eps="fp32", scale="fp32", GROUP=1, BLOCK_T=1, BLOCK_D=128,
                 BLOCK_G=1, HAS_VALID=valid, **_ints("NT", "Hk", "Hv", "D", "sq_t", "sk_t", "sa_t", "sb_t")), 1
    yield "l2norm", delta_inputs._l2norm_kernel, \
        dict(x_ptr=BF16, y_ptr=F32, eps="fp32", BLOCK_R=4, BLOCK_D=128, **_ints("R", "D", "sx")), 4
    yield "swiglu", swiglu._swiglu_kernel, \
        dict(g_ptr=BF16, u_ptr=BF16, o_ptr=BF16, BLOCK=1024, **_ints("I", "sg", "su")), 4
    for out, block_n, block_k, act, even_k in ((BF16, 2, 1024, False, True), (BF16, 2, 4096, True, False),
                                                (BF16, 4, 1024, False, True), (F32, 2, 1024, False, True)):
        yield f"gemv {block_n}x{block_k} swiglu={act} out={out}", gemv._gemv_kernel, \
            dict(x_ptr=BF16, w_ptr=BF16, y_ptr=out, BLOCK_N=block_n, BLOCK_K=block_k, SWIGLU=act, EVEN_N=True,
                 EVEN_K=even_k, **_ints("N", "K", "stride_w", "up_offset")), 4
    yield "argmax blocks", lm_head._argmax_blocks_kernel, \
        dict(x_ptr=F32, vmax_ptr=F32, imax_ptr=I32, BLOCK=8192, **_ints("V", "n_blocks")), 8
    for valid in (True, False):
        yield f"argmax reduce valid={valid}", lm_head._argmax_reduce_kernel, \
            dict(vmax_ptr=F32, imax_ptr=I32, out_ptr=I64, valid_ptr=I64, fallback_ptr=I64, BLOCK=32, HAS_VALID=valid,
                 **_ints("n_blocks")), 4
    yield "step check", step_check._step_check_kernel, \
        dict(ids_ptr=I64, fault_ptr=I64, pos_ptr=I64, safe_ptr=I64, valid_ptr=I64, BLOCK_B=1, NONE=0, TOKEN=1,
             POSITION=2, **_ints("B", "V", "max_seq")), 1
    yield "attention decode split", attention_decode._decode_split_kernel, \
        dict(q_ptr=BF16, k_ptr=BF16, v_ptr=BF16, pos_ptr=I64, acc_ptr=F32, m_ptr=F32, l_ptr=F32, scale="fp32",
             GROUP=4, NUM_SPLITS=32, BLOCK_G=16, BLOCK_N=64, D=256, IEEE=False,
             **_ints("Hkv", "sp_b", "sq_b", "sq_h", "sk_b", "sk_h", "sk_s")), 4
    yield "attention decode merge", attention_decode._decode_merge_kernel, \
        dict(acc_ptr=F32, m_ptr=F32, l_ptr=F32, gate_ptr=BF16, out_ptr=BF16, NUM_SPLITS=32, BLOCK_S=32, D=256,
             **_ints("Hq", "sg_b", "sg_h")), 4
    yield "attention prefill", attention_prefill._prefill_kernel, \
        dict(q_ptr=BF16, g_ptr=BF16, k_ptr=BF16, v_ptr=BF16, out_ptr=BF16, scale="fp32", BLOCK_M=64, BLOCK_N=32,
             D=256, IEEE=False, **_ints("T", "start_pos", "Hq", "Hkv", "sq_b", "sq_t", "sq_h", "sg_b", "sg_t",
                                        "sg_h", "sk_b", "sk_h", "sk_s")), 8


def compile_one(kernel, args, num_warps):
    signature = {a: (args[a] if isinstance(args[a], str) else "constexpr") for a in kernel.arg_names}
    constexprs = {a: v for a, v in args.items() if not isinstance(v, str)}
    return triton.compile(ASTSource(kernel, signature, constexprs), target=TARGET, options={"num_warps": num_warps})


def main() -> int:
    if interpreting():
        print("unset TRITON_INTERPRET: the interpreter replaces the kernels this compiles", file=sys.stderr)
        return 2
    failed = 0
    for name, kernel, args, num_warps in cases():
        try:
            compiled = compile_one(kernel, args, num_warps)
            print(f"ok    {name} (shared memory {compiled.metadata.shared} B)")
        except Exception as e:  # report every kernel, then fail
            failed += 1
            print(f"FAIL  {name}: {str(e)[-1200:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
