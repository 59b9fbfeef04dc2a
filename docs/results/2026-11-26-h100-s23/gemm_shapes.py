"""Session 23, issue 21: the prefill's GEMM shapes (0.8B) timed every way torch and cuBLAS offer, one
row per (shape, M, way), to see whether the N = 1,024 projections (out-proj, down: cuBLAS's 64x88 tiles,
108 of them at M = 520, ~353 TFLOP/s in session 22's breakdown) have headroom.

Each way is timed as 24 calls in one CUDA graph, each call on its own copy of the weights (the 24
layers: no call finds its weights in L2), the median of 7 replays, µs a call.

ways:
  mm            torch.mm(x, W.t(), out=y)                      (the prefill today)
  mm.lt / mm.cublas   the same under torch.backends.cuda.preferred_blas_library("cublaslt" / "cublas")
  mmT           torch.mm(W, x.t()) -> y^T [N, M]               (the other orientation)
  f32           aten.mm.dtype_out: fp32 output
  bmmS<s>       split-K by s as one strided batched GEMM into [s, M, N] fp32 (the s partials would be summed
                by the next kernel, add_rms_norm, which reads x anyway)
  tri<cfg>      a Triton tl.dot kernel, one config
"""
import json
import statistics
import sys

import torch

SHAPES = {"dn_in": (8224, 1024), "attn_in": (5120, 1024), "out": (1024, 2048), "gate_up": (7168, 1024),
          "down": (1024, 3584)}
LAYERS = 24
dev = "cuda"


def graph_us(fn, calls=LAYERS, replays=7):
    fn(0)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(0)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(i)
    ts = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(ts)


try:
    import triton
    import triton.language as tl

    @triton.jit
    def tri_mm(x, w, y, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT: tl.constexpr,
               GROUP: tl.constexpr):
        pid, sk = tl.program_id(0), tl.program_id(1)
        nm, nn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        width = GROUP * nn
        gid = pid // width
        first = gid * GROUP
        gm = min(nm - first, GROUP)
        pm = first + (pid % width) % gm
        pn = (pid % width) // gm
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        kper = K // SPLIT
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(sk * kper, (sk + 1) * kper, BK):
            a = tl.load(x + rm[:, None] * K + (k0 + rk)[None, :], mask=rm[:, None] < M, other=0.0)
            b = tl.load(w + rn[None, :] * K + (k0 + rk)[:, None], mask=rn[None, :] < N, other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(y + sk * M * N + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
    TRITON = True
except Exception as e:  # pragma: no cover
    print("no triton:", e, file=sys.stderr)
    TRITON = False

TRI_CFGS = [(bm, bn, 64, s, st, nw) for bm in (64, 128) for bn in (64, 128) for s in (1, 2, 4) for st, nw in ((4, 4),)]


def main(out_path):
    rows = []
    torch.manual_seed(0)
    peak = None
    for name, (N, K) in SHAPES.items():
        Ws = torch.randn(LAYERS, N, K, device=dev, dtype=torch.bfloat16) * 0.02
        for M in (256, 520, 4096):
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
            yT = torch.empty(N, M, device=dev, dtype=torch.bfloat16)
            y32 = torch.empty(M, N, device=dev, dtype=torch.float32)
            flop = 2 * M * N * K
            ref = (x.float() @ Ws[0].float().t())
            ways = {"mm": lambda i: torch.mm(x, Ws[i].t(), out=y), "mmT": lambda i: torch.mm(Ws[i], x.t(), out=yT),
                    "f32": lambda i: torch.ops.aten.mm.dtype_out(x, Ws[i].t(), torch.float32, out=y32)}
            for s in (2, 3, 4):
                if K % (s * 64) == 0 and K >= 2048:
                    ys = torch.empty(s, M, N, device=dev, dtype=torch.float32)
                    xs = x.view(M, s, K // s).transpose(0, 1)
                    ways[f"bmmS{s}"] = (lambda xs, ys, s: lambda i: torch.ops.aten.bmm.dtype_out(
                        xs, Ws[i].view(N, s, K // s).permute(1, 2, 0), torch.float32, out=ys))(xs, ys, s)
                    ways[f"bmmS{s}"](0)
                    err = ((ys.sum(0) - ref).norm() / ref.norm()).item()
                    assert err < 1e-2, (name, M, s, err)
            if TRITON:
                for cfg in TRI_CFGS:
                    bm, bn, bk, sp, st, nw = cfg
                    if K % (sp * bk):
                        continue
                    yt = torch.empty(sp, M, N, device=dev, dtype=torch.float32)
                    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), sp)
                    f = (lambda yt, grid, cfg: lambda i: tri_mm[grid](x, Ws[i], yt, M, N, K, BM=cfg[0], BN=cfg[1], BK=cfg[2],
                                                                       SPLIT=cfg[3], GROUP=8, num_stages=cfg[4],
                                                                       num_warps=cfg[5]))(yt, grid, cfg)
                    try:
                        f(0)
                        torch.cuda.synchronize()
                        err = ((yt.sum(0) - ref).norm() / ref.norm()).item()
                        assert err < 1e-2, err
                        ways["tri" + "_".join(map(str, cfg))] = f
                    except Exception as e:
                        print("triton", cfg, type(e).__name__, str(e)[:200], file=sys.stderr)
            for way, fn in ways.items():
                us = graph_us(fn)
                rows.append(dict(shape=name, N=N, K=K, M=M, way=way, us=us, tflops=flop / us / 1e6))
            for lib in ("cublaslt", "cublas"):
                torch.backends.cuda.preferred_blas_library(lib)
                us = graph_us(ways["mm"])
                rows.append(dict(shape=name, N=N, K=K, M=M, way="mm." + lib, us=us, tflops=flop / us / 1e6))
            torch.backends.cuda.preferred_blas_library("default")
            best = min((r for r in rows if r["shape"] == name and r["M"] == M), key=lambda r: r["us"])
            base = next(r for r in rows if r["shape"] == name and r["M"] == M and r["way"] == "mm")
            print(f"{name:8s} M={M:5d} mm {base['us']:8.2f} µs ({base['tflops']:5.0f} TF/s)  best {best['way']:18s} "
                  f"{best['us']:8.2f} µs ({best['tflops']:5.0f})", flush=True)
        del Ws
    json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), open(out_path + ".json", "w"),
              indent=1)
    with open(out_path + ".md", "w") as f:
        f.write("| shape | M | way | µs | TFLOP/s |\n| --- | ---: | --- | ---: | ---: |\n")
        for r in rows:
            f.write(f"| {r['shape']} | {r['M']} | {r['way']} | {r['us']:.2f} | {r['tflops']:.0f} |\n")


if __name__ == "__main__":
    main(sys.argv[1])
