"""Session 23, issue 21: FlashQLA's intra-card context split at the prefill's lengths, forced.

FlashQLA 0.1.3's calibrated cost model (autocp, sm90 coefficients) predicts a NEGATIVE time for the
unsplit rule at 256-1,024 tokens (computed on a CPU from its decision code: -0.051 ms at 256, -0.041
at 520) and so never splits below 32k tokens: at 520 tokens the fused kernel runs 16 heads x one
chain of 9 chunks on 132 SMs. This times, one DeltaNet layer at the 0.8B's shapes (compare
delta-rule's inputs: a carried state, model-like decays), the rule as the prefill runs it ("auto")
against the same call with the prompt split into pieces of L chunks ("cp<L>": FlashQLA's own
_build_intra_cp_context, its warm-up and correction kernels), and "auto-g" = auto with the chunk-local
cumsum of g done outside (what folding it into dn_prep would save). Error: relative (Frobenius) of
the output and final state against the fp32 reference, as compare delta-rule.
"""
import json
import sys

import torch

from compare.delta_rule import inputs, reference, relative_error
from compare.timing import graph_us
from reference import ModelConfig

from flash_qla import chunk_gated_delta_rule_fwd
from flash_qla.ops.gated_delta_rule.chunk import CHUNK_SIZE, kkt_solve, fused_gdr_fwd
from flash_qla.ops.gated_delta_rule.chunk import cp_preprocess_fwd
from flash_qla.ops.gated_delta_rule.chunk.cp import build_cp_context
from flash_qla.ops.gated_delta_rule.chunk.cp.context import _build_intra_cp_context
from flash_qla.ops.utils import chunk_local_cumsum
from flash_qla.utils.index import prepare_varlen_metadata

dev = "cuda"
config = ModelConfig.qwen3_5_0_8b()
HV = config.linear_num_value_heads
scale = config.linear_key_head_dim ** -0.5


def prepared(ctx):
    for cu in (ctx.cu_seqlens, ctx.intra_cp_cu_seqlens if ctx.is_intra else None):
        if cu is not None:
            prepare_varlen_metadata(cu, cu.cpu())
    return ctx


def rule(ctx):
    def fn(q, k, v, g, beta, h0):
        _, _, o, _, final, _ = chunk_gated_delta_rule_fwd(q, k, v, g, beta, scale=scale, initial_state=h0,
                                                          output_final_state=True, state_v_first=True,
                                                          cp_context=ctx, is_train=False)
        return o, final
    return fn


def rule_g_done(ctx):  # chunk_gated_delta_rule_fwd's body without its cumsum (g given cumsummed)
    def fn(q, k, v, g, beta, h0):
        A = kkt_solve(k=k, b=beta, cu_seqlens=ctx.cu_seqlens, chunk_size=CHUNK_SIZE)
        h0, _ = cp_preprocess_fwd(ctx, k=k, v=v, a=A, g=g, beta=beta, initial_state=h0, state_v_first=True,
                                  enable_fwd_cp_cache=False)
        o, _, final = fused_gdr_fwd(q=q, k=k, v=v, a=A, g=g, b=beta, scale=scale, initial_state=h0,
                                    output_final_state=True, output_h=False, output_o=True,
                                    cu_seqlens=ctx.intra_cp_cu_seqlens if ctx.is_intra else ctx.cu_seqlens,
                                    cp_seq_map=ctx.seq_map_c2r, raw_cu_seqlens=ctx.cu_seqlens, state_v_first=True)
        return o, final
    return fn


def main(out):
    rows = []
    for T in [int(x) for x in sys.argv[2].split(",")]:
        n = -(-T // CHUNK_SIZE)
        cu = torch.tensor([0, T], dtype=torch.int32, device=dev)
        q, k, v, g, beta, h0 = inputs(config, T, "carried", "model", 1000 + T, dev)
        o_ref, s_ref = reference(q, k, v, g, beta, h0, scale)
        variants = {"auto": rule(prepared(build_cp_context(cu.clone(), enable_intra=True, num_v_heads=HV,
                                                           chunk_size=CHUNK_SIZE, is_train=False)))}
        auto_ctx = prepared(build_cp_context(cu.clone(), enable_intra=True, num_v_heads=HV, chunk_size=CHUNK_SIZE,
                                             is_train=False))
        variants["auto-g"] = rule_g_done(auto_ctx)
        for L in (2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128):
            if L < n and -(-n // L) <= 512:
                variants[f"cp{L}"] = rule(prepared(_build_intra_cp_context(cu.clone(), CHUNK_SIZE, [n], L)))
        g_cum = chunk_local_cumsum(g=g, cu_seqlens=auto_ctx.cu_seqlens, chunk_size=CHUNK_SIZE)
        base = None
        for name, fn in variants.items():
            gg = g_cum if name == "auto-g" else g
            try:
                o, final = fn(q, k, v, gg, beta, h0.clone())
                torch.cuda.synchronize()
                us, how = graph_us(lambda: fn(q, k, v, gg, beta, h0), 18, 7)
            except Exception as e:
                print(f"pp{T} {name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            base = us if name == "auto" else base
            r = dict(T=T, variant=name, us=us, how=how, vs_auto=base / us, err_o=relative_error(o, o_ref),
                     err_state=relative_error(final, s_ref))
            rows.append(r)
            print(f"pp{T:6d} {name:7s} {us:9.1f} µs  x{r['vs_auto']:.2f}  err o {r['err_o']:.2e} state {r['err_state']:.2e}",
                  flush=True)
        json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), open(out + ".json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
