"""The fast prefill's gated delta rule over a prompt, chunked (reference/delta_rule.py
`gated_delta_rule_chunked` is the math; fla's `chunk_gated_delta_rule` was the kernel before
this one and stays its A/B reference and oracle in the tests). Two Triton kernels per layer
instead of fla's five and the state copies around them:

  _chunk_intra   one program per (chunk of C = 64 tokens, head), all chunks at once: the
                 chunk's cumulative log-decay γ; its causal scores P = (Q Kᵀ ⊙ Γ) (diagonal
                 included) and L = strict_lower(diag(β) K Kᵀ ⊙ Γ) as 64 x 64 x 128 tensor-core
                 dots; A = I + L inverted by 16 x 16 blocks (L's blocks and then X = A⁻¹ pass
                 through a per-chunk scratch in global memory, the block's threads synchronised
                 between); the WY factors W = X diag(β e^γ) K and U = X diag(β) V as two
                 64 x 64 x 128 dots. None of it depends on the state.
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
BV = 16  # state rows (values) per _chunk_state program: 16 heads x 8 = 128 programs
INTRA_WARPS = 4  # warps per _chunk_intra program
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
def _sub_block(a_ptr, t0, H, h, T, ROW: tl.constexpr, COL: tl.constexpr, C: tl.constexpr, SUBC: tl.constexpr):
    """Block (ROW, COL) of a chunk's [C, C] fp32 scratch matrix (rows past T: 0)."""
    r = tl.arange(0, SUBC)
    t = t0 + ROW * SUBC + r
    return tl.load(a_ptr + (t[:, None] * H + h) * C + COL * SUBC + r[None, :], mask=(t < T)[:, None], other=0.0)


@triton.jit
def _put_block(a_ptr, X, t0, H, h, T, ROW: tl.constexpr, COL: tl.constexpr, C: tl.constexpr, SUBC: tl.constexpr):
    r = tl.arange(0, SUBC)
    t = t0 + ROW * SUBC + r
    tl.store(a_ptr + (t[:, None] * H + h) * C + COL * SUBC + r[None, :], X, mask=(t < T)[:, None])


