"""Session 28, for the next attempt at our own delta rule (NOTES "Prefill" v14; CPU, no GPU needed): is the chunked
rule's sequential pass as one product a chunk, S_{c+1} = T_c S_c + B_c with T_c = e^{γ_C} I − Kdᵀ W and B_c = Kdᵀ U
(S as [K][V], Kd = K ⊙ e^{γ_C − γ}), as exact as fla's two products a chunk, once T_c is rounded to bf16 for the
tensor cores? Both emulated in fp32 torch with each bf16 rounding point written out (fla's: A, β e^γ K, β V, W, U,
S for the products, P, the scaled V'); errors of the output and the final state against reference/delta_rule.py's
chunked rule in fp32 on the same bf16 inputs (compare.delta_rule's inputs and error).

    python docs/results/2026-11-27-h100-s28/scan_rounding.py [T ...]
"""
import sys

import torch

from compare.delta_rule import inputs, reference, relative_error
from reference import ModelConfig


def rb(x):
    return x.bfloat16().float()


def emulate(q, k, v, g, beta, h0, scale, form, C=64):
    """form: "fla" (V' = U − W S, S += Kdᵀ V'), "scan" (S = T S + B, T in bf16, B fp32), "scan-b16" (B in bf16 too),
    "scan-diag" (S = e^{γ_C} S + T' S_bf16 + B, T' = −Kdᵀ W in bf16: the decay on the fp32 state)."""
    H = v.shape[2]
    group = H // q.shape[2]
    qf, kf = (x[0].float().repeat_interleave(group, dim=1).transpose(0, 1) for x in (q, k))  # [H, T, 128]
    vf = v[0].float().transpose(0, 1)
    gf, bf_ = g[0].T, beta[0].T  # [H, T]
    S = h0[0].transpose(-1, -2).clone()  # [H, K, V]
    T = vf.shape[1]
    out = torch.empty_like(vf)
    for c0 in range(0, T, C):
        sl = slice(c0, min(c0 + C, T))
        Q, K, V, b = qf[:, sl], kf[:, sl], vf[:, sl], bf_[:, sl]
        n = K.shape[1]
        gam = gf[:, sl].cumsum(-1)
        low = torch.ones(n, n, dtype=torch.bool).tril()
        Gam = (gam[:, :, None] - gam[:, None, :]).masked_fill(~low, float("-inf")).exp()
        M = ((b[..., None] * K) @ K.mT * Gam).tril(-1)
        A = rb(torch.linalg.inv(torch.eye(n) + M))
        W = rb(A @ rb(K * (b * gam.exp())[..., None]))
        U = rb(A @ rb(V * b[..., None]))
        Sb = rb(S)
        Vn = U - W @ Sb                                              # [H, n, V]
        P = rb((Q @ K.mT) * Gam)
        out[:, sl] = rb((Q @ Sb) * gam.exp()[..., None] * scale + (P @ rb(Vn)) * scale)
        dec = (gam[:, -1:] - gam).exp()                              # e^{γ_C − γ}
        if form == "fla":
            S = S * gam[:, -1, None, None].exp() + K.mT @ rb(Vn * dec[..., None])
        elif form == "scan-diag":
            Kd = rb(K * dec[..., None])
            Tm = rb(-(Kd.mT @ W))                                                      # [H, K, K], no diagonal
            S = S * gam[:, -1, None, None].exp() + Tm @ Sb + Kd.mT @ U
        else:
            Kd = rb(K * dec[..., None])
            Tm = rb(gam[:, -1, None, None].exp() * torch.eye(K.shape[-1]) - Kd.mT @ W)   # [H, K, K]
            B = Kd.mT @ U                                                              # [H, K, V]
            S = Tm @ Sb + (rb(B) if form == "scan-b16" else B)
    return out.transpose(0, 1)[None], S.transpose(-1, -2)[None]


config = ModelConfig.qwen3_5_0_8b()
scale = config.linear_key_head_dim ** -0.5
torch.set_num_threads(2)
for T in [int(x) for x in sys.argv[1:]] or [520, 2048]:
    for state in ("fresh", "carried"):
        for gates in ("model", "slow"):
            q, k, v, g, beta, h0 = inputs(config, T, state, gates, T, "cpu")
            o_ref, s_ref = reference(q, k, v, g, beta, h0, scale)
            row = []
            for form in ("fla", "scan", "scan-diag"):
                o, s = emulate(q, k, v, g, beta, h0, scale, form)
                row.append(f"{form} o {relative_error(o, o_ref):.2e} state {relative_error(s, s_ref):.2e}")
            print(f"T={T:5d} {state:7s} {gates:5s}: " + " | ".join(row), flush=True)
