"""Session 28 (issue 21): the megakernel tier's own chunked delta rule (csrc/prefill_delta_rule.cu) against
the fp32 chunked rule and fla, one layer at the 0.8B's shapes; where the output is off, its workspace (W, U,
P from chunk_intra) against the same products in fp32, to say which kernel is wrong."""
import sys

import torch

from compare.delta_rule import inputs, reference, relative_error
from megakernel import ops, prefill_delta_rule as pdr
from reference import ModelConfig

config, dev = ModelConfig.qwen3_5_0_8b(), torch.device("cuda")
_, kc = ops.load(dev)
op = ops.op("prefill_gated_delta_rule_chunked", kc.NAMESPACE)
scale = config.linear_key_head_dim ** -0.5
HV = config.linear_num_value_heads


def workspace_reference(q, k, v, gc, beta, T):
    """W, U, P (P unscaled, j <= i) per chunk in fp32 from the same bf16 inputs."""
    group = HV // q.shape[2]
    qf, kf = (x[0].float().repeat_interleave(group, dim=1) for x in (q, k))
    vf = v[0].float()
    W, U = torch.zeros(T, HV, 128, device=dev), torch.zeros(T, HV, 128, device=dev)
    P = torch.zeros(T, HV, 64, device=dev)
    for c0 in range(0, T, 64):
        sl, n = slice(c0, min(c0 + 64, T)), min(64, T - c0)
        K, Q, V = (x[sl].transpose(0, 1) for x in (kf, qf, vf))  # [H, n, 128]
        gam, b = gc[0, sl].T, beta[0, sl].T  # [H, n]
        low = torch.ones(n, n, dtype=torch.bool, device=dev).tril()
        Gam = (gam[:, :, None] - gam[:, None, :]).masked_fill(~low, float("-inf")).exp()
        M = ((b[..., None] * K) @ K.mT * Gam).tril(-1)
        A = torch.linalg.inv(torch.eye(n, device=dev) + M)
        W[sl] = (A @ ((b * gam.exp())[..., None] * K)).transpose(0, 1)
        U[sl] = (A @ (b[..., None] * V)).transpose(0, 1)
        P[sl, :, :n] = ((Q @ K.mT) * Gam).transpose(0, 1)
    return W, U, P


bad = 0
rows = []
for T in (1, 2, 63, 64, 65, 130, 520, 1000, 4097):
    for state in ("fresh", "carried"):
        for gates in ("model", "slow"):
            q, k, v, g, beta, h0 = inputs(config, T, state, gates, T, dev)
            o_ref, s_ref = reference(q, k, v, g, beta, h0, scale)
            gc = pdr.chunk_cumsum(g, 64)
            bf = dict(dtype=torch.bfloat16, device=dev)
            w, u, o = (torch.full((1, T, HV, 128), float("nan"), **bf) for _ in range(3))
            p = torch.full((1, T, HV, 64), float("nan"), **bf)
            final = torch.full((1, HV, 128, 128), float("nan"), device=dev)
            h = h0.clone()
            op(q, k, v, gc, beta, h, w, u, p, o, final, scale)
            torch.cuda.synchronize()
            fla = pdr.make("fla", T, HV, dev)
            o_f, s_f = fla(q, k, v, g, beta, scale, h0.clone())
            e = (relative_error(o, o_ref), relative_error(final, s_ref), relative_error(o_f, o_ref), relative_error(s_f, s_ref))
            ok = e[0] <= 1.5 * e[2] + 1e-3 and e[1] <= 1.5 * e[3] + 1e-3 and torch.equal(h, h0)
            line = f"T={T:5d} {state:7s} {gates:5s}: o {e[0]:.2e} state {e[1]:.2e} (fla {e[2]:.2e} {e[3]:.2e}) {'ok' if ok else 'OFF'}"
            if not ok:
                bad += 1
                Wr, Ur, Pr = workspace_reference(q, k, v, gc, beta, T)
                line += (f" | W {relative_error(w[0], Wr):.2e} U {relative_error(u[0], Ur):.2e}"
                         f" P {relative_error(p[0], Pr):.2e} nan o {int(o.isnan().sum())} final {int(final.isnan().sum())}")
            print(line, flush=True)
print(f"{bad} off", flush=True)
sys.exit(1 if bad else 0)
