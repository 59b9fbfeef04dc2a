"""The gated delta rule, in its recurrent form and its chunked parallel form.

Per value head, with state S ∈ ℝ^{dk×dv} (fp32) and α_t = exp(g_t):
    S′  = α_t S_{t−1}                    decay first
    u_t = β_t (v_t − S′ᵀ k_t)            the prediction error
    S_t = S′ + k_t u_tᵀ                  write
    o_t = S_tᵀ q_t                       read after the write
q and k arrive already L2-normalised (q also scaled by dk^-1/2). Value head h reads
key head ⌊h / (Hv/Hk)⌋. Both functions take and return the same tensors:
    q, k [B, T, Hk, dk]; v [B, T, Hv, dv]; g, beta [B, T, Hv]; initial_state [B, Hv, dk, dv] or None
    → (o [B, T, Hv, dv] fp32, final_state [B, Hv, dk, dv] fp32)
"""

from __future__ import annotations

import torch


def _heads_first(q, k, v, g, beta):
    """fp32, value heads expanded on q/k, time moved after heads: [B, H, T, ...]."""
    group = v.shape[2] // k.shape[2]
    q = q.float().repeat_interleave(group, dim=2)
    k = k.float().repeat_interleave(group, dim=2)
    return (x.float().transpose(1, 2) for x in (q, k, v, g, beta))


def _initial(initial_state, B, H, dk, dv, device):
    if initial_state is None:
        return torch.zeros(B, H, dk, dv, dtype=torch.float32, device=device)
    return initial_state.float().clone()


def gated_delta_rule_recurrent(*, q, k, v, g, beta, initial_state=None):
    """Token by token: the definition."""
    q, k, v, g, beta = _heads_first(q, k, v, g, beta)
    B, H, T, dk = k.shape
    dv = v.shape[-1]
    S = _initial(initial_state, B, H, dk, dv, v.device)
    out = torch.empty(B, H, T, dv, dtype=torch.float32, device=v.device)
    for t in range(T):
        S = S * g[:, :, t].exp()[..., None, None]                        # S′ = α S
        u = beta[:, :, t, None] * (v[:, :, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, :, t]))
        S = S + k[:, :, t, :, None] * u[:, :, None, :]                   # S += k uᵀ
        out[:, :, t] = torch.einsum("bhkv,bhk->bhv", S, q[:, :, t])       # o = Sᵀ q
    return out.transpose(1, 2), S


def gated_delta_rule_chunked(*, q, k, v, g, beta, initial_state=None, chunk_size=64):
    """The same function, C tokens at a time (WY form). Inside a chunk, with
    γ = cumsum(g), Γ_ij = exp(γ_i − γ_j) for j ≤ i:
        A  = I + strict_lower(diag(β) K Kᵀ ⊙ Γ)
        U  = A⁻¹ diag(β) V,   W = A⁻¹ diag(β e^γ) K
        V′ = U − W S,   O = (Q ⊙ e^γ) S + (Q Kᵀ ⊙ Γ) V′
        S ← e^{γ_C} S + (K ⊙ e^{γ_C − γ})ᵀ V′
    """
    q, k, v, g, beta = _heads_first(q, k, v, g, beta)
    B, H, T, dk = k.shape
    dv = v.shape[-1]
    C = chunk_size
    S = _initial(initial_state, B, H, dk, dv, v.device)
    out = torch.empty(B, H, T, dv, dtype=torch.float32, device=v.device)
    for start in range(0, T, C):
        sl = slice(start, min(start + C, T))
        Q, K, V, G, Bt = q[:, :, sl], k[:, :, sl], v[:, :, sl], g[:, :, sl], beta[:, :, sl]
        n = K.shape[2]
        gamma = G.cumsum(-1)                                              # [B, H, n]
        causal = torch.ones(n, n, dtype=torch.bool, device=v.device).tril()
        # Γ from fp32 differences; masked before exp so nothing overflows above the diagonal
        Gamma = (gamma[..., :, None] - gamma[..., None, :]).masked_fill(~causal, float("-inf")).exp()
        A = torch.eye(n, device=v.device) + ((Bt[..., None] * K) @ K.transpose(-1, -2) * Gamma).tril(-1)
        U = torch.linalg.solve_triangular(A, Bt[..., None] * V, upper=False, unitriangular=True)
        W = torch.linalg.solve_triangular(A, (Bt * gamma.exp())[..., None] * K, upper=False, unitriangular=True)
        V_new = U - W @ S
        out[:, :, sl] = (Q * gamma.exp()[..., None]) @ S + ((Q @ K.transpose(-1, -2)) * Gamma) @ V_new
        decay_to_end = (gamma[..., -1:] - gamma).exp()                    # e^{γ_C − γ_i}
        S = gamma[..., -1, None, None].exp() * S + (K * decay_to_end[..., None]).transpose(-1, -2) @ V_new
    return out.transpose(1, 2), S
