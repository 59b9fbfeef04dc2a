"""Session 35 (issue 21): other ways cuBLAS can run the prefill's GEMMs at 520 rows, each timed as in gemm_m.py
(a CUDA graph of 24 calls on 24 weight copies, median of 7 replays, µs a call), each checked against torch.mm's
result (max |diff| / max |ref|). Ways: torch.mm (what the prefill runs); the N side as a batch of 2 or 4 (bmm on the
weights viewed [S, N / S, K]); the rows as two GEMMs of 260; the weights stored K-major (x @ Wt, Wt [K, N]
contiguous: cuBLAS's NN layout instead of TN); torch.mm with reduced-precision bf16 reductions off; the transposed
product W @ x^T ([N, M] out). Writes gemm_variants.json / .md to the folder given."""
import json, os, sys
import torch

SHAPES = {"dn in-proj": (1024, 8224), "attn in-proj": (1024, 5120), "gate_up": (1024, 7168),
          "out": (2048, 1024), "down": (3584, 1024)}
LAYERS, REPS, M = 24, 7, 520


def timed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay(); torch.cuda.synchronize()
    ts = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / LAYERS)
    return sorted(ts)[len(ts) // 2]


def main(out):
    torch.manual_seed(0)
    rows = {}
    for name, (K, N) in SHAPES.items():
        ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(LAYERS)]
        wts = [w.t().contiguous() for w in ws]
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        ref = torch.mm(x, ws[0].t())
        r = {}

        def err(v):
            return float((v.float() - ref.float()).abs().max() / ref.float().abs().max())
        r["mm"] = timed(lambda: [torch.mm(x, w.t(), out=y) for w in ws])
        for S in (2, 4):
            if N % S:
                continue
            yb = torch.empty(S, M, N // S, device="cuda", dtype=torch.bfloat16)
            xb = x.expand(S, M, K)
            r[f"bmm N/{S}"] = timed(lambda: [torch.bmm(xb, w.view(S, N // S, K).transpose(1, 2), out=yb) for w in ws])
            torch.bmm(xb, ws[0].view(S, N // S, K).transpose(1, 2), out=yb)
            r[f"bmm N/{S} err"] = err(yb.permute(1, 0, 2).reshape(M, N))
        r["2 x mm 260"] = timed(lambda: [(torch.mm(x[:260], w.t(), out=y[:260]), torch.mm(x[260:], w.t(), out=y[260:])) for w in ws])
        r["x @ Wt (K-major W)"] = timed(lambda: [torch.mm(x, wt, out=y) for wt in wts])
        torch.mm(x, wts[0], out=y)
        r["x @ Wt err"] = err(y)
        yt = torch.empty(N, M, device="cuda", dtype=torch.bfloat16)
        r["W @ x^T"] = timed(lambda: [torch.mm(w, x.t(), out=yt) for w in ws])
        prev = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = not prev
        r[f"mm, reduced-precision reduction {not prev}"] = timed(lambda: [torch.mm(x, w.t(), out=y) for w in ws])
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = prev
        rows[name] = r
        print(name, {k: round(v, 4 if "err" in k else 2) for k, v in r.items()}, flush=True)
        del ws, wts
    os.makedirs(out, exist_ok=True)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "M": M, "rows": rows},
              open(f"{out}/gemm_variants.json", "w"), indent=1)
    with open(f"{out}/gemm_variants.md", "w") as f:
        f.write(f"cuBLAS ways at M = {M}: µs a call (graph of {LAYERS} calls on {LAYERS} weight copies, median of {REPS}); "
                f"err: max |diff| / max |torch.mm| ; {torch.cuda.get_device_name()}, torch {torch.__version__}\n\n")
        for name, r in rows.items():
            f.write(f"- **{name}** {SHAPES[name]}: " + "; ".join(f"{k} {v:.4g}" for k, v in r.items()) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
