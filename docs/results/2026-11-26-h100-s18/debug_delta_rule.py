"""Session 18, call 2: why megakernel/delta_rule_chunked.py's output was wrong on the GPU (call 1: output
error 0.77 at T=520 with the state right, an illegal address at T=1) while the CPU interpreter agrees
with the reference. One case per process (an illegal address ends the CUDA context):
    python debug_delta_rule.py T VARIANT
VARIANT: base | direct (the state pointer as an argument, not from the table) | nopipe (the chunk
loop with num_stages=1) | o_q (o = only the (Q e^γ) Sᵀ term) | o_p (o = only the P V′ term);
call 3: vshared (V′ rounded to bf16 once, both dots use it) | ptf32 (P V′ in TF32) | bv32, bv64 (BV)
| w8 (8 warps), joined by '+'. Prints each intermediate's error against torch computing it from the
kernel's own inputs, and (call 3) each kernel's time alone (CUDA graph of 20 launches, median of 5)."""
import sys
import types

import torch

import megakernel.delta_rule_chunked as drc
from reference.ops import l2norm

T, VARIANT = int(sys.argv[1]), sys.argv[2]
H, D, SCALE, C = 16, 128, 128 ** -0.5, 64
src = open(drc.__file__).read()
VARIANTS = VARIANT.split("+")
BV_SET = {"bv32": 32, "bv64": 64}
if "vshared" in VARIANTS:
    src = src.replace("o = (_mm_bf16(qg, St, INTERP) + _mm_bf16(P, v_new, INTERP)) * scale",
                      "vb = v_new.to(tl.bfloat16)\n        o = (_mm_bf16(qg, St, INTERP) + _mm_bf16(P, vb, INTERP)) * scale")
    src = src.replace("_mm_bf16(tl.trans(v_new), kd, INTERP)", "_mm_bf16(tl.trans(vb), kd, INTERP)")
if "ptf32" in VARIANTS:
    src = src.replace("_mm_bf16(P, v_new, INTERP)) * scale", "tl.dot(P.to(tl.float32), v_new)) * scale")
if VARIANT == "direct":
    src = src.replace("state = tl.load(table_ptr + ST_DN).to(tl.pointer_type(tl.float32)) + layer_floats",
                      "state = table_ptr + layer_floats")
elif VARIANT == "nopipe":
    src = src.replace("for c in range(0, tl.cdiv(T, C)):", "for c in tl.range(0, tl.cdiv(T, C), num_stages=1):")
elif VARIANT == "o_q":
    src = src.replace("o = (_mm_bf16(qg, St, INTERP) + _mm_bf16(P, v_new, INTERP)) * scale", "o = _mm_bf16(qg, St, INTERP) * scale")
elif VARIANT == "o_p":
    src = src.replace("o = (_mm_bf16(qg, St, INTERP) + _mm_bf16(P, v_new, INTERP)) * scale", "o = _mm_bf16(P, v_new, INTERP) * scale")
assert all(v in ("base", "bv32", "bv64", "w8", "iw1", "iw2", "iw8") for v in VARIANTS) or src != open(drc.__file__).read(), "no substitution applied"
mod = types.ModuleType("drc_variant")
mod.__file__ = "/tmp/drc_variant.py"
open(mod.__file__, "w").write(src)
exec(compile(src, mod.__file__, "exec"), mod.__dict__)
for v in VARIANTS:
    mod.BV = BV_SET.get(v, mod.BV)
    mod.STATE_WARPS = 8 if v == "w8" else mod.STATE_WARPS
    mod.INTRA_WARPS = {"iw1": 1, "iw2": 2, "iw8": 8}.get(v, mod.INTRA_WARPS)

gen = torch.Generator(device="cuda").manual_seed(T)
q = l2norm(x=torch.randn(T, H, D, device="cuda", generator=gen)).bfloat16()
k = l2norm(x=torch.randn(T, H, D, device="cuda", generator=gen)).bfloat16()
v = torch.randn(T, H, D, device="cuda", generator=gen).bfloat16()
g = torch.nn.functional.logsigmoid(torch.randn(T, H, device="cuda", generator=gen) + 3)
beta = torch.rand(T, H, device="cuda", generator=gen)
state = torch.randn(2, H, D, D, device="cuda", generator=gen) * 0.5
s0 = state[1].clone()
table = torch.zeros(7, dtype=torch.int64, device="cuda")
table[0] = state.data_ptr()
rule = mod.ChunkedDeltaRule(T, H, D, D, "cuda", 0)
o = torch.full((T, H, D), float("nan"), dtype=torch.bfloat16, device="cuda")
for t in rule.buffers():
    t.fill_(float("nan"))
