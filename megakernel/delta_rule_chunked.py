"""The fast prefill's gated delta rule over a prompt, chunked (reference/delta_rule.py
`gated_delta_rule_chunked` is the math; fla's `chunk_gated_delta_rule` was the kernel before
this one and stays its A/B reference and oracle in the tests). Two Triton kernels per layer
instead of fla's five and the state copies around them:

  _chunk_intra   one program per (chunk of C = 64 tokens, head), all chunks at once: the
                 chunk's cumulative log-decay γ, its causal scores P = (Q Kᵀ ⊙ Γ) (diagonal
                 included), the WY factors W = A⁻¹ diag(β e^γ) K and U = A⁻¹ diag(β) V with
                 A = I + strict_lower(diag(β) K Kᵀ ⊙ Γ) inverted by 16 x 16 blocks; the inputs
                 are read KB columns at a time (K Kᵀ and Q Kᵀ summed over them, W and U written
                 by them). None of it depends on the state.
  _chunk_state   one program per (head, BV value rows of the state): the state's rows
                 S [BV, dk] held in registers (fp32) across the chunks, in order:
                     V′ = U − W Sᵀ,  O = (Q ⊙ e^γ) Sᵀ · scale + P V′ · scale
                     S ← e^{γ_C} S + V′ᵀ (K ⊙ e^{γ_C − γ})
                 read from and written back to the decode state in place, through the
                 state table's pointer (prefill.cuh ST_DN: one CUDA graph serves every state).

Layouts (the fast prefill's, csrc/prefill.cuh): q, k, v [T][H][128] bf16 (q, k L2-normalised,
q not yet scaled); g (log-decay), beta [T][H] fp32, a padding row's g = beta = 0; the state
[NDN][H][dv][dk] fp32 (k contiguous); o [T][H][dv] bf16. The dots run on the tensor cores
with fp32 accumulation: bf16 inputs where fla's are bf16 (K Kᵀ, Q Kᵀ, W Sᵀ, Q Sᵀ, V′ᵀ K), TF32
for the WY products and P V′, fp32 FMA for the inverse's 16 x 16 blocks.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

CHUNK = 64  # tokens per chunk (C)
SUB = 16  # the inverse's block size (C / 4 blocks per side)
KB = 32  # _chunk_intra's columns of k, q, v per step (its registers: 16 x KB pieces)
BV = 16  # state rows (values) per _chunk_state program: 16 heads x 8 = 128 programs
INTRA_WARPS = 2  # warps per _chunk_intra program (2: 48 / 204 / 1,495 µs a layer at 520 / 4,096 / 32,768 tokens; 4: 55 / 265 / 2,013)
STATE_WARPS = 4  # warps per _chunk_state program (a warpgroup: the dots' 64 rows)
LOG2E = 1.4426950408889634


@triton.jit
def _mm_bf16(a, b, INTERP: tl.constexpr):
    """a @ b on the tensor cores from bf16 inputs, fp32 sums (the CPU interpreter's bf16 dot is
    wrong: there both in fp32)."""
    if INTERP:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    return tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))


@triton.jit
def _block_inverse(L, SUBC: tl.constexpr):
    """(I + L)⁻¹ for a strictly lower-triangular [SUBC, SUBC] fp32 block, by forward
    substitution one row at a time: X_i = e_i − Σ_{j<i} L_ij X_j."""
    r = tl.arange(0, SUBC)
    X = tl.where(r[:, None] == r[None, :], 1.0, 0.0)
    for i in tl.static_range(1, SUBC):
        li = tl.sum(tl.where(r[:, None] == i, L, 0.0), axis=0)  # row i of L, [SUBC] over j
        xi = tl.sum(li[:, None] * X, axis=0)  # Σ_j L_ij X_j (rows j >= i of X are e_j, L_ij = 0 there)
        X = tl.where(r[:, None] == i, X - xi[None, :], X)
    return X


@triton.jit
def _rows(ptr, t, m, h, H: tl.constexpr, D: tl.constexpr, col0, KB: tl.constexpr):
    """Rows t of a [T][H][D] tensor at head h, columns col0 .. col0 + KB (rows where m is false: 0)."""
    cols = col0 + tl.arange(0, KB)
    return tl.load(ptr + (t[:, None] * H + h) * D + cols[None, :], mask=m[:, None], other=0.0)


@triton.jit
def _store_rows(ptr, x, t, m, h, H: tl.constexpr, D: tl.constexpr, col0, KB: tl.constexpr):
    cols = col0 + tl.arange(0, KB)
    tl.store(ptr + (t[:, None] * H + h) * D + cols[None, :], x, mask=m[:, None])


@triton.jit
def _chunk_intra(k_ptr, v_ptr, q_ptr, g_ptr, beta_ptr, w_ptr, u_ptr, p_ptr, gam_ptr, T,
                 H: tl.constexpr, DK: tl.constexpr, DV: tl.constexpr, C: tl.constexpr, SUBC: tl.constexpr,
                 KB: tl.constexpr, INTERP: tl.constexpr):
    c, h = tl.program_id(0), tl.program_id(1)
    r = tl.arange(0, SUBC)
    ci = tl.arange(0, C)
    t0 = c * C
    # the four 16-row blocks' tokens, β and γ (γ: cumsum of g from the chunk's start, log2 units)
    t_0, t_1, t_2, t_3 = t0 + r, t0 + SUBC + r, t0 + 2 * SUBC + r, t0 + 3 * SUBC + r
    m_0, m_1, m_2, m_3 = t_0 < T, t_1 < T, t_2 < T, t_3 < T
    g_0 = tl.load(g_ptr + t_0 * H + h, mask=m_0, other=0.0) * 1.4426950408889634
    g_1 = tl.load(g_ptr + t_1 * H + h, mask=m_1, other=0.0) * 1.4426950408889634
    g_2 = tl.load(g_ptr + t_2 * H + h, mask=m_2, other=0.0) * 1.4426950408889634
    g_3 = tl.load(g_ptr + t_3 * H + h, mask=m_3, other=0.0) * 1.4426950408889634
    G_0 = tl.cumsum(g_0, axis=0)
    G_1 = tl.cumsum(g_1, axis=0) + tl.sum(g_0, axis=0)
    G_2 = tl.cumsum(g_2, axis=0) + tl.sum(g_0, axis=0) + tl.sum(g_1, axis=0)
    G_3 = tl.cumsum(g_3, axis=0) + tl.sum(g_0, axis=0) + tl.sum(g_1, axis=0) + tl.sum(g_2, axis=0)
    b_0 = tl.load(beta_ptr + t_0 * H + h, mask=m_0, other=0.0)
    b_1 = tl.load(beta_ptr + t_1 * H + h, mask=m_1, other=0.0)
    b_2 = tl.load(beta_ptr + t_2 * H + h, mask=m_2, other=0.0)
    b_3 = tl.load(beta_ptr + t_3 * H + h, mask=m_3, other=0.0)
    tl.store(gam_ptr + t_0 * H + h, G_0, mask=m_0)
    tl.store(gam_ptr + t_1 * H + h, G_1, mask=m_1)
    tl.store(gam_ptr + t_2 * H + h, G_2, mask=m_2)
    tl.store(gam_ptr + t_3 * H + h, G_3, mask=m_3)
    tc = t0 + ci
    mc = tc < T
    G = tl.cumsum(tl.load(g_ptr + tc * H + h, mask=mc, other=0.0) * 1.4426950408889634, axis=0)

    # K Kᵀ in 16 x 16 blocks (i >= j) and Q Kᵀ over the whole chunk, summed over KB columns at a time
    # (the inputs' registers stay small: the program keeps its 10 blocks and 64 x 64 scores)
    A_00 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_11 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_22 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_33 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_10 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_20 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_21 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_30 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_31 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    A_32 = tl.zeros([SUBC, SUBC], dtype=tl.float32)
    QK = tl.zeros([C, C], dtype=tl.float32)
    for kk in range(0, DK, KB):
        k_0 = _rows(k_ptr, t_0, m_0, h, H, DK, kk, KB)
        k_1 = _rows(k_ptr, t_1, m_1, h, H, DK, kk, KB)
        k_2 = _rows(k_ptr, t_2, m_2, h, H, DK, kk, KB)
        k_3 = _rows(k_ptr, t_3, m_3, h, H, DK, kk, KB)
        A_00 += _mm_bf16(k_0, tl.trans(k_0), INTERP)
        A_11 += _mm_bf16(k_1, tl.trans(k_1), INTERP)
        A_22 += _mm_bf16(k_2, tl.trans(k_2), INTERP)
        A_33 += _mm_bf16(k_3, tl.trans(k_3), INTERP)
        A_10 += _mm_bf16(k_1, tl.trans(k_0), INTERP)
        A_20 += _mm_bf16(k_2, tl.trans(k_0), INTERP)
        A_21 += _mm_bf16(k_2, tl.trans(k_1), INTERP)
        A_30 += _mm_bf16(k_3, tl.trans(k_0), INTERP)
        A_31 += _mm_bf16(k_3, tl.trans(k_1), INTERP)
        A_32 += _mm_bf16(k_3, tl.trans(k_2), INTERP)
        QK += _mm_bf16(_rows(q_ptr, tc, mc, h, H, DK, kk, KB), tl.trans(_rows(k_ptr, tc, mc, h, H, DK, kk, KB)), INTERP)

    # P = (Q Kᵀ ⊙ Γ), diagonal included (row i sees keys j <= i); Γ's exponent masked before exp2
    causal = ci[:, None] >= ci[None, :]
    P = tl.where(causal, QK * tl.exp2(tl.where(causal, G[:, None] - G[None, :], -float("inf"))), 0.0)
    _store_rows(p_ptr, P.to(tl.bfloat16), tc, mc, h, H, C, 0, C)

    # L = strict_lower(diag(β) K Kᵀ ⊙ Γ), block (i, j) for i >= j
    lower = r[:, None] > r[None, :]
    L_00 = tl.where(lower, A_00 * b_0[:, None] * tl.exp2(tl.where(lower, G_0[:, None] - G_0[None, :], -float("inf"))), 0.0)
    L_11 = tl.where(lower, A_11 * b_1[:, None] * tl.exp2(tl.where(lower, G_1[:, None] - G_1[None, :], -float("inf"))), 0.0)
    L_22 = tl.where(lower, A_22 * b_2[:, None] * tl.exp2(tl.where(lower, G_2[:, None] - G_2[None, :], -float("inf"))), 0.0)
    L_33 = tl.where(lower, A_33 * b_3[:, None] * tl.exp2(tl.where(lower, G_3[:, None] - G_3[None, :], -float("inf"))), 0.0)
    L_10 = A_10 * b_1[:, None] * tl.exp2(G_1[:, None] - G_0[None, :])
    L_20 = A_20 * b_2[:, None] * tl.exp2(G_2[:, None] - G_0[None, :])
    L_21 = A_21 * b_2[:, None] * tl.exp2(G_2[:, None] - G_1[None, :])
    L_30 = A_30 * b_3[:, None] * tl.exp2(G_3[:, None] - G_0[None, :])
    L_31 = A_31 * b_3[:, None] * tl.exp2(G_3[:, None] - G_1[None, :])
    L_32 = A_32 * b_3[:, None] * tl.exp2(G_3[:, None] - G_2[None, :])

    # X = (I + L)⁻¹ by blocks: the diagonal blocks by substitution, then X_ij = −X_ii Σ_{j<=m<i} L_im X_mj
    X_00 = _block_inverse(L_00, SUBC)
    X_11 = _block_inverse(L_11, SUBC)
    X_22 = _block_inverse(L_22, SUBC)
    X_33 = _block_inverse(L_33, SUBC)
    X_10 = -tl.dot(X_11, tl.dot(L_10, X_00, input_precision="ieee"), input_precision="ieee")
    X_21 = -tl.dot(X_22, tl.dot(L_21, X_11, input_precision="ieee"), input_precision="ieee")
    X_32 = -tl.dot(X_33, tl.dot(L_32, X_22, input_precision="ieee"), input_precision="ieee")
    X_20 = -tl.dot(X_22, tl.dot(L_20, X_00, input_precision="ieee") + tl.dot(L_21, X_10, input_precision="ieee"),
                   input_precision="ieee")
    X_31 = -tl.dot(X_33, tl.dot(L_31, X_11, input_precision="ieee") + tl.dot(L_32, X_21, input_precision="ieee"),
                   input_precision="ieee")
    X_30 = -tl.dot(X_33, tl.dot(L_30, X_00, input_precision="ieee") + tl.dot(L_31, X_10, input_precision="ieee")
                   + tl.dot(L_32, X_20, input_precision="ieee"), input_precision="ieee")

    # W = X diag(β e^γ) K (the state's reads), U = X diag(β) V (the prediction targets), KB columns at a time
    e_0, e_1, e_2, e_3 = b_0 * tl.exp2(G_0), b_1 * tl.exp2(G_1), b_2 * tl.exp2(G_2), b_3 * tl.exp2(G_3)
    for kk in range(0, DK, KB):
        kb_0 = _rows(k_ptr, t_0, m_0, h, H, DK, kk, KB).to(tl.float32) * e_0[:, None]
        kb_1 = _rows(k_ptr, t_1, m_1, h, H, DK, kk, KB).to(tl.float32) * e_1[:, None]
        kb_2 = _rows(k_ptr, t_2, m_2, h, H, DK, kk, KB).to(tl.float32) * e_2[:, None]
        kb_3 = _rows(k_ptr, t_3, m_3, h, H, DK, kk, KB).to(tl.float32) * e_3[:, None]
        _store_rows(w_ptr, tl.dot(X_00, kb_0).to(tl.bfloat16), t_0, m_0, h, H, DK, kk, KB)
        _store_rows(w_ptr, (tl.dot(X_10, kb_0) + tl.dot(X_11, kb_1)).to(tl.bfloat16), t_1, m_1, h, H, DK, kk, KB)
        _store_rows(w_ptr, (tl.dot(X_20, kb_0) + tl.dot(X_21, kb_1) + tl.dot(X_22, kb_2)).to(tl.bfloat16),
                    t_2, m_2, h, H, DK, kk, KB)
        _store_rows(w_ptr, (tl.dot(X_30, kb_0) + tl.dot(X_31, kb_1) + tl.dot(X_32, kb_2) + tl.dot(X_33, kb_3)).to(tl.bfloat16),
                    t_3, m_3, h, H, DK, kk, KB)
    for vv in range(0, DV, KB):
        vb_0 = _rows(v_ptr, t_0, m_0, h, H, DV, vv, KB).to(tl.float32) * b_0[:, None]
        vb_1 = _rows(v_ptr, t_1, m_1, h, H, DV, vv, KB).to(tl.float32) * b_1[:, None]
        vb_2 = _rows(v_ptr, t_2, m_2, h, H, DV, vv, KB).to(tl.float32) * b_2[:, None]
        vb_3 = _rows(v_ptr, t_3, m_3, h, H, DV, vv, KB).to(tl.float32) * b_3[:, None]
        _store_rows(u_ptr, tl.dot(X_00, vb_0), t_0, m_0, h, H, DV, vv, KB)
        _store_rows(u_ptr, tl.dot(X_10, vb_0) + tl.dot(X_11, vb_1), t_1, m_1, h, H, DV, vv, KB)
        _store_rows(u_ptr, tl.dot(X_20, vb_0) + tl.dot(X_21, vb_1) + tl.dot(X_22, vb_2), t_2, m_2, h, H, DV, vv, KB)
        _store_rows(u_ptr, tl.dot(X_30, vb_0) + tl.dot(X_31, vb_1) + tl.dot(X_32, vb_2) + tl.dot(X_33, vb_3),
                    t_3, m_3, h, H, DV, vv, KB)


@triton.jit
def _chunk_state(q_ptr, k_ptr, w_ptr, u_ptr, p_ptr, gam_ptr, o_ptr, table_ptr, layer_floats, T, scale,
                 H: tl.constexpr, DK: tl.constexpr, DV: tl.constexpr, C: tl.constexpr, BVC: tl.constexpr,
                 ST_DN: tl.constexpr, INTERP: tl.constexpr):
    h, vb = tl.program_id(0), tl.program_id(1)
    ci = tl.arange(0, C)
    dk = tl.arange(0, DK)
    vs = vb * BVC + tl.arange(0, BVC)
    # the state's rows [BVC, DK] of head h, in place in the decode state the table points at
    state = tl.load(table_ptr + ST_DN).to(tl.pointer_type(tl.float32)) + layer_floats
    s_ptrs = state + (h * DV + vs[:, None]) * DK + dk[None, :]
    S = tl.load(s_ptrs)
    for c in range(0, tl.cdiv(T, C)):
        tc = c * C + ci
        mc = tc < T
        G = tl.load(gam_ptr + tc * H + h, mask=mc, other=0.0)
        G_end = tl.min(tl.where(mc, G, float("inf")), axis=0)  # γ of the chunk's last token (γ only falls)
        w = tl.load(w_ptr + (tc[:, None] * H + h) * DK + dk[None, :], mask=mc[:, None], other=0.0)
        u = tl.load(u_ptr + (tc[:, None] * H + h) * DV + vs[None, :], mask=mc[:, None], other=0.0)
        q = tl.load(q_ptr + (tc[:, None] * H + h) * DK + dk[None, :], mask=mc[:, None], other=0.0)
        k = tl.load(k_ptr + (tc[:, None] * H + h) * DK + dk[None, :], mask=mc[:, None], other=0.0)
        P = tl.load(p_ptr + (tc[:, None] * H + h) * C + ci[None, :], mask=mc[:, None], other=0.0)
        St = tl.trans(S).to(tl.bfloat16)  # [DK, BVC]
        v_new = u - _mm_bf16(w, St, INTERP)  # [C, BVC]
        qg = (q.to(tl.float32) * tl.exp2(G)[:, None]).to(tl.bfloat16)
        # P V′ in TF32: its bf16 form (V′ rounded in registers, the dot's B operand) computes wrong
        # values and reads shared memory out of bounds on Triton 3.6 / H100 at BV = 16 and 32 (NOTES
        # "Prefill v7"); the TF32 dot does neither
        o = (_mm_bf16(qg, St, INTERP) + tl.dot(P.to(tl.float32), v_new)) * scale
        tl.store(o_ptr + (tc[:, None] * H + h) * DV + vs[None, :], o.to(tl.bfloat16), mask=mc[:, None])
        kd = (k.to(tl.float32) * tl.exp2(tl.where(mc, G_end - G, 0.0))[:, None]).to(tl.bfloat16)
        S = S * tl.exp2(G_end) + _mm_bf16(tl.trans(v_new), kd, INTERP)
    tl.store(s_ptrs, S)


class ChunkedDeltaRule:
    """The two kernels' launches for prompts of T tokens (one plan's buffers: W, U, P, γ)."""

    def __init__(self, T: int, H: int, DK: int, DV: int, device, st_dn: int):
        for name, n in (("dk", DK), ("dv", DV)):
            if n < BV or n & (n - 1):
                raise ValueError(f"{name}={n}: the chunked delta rule's kernels take a power of two of at least {BV}")
        if T < 1:
            raise ValueError(f"T={T}: expected at least one token")
        self.T, self.H, self.DK, self.DV, self.st_dn = T, H, DK, DV, st_dn
        self.w = torch.empty(T, H, DK, dtype=torch.bfloat16, device=device)
        self.u = torch.empty(T, H, DV, dtype=torch.float32, device=device)
        self.p = torch.empty(T, H, CHUNK, dtype=torch.bfloat16, device=device)
        self.gamma = torch.empty(T, H, dtype=torch.float32, device=device)

    def buffers(self) -> tuple[torch.Tensor, ...]:
        """The intermediates (W, U, P, γ): written by _chunk_intra before _chunk_state reads them."""
        return self.w, self.u, self.p, self.gamma

    def __call__(self, q, k, v, g, beta, table, layer: int, o, scale: float):
        """o [T][H][DV] bf16 ← the delta rule over q, k, v, g, beta (layouts above), the state of
        DeltaNet layer `layer` of the state the table points at updated in place."""
        T, H, DK, DV = self.T, self.H, self.DK, self.DV
        nchunks = triton.cdiv(T, CHUNK)
        interp = os.environ.get("TRITON_INTERPRET") == "1"
        _chunk_intra[(nchunks, H)](k, v, q, g, beta, self.w, self.u, self.p, self.gamma, T,
                                   H=H, DK=DK, DV=DV, C=CHUNK, SUBC=SUB, KB=KB, INTERP=interp, num_warps=INTRA_WARPS)
        _chunk_state[(H, DV // BV)](q, k, self.w, self.u, self.p, self.gamma, o, table, layer * H * DV * DK, T, scale,
                                    H=H, DK=DK, DV=DV, C=CHUNK, BVC=BV, ST_DN=self.st_dn, INTERP=interp, num_warps=STATE_WARPS)
        return o