@triton.jit
def _chunk_intra(k_ptr, v_ptr, q_ptr, g_ptr, beta_ptr, w_ptr, u_ptr, p_ptr, gam_ptr, a_ptr, T,
                 H: tl.constexpr, DK: tl.constexpr, DV: tl.constexpr, C: tl.constexpr, SUBC: tl.constexpr,
                 INTERP: tl.constexpr):
    c, h = tl.program_id(0), tl.program_id(1)
    ci = tl.arange(0, C)
    dk = tl.arange(0, DK)
    dv = tl.arange(0, DV)
    t0 = c * C
    tc = t0 + ci
    mc = tc < T
    # γ: the cumulative log-decay from the chunk's start (log2 units); the chunk's keys and queries
    G = tl.cumsum(tl.load(g_ptr + tc * H + h, mask=mc, other=0.0) * 1.4426950408889634, axis=0)
    b = tl.load(beta_ptr + tc * H + h, mask=mc, other=0.0)
    tl.store(gam_ptr + tc * H + h, G, mask=mc)
    k = tl.load(k_ptr + (tc[:, None] * H + h) * DK + dk[None, :], mask=mc[:, None], other=0.0)
    q = tl.load(q_ptr + (tc[:, None] * H + h) * DK + dk[None, :], mask=mc[:, None], other=0.0)
    causal = ci[:, None] >= ci[None, :]
    decay = tl.exp2(tl.where(causal, G[:, None] - G[None, :], -float("inf")))  # Γ, 0 above the diagonal
    # P = (Q Kᵀ ⊙ Γ), diagonal included (row i sees keys j <= i); L = strict_lower(diag(β) K Kᵀ ⊙ Γ)
    P = tl.where(causal, _mm_bf16(q, tl.trans(k), INTERP) * decay, 0.0)
    tl.store(p_ptr + (tc[:, None] * H + h) * C + ci[None, :], P.to(tl.bfloat16), mask=mc[:, None])
    L = tl.where(ci[:, None] > ci[None, :], _mm_bf16(k, tl.trans(k), INTERP) * b[:, None] * decay, 0.0)
    tl.store(a_ptr + (tc[:, None] * H + h) * C + ci[None, :], L, mask=mc[:, None])
    tl.debug_barrier()

    # X = (I + L)⁻¹ by 16 x 16 blocks (read back from the scratch): the diagonal blocks by
    # substitution, then X_ij = −X_ii Σ_{j<=m<i} L_im X_mj
    L_10 = _sub_block(a_ptr, t0, H, h, T, 1, 0, C, SUBC)
    L_20 = _sub_block(a_ptr, t0, H, h, T, 2, 0, C, SUBC)
    L_21 = _sub_block(a_ptr, t0, H, h, T, 2, 1, C, SUBC)
    L_30 = _sub_block(a_ptr, t0, H, h, T, 3, 0, C, SUBC)
    L_31 = _sub_block(a_ptr, t0, H, h, T, 3, 1, C, SUBC)
    L_32 = _sub_block(a_ptr, t0, H, h, T, 3, 2, C, SUBC)
    X_00 = _block_inverse(_sub_block(a_ptr, t0, H, h, T, 0, 0, C, SUBC), SUBC)
    X_11 = _block_inverse(_sub_block(a_ptr, t0, H, h, T, 1, 1, C, SUBC), SUBC)
    X_22 = _block_inverse(_sub_block(a_ptr, t0, H, h, T, 2, 2, C, SUBC), SUBC)
    X_33 = _block_inverse(_sub_block(a_ptr, t0, H, h, T, 3, 3, C, SUBC), SUBC)
    X_10 = -tl.dot(X_11, tl.dot(L_10, X_00, input_precision="ieee"), input_precision="ieee")
    X_21 = -tl.dot(X_22, tl.dot(L_21, X_11, input_precision="ieee"), input_precision="ieee")
    X_32 = -tl.dot(X_33, tl.dot(L_32, X_22, input_precision="ieee"), input_precision="ieee")
    X_20 = -tl.dot(X_22, tl.dot(L_20, X_00, input_precision="ieee") + tl.dot(L_21, X_10, input_precision="ieee"),
                   input_precision="ieee")
    X_31 = -tl.dot(X_33, tl.dot(L_31, X_11, input_precision="ieee") + tl.dot(L_32, X_21, input_precision="ieee"),
                   input_precision="ieee")
    X_30 = -tl.dot(X_33, tl.dot(L_30, X_00, input_precision="ieee") + tl.dot(L_31, X_10, input_precision="ieee")
                   + tl.dot(L_32, X_20, input_precision="ieee"), input_precision="ieee")
    tl.debug_barrier()  # (every block of L read before X overwrites it; above the diagonal L's zeros stay)
    _put_block(a_ptr, X_00, t0, H, h, T, 0, 0, C, SUBC)
    _put_block(a_ptr, X_10, t0, H, h, T, 1, 0, C, SUBC)
    _put_block(a_ptr, X_11, t0, H, h, T, 1, 1, C, SUBC)
    _put_block(a_ptr, X_20, t0, H, h, T, 2, 0, C, SUBC)
    _put_block(a_ptr, X_21, t0, H, h, T, 2, 1, C, SUBC)
    _put_block(a_ptr, X_22, t0, H, h, T, 2, 2, C, SUBC)
    _put_block(a_ptr, X_30, t0, H, h, T, 3, 0, C, SUBC)
    _put_block(a_ptr, X_31, t0, H, h, T, 3, 1, C, SUBC)
    _put_block(a_ptr, X_32, t0, H, h, T, 3, 2, C, SUBC)
    _put_block(a_ptr, X_33, t0, H, h, T, 3, 3, C, SUBC)
    tl.debug_barrier()

    # W = X diag(β e^γ) K (the state's reads), U = X diag(β) V (the prediction targets): 64 x 64 x 128, TF32
    X = tl.load(a_ptr + (tc[:, None] * H + h) * C + ci[None, :], mask=mc[:, None], other=0.0)
    w = tl.dot(X, k.to(tl.float32) * (b * tl.exp2(G))[:, None])
    tl.store(w_ptr + (tc[:, None] * H + h) * DK + dk[None, :], w.to(tl.bfloat16), mask=mc[:, None])
    v = tl.load(v_ptr + (tc[:, None] * H + h) * DV + dv[None, :], mask=mc[:, None], other=0.0)
    u = tl.dot(X, v.to(tl.float32) * b[:, None])
    tl.store(u_ptr + (tc[:, None] * H + h) * DV + dv[None, :], u, mask=mc[:, None])


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
        self.a = torch.empty(T, H, CHUNK, dtype=torch.float32, device=device)  # _chunk_intra's scratch: L, then X

    def buffers(self) -> tuple[torch.Tensor, ...]:
        """The intermediates (W, U, P, γ and the scratch): written by _chunk_intra before they are read."""
        return self.w, self.u, self.p, self.gamma, self.a

    def __call__(self, q, k, v, g, beta, table, layer: int, o, scale: float):
        """o [T][H][DV] bf16 ← the delta rule over q, k, v, g, beta (layouts above), the state of
        DeltaNet layer `layer` of the state the table points at updated in place."""
        T, H, DK, DV = self.T, self.H, self.DK, self.DV
        nchunks = triton.cdiv(T, CHUNK)
        interp = os.environ.get("TRITON_INTERPRET") == "1"
        _chunk_intra[(nchunks, H)](k, v, q, g, beta, self.w, self.u, self.p, self.gamma, self.a, T,
                                   H=H, DK=DK, DV=DV, C=CHUNK, SUBC=SUB, INTERP=interp, num_warps=INTRA_WARPS)
        _chunk_state[(H, DV // BV)](q, k, self.w, self.u, self.p, self.gamma, o, table, layer * H * DV * DK, T, scale,
                                    H=H, DK=DK, DV=DV, C=CHUNK, BVC=BV, ST_DN=self.st_dn, INTERP=interp, num_warps=STATE_WARPS)
        return o