nch = -(-T // C)
interp = False
mod._chunk_intra[(nch, H)](k, v, q, g, beta, rule.w, rule.u, rule.p, rule.gamma, T, H=H, DK=D, DV=D, C=C, SUBC=16, KB=mod.KB,
                           INTERP=interp, num_warps=mod.INTRA_WARPS)
torch.cuda.synchronize()
print(f"T={T} {VARIANT}: intra ran", flush=True)


def rel(a, b):
    a, b = a.float(), b.float()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


# torch from the same inputs, chunk by chunk, head-major
errs = {"gamma": 0.0, "w": 0.0, "u": 0.0, "p": 0.0}
qs, ks, vs = q.float(), k.float(), v.float()
for c in range(nch):
    sl = slice(c * C, min(T, (c + 1) * C))
    n = sl.stop - sl.start
    for h in (0, H - 1):
        gam = torch.cumsum(g[sl, h], 0)
        Kc, Vc, Qc, Bc = ks[sl, h], vs[sl, h], qs[sl, h], beta[sl, h]
        causal = torch.ones(n, n, dtype=torch.bool, device="cuda").tril()
        Gm = (gam[:, None] - gam[None, :]).masked_fill(~causal, float("-inf")).exp()
        A = torch.eye(n, device="cuda") + ((Bc[:, None] * Kc) @ Kc.T * Gm).tril(-1)
        U = torch.linalg.solve_triangular(A, Bc[:, None] * Vc, upper=False, unitriangular=True)
        W = torch.linalg.solve_triangular(A, (Bc * gam.exp())[:, None] * Kc, upper=False, unitriangular=True)
        errs["gamma"] = max(errs["gamma"], rel(rule.gamma[sl, h], gam * 1.4426950408889634))
        errs["w"] = max(errs["w"], rel(rule.w[sl, h], W))
        errs["u"] = max(errs["u"], rel(rule.u[sl, h], U))
        errs["p"] = max(errs["p"], rel(rule.p[sl, h, :n], (Qc @ Kc.T) * Gm))
print("intra errors:", {n: f"{e:.2e}" for n, e in errs.items()}, flush=True)
arg = state if VARIANT == "direct" else table
mod._chunk_state[(H, D // mod.BV)](q, k, rule.w, rule.u, rule.p, rule.gamma, o, arg, 1 * H * D * D, T, SCALE, H=H, DK=D, DV=D,
                                   C=C, BVC=mod.BV, ST_DN=0, INTERP=interp, num_warps=mod.STATE_WARPS)
torch.cuda.synchronize()
print(f"T={T} {VARIANT}: state ran", flush=True)
# o and S from the kernel's own intermediates (fp32)
S = s0.clone()  # [H, dv, dk]
o_ref = torch.empty(T, H, D, device="cuda")
oq_ref, op_ref = torch.empty_like(o_ref), torch.empty_like(o_ref)
for c in range(nch):
    sl = slice(c * C, min(T, (c + 1) * C))
    n = sl.stop - sl.start
    G = rule.gamma[sl] / 1.4426950408889634  # [n, H]
    W, U, P = rule.w[sl].float(), rule.u[sl].float(), rule.p[sl, :, :n].float()
    for h in range(H):
        Sh = S[h]
        vnew = U[:, h] - W[:, h] @ Sh.T
        oq = (qs[sl, h] * G[:, h].exp()[:, None]) @ Sh.T * SCALE
        op = P[:, h] @ vnew * SCALE
        oq_ref[sl, h], op_ref[sl, h], o_ref[sl, h] = oq, op, oq + op
        Gend = G[-1, h]
        S[h] = Sh * Gend.exp() + vnew.T @ (ks[sl, h] * (Gend - G[:, h]).exp()[:, None])
want = {"o_q": oq_ref, "o_p": op_ref}.get(VARIANT, o_ref)
print(f"o error T={T} {VARIANT}: {rel(o, want):.2e} (finite: {bool(torch.isfinite(o.float()).all())}); state error {rel(state[1], S):.2e}; "
      f"other layer unchanged: {bool(torch.isfinite(state[0]).all())}", flush=True)
bad = (o.float() - want).abs().amax(dim=(1, 2))
print("worst rows:", [(int(i), f"{bad[i].item():.3g}") for i in bad.topk(min(6, T)).indices], flush=True)
bad_h = (o.float() - want).abs().amax(dim=(0, 2))
print("by head:", [f"{x:.2g}" for x in bad_h.tolist()], flush=True)


def graph_us(fn, calls=20, replays=5):
    fn()
    torch.cuda.synchronize()
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        for _ in range(calls):
            fn()
    ts = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); gr.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / calls)
    return sorted(ts)[len(ts) // 2]


if rel(o, want) < 0.02:
    t_intra = graph_us(lambda: mod._chunk_intra[(nch, H)](k, v, q, g, beta, rule.w, rule.u, rule.p, rule.gamma, T, H=H, DK=D,
                                                          DV=D, C=C, SUBC=16, KB=mod.KB, INTERP=interp, num_warps=mod.INTRA_WARPS))
    t_state = graph_us(lambda: mod._chunk_state[(H, D // mod.BV)](q, k, rule.w, rule.u, rule.p, rule.gamma, o, arg, 1 * H * D * D,
                                                                  T, SCALE, H=H, DK=D, DV=D, C=C, BVC=mod.BV, ST_DN=0,
                                                                  INTERP=interp, num_warps=mod.STATE_WARPS))
    print(f"TIME T={T} {VARIANT}: intra {t_intra:.1f} us, state {t_state:.1f} us, both {t_intra + t_state:.1f} us", flush=True)
