"""Session 25, issue 21: would our own tensor-core GEMMs (written in TileLang, which FlashQLA's wheel carries: wgmma +
TMA on Hopper) beat cuBLAS on the prefill's shapes at 520 rows, and what does SwiGLU fused into the gate/up GEMM's
epilogue save? One row per (shape, M, way), each way timed as 24 calls in one CUDA graph on 24 copies of the
weights (no call finds its weights in L2), the median of 7 replays, µs a call (gemm_shapes.py's method, s23).

ways:
  mm                  torch.mm(x, W.t(), out=y): cuBLAS, the prefill today
  mm+silu             gate/up only: torch.mm into gu [M, 7168], then our prefill_silu_mul (the prefill today)
  tl<bm>x<bn>x<bk>s<stages>t<threads>k<split>
                      a TileLang GEMM: tiles bm x bn, K steps of bk through `stages` buffers, `threads` a block;
                      split > 1: K in `split` slices into fp32 partials [split, M, N] (the prefill's split-K layout,
                      summed by the next add_rms_norm)
  glu<...>            gate/up with SwiGLU in the epilogue: one block owns bn act columns, their gate and up rows
                      (two accumulators), writes act = bf16(bf16(silu(bf16(g))) * bf16(u)) (prefill_silu_mul's
                      rounding points) [M, 3584]
Each TileLang way is checked first: rel. Frobenius error against an fp32 product < 1e-2, and for glu the share of
act values that differ from mm+silu's (bf16 bits) printed.
    PYTHONPATH=<tree>:<site> python gemm_tl.py OUT_PREFIX [M,...]
    PYTHONPATH=<tree>:<site> python gemm_tl.py --compile        (only compiles: TileLang's cache)
"""
import json
import statistics
import sys
import time

import torch

import tilelang
import tilelang.language as T

LAYERS = 24
dev = "cuda"
BF, F32 = "bfloat16", "float32"
SHAPES = {"out": (1024, 2048), "down": (1024, 3584), "gate_up": (7168, 1024), "dn_in": (8224, 1024),
          "attn_in": (5120, 1024)}
CFGS = {  # (bm, bn, bk, stages, threads, split)
    "out": [(64, 128, 64, 4, 128, 1), (64, 128, 64, 4, 128, 2), (128, 128, 64, 4, 256, 2), (128, 128, 64, 4, 256, 4),
            (64, 64, 64, 4, 128, 1), (128, 64, 64, 4, 128, 2), (64, 128, 128, 3, 128, 2)],
    "down": [(64, 128, 64, 4, 128, 1), (64, 128, 64, 4, 128, 2), (128, 128, 64, 4, 256, 2), (128, 128, 64, 4, 256, 4),
             (64, 64, 64, 4, 128, 1), (128, 64, 64, 4, 128, 2), (64, 128, 128, 3, 128, 2)],
    "gate_up": [(128, 256, 64, 3, 256, 1), (128, 128, 64, 4, 256, 1), (64, 256, 64, 4, 128, 1)],
    "dn_in": [(128, 256, 64, 3, 256, 1), (128, 128, 64, 4, 256, 1)],
    "attn_in": [(128, 256, 64, 3, 256, 1), (128, 128, 64, 4, 256, 1)],
}
GLU = [(64, 64, 64, 4, 128), (64, 128, 64, 4, 128), (128, 64, 64, 4, 256), (128, 128, 64, 3, 256), (64, 128, 64, 3, 128)]


def gemm_nt(N, K, bm, bn, bk, stages, threads, split, M=None):
    M = T.dynamic("M") if M is None else M
    Kp = K // split
    if split == 1:
        @T.prim_func
        def main(A: T.Tensor((M, K), BF), B: T.Tensor((N, K), BF), C: T.Tensor((M, N), BF)):
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
                As = T.alloc_shared((bm, bk), BF)
                Bs = T.alloc_shared((bn, bk), BF)
                Cl = T.alloc_fragment((bm, bn), F32)
                T.clear(Cl)
                for k in T.Pipelined(Kp // bk, num_stages=stages):
                    T.copy(A[by * bm:by * bm + bm, k * bk:k * bk + bk], As)
                    T.copy(B[bx * bn:bx * bn + bn, k * bk:k * bk + bk], Bs)
                    T.gemm(As, Bs, Cl, transpose_B=True)
                T.copy(Cl, C[by * bm:by * bm + bm, bx * bn:bx * bn + bn])
    else:
        @T.prim_func
        def main(A: T.Tensor((M, K), BF), B: T.Tensor((N, K), BF), C: T.Tensor((split, M, N), F32)):
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), split, threads=threads) as (bx, by, bz):
                As = T.alloc_shared((bm, bk), BF)
                Bs = T.alloc_shared((bn, bk), BF)
                Cl = T.alloc_fragment((bm, bn), F32)
                T.clear(Cl)
                for k in T.Pipelined(Kp // bk, num_stages=stages):
                    T.copy(A[by * bm:by * bm + bm, bz * Kp + k * bk:bz * Kp + k * bk + bk], As)
                    T.copy(B[bx * bn:bx * bn + bn, bz * Kp + k * bk:bz * Kp + k * bk + bk], Bs)
                    T.gemm(As, Bs, Cl, transpose_B=True)
                T.copy(Cl, C[bz, by * bm:by * bm + bm, bx * bn:bx * bn + bn])
    return main


def gate_up_silu(F, K, bm, bn, bk, stages, threads, M=None):
    M = T.dynamic("M") if M is None else M

    @T.prim_func
    def main(A: T.Tensor((M, K), BF), W: T.Tensor((2 * F, K), BF), O: T.Tensor((M, F), BF)):
        with T.Kernel(T.ceildiv(F, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            As = T.alloc_shared((bm, bk), BF)
            Gs = T.alloc_shared((bn, bk), BF)
            Us = T.alloc_shared((bn, bk), BF)
            Cg = T.alloc_fragment((bm, bn), F32)
            Cu = T.alloc_fragment((bm, bn), F32)
            Ob = T.alloc_fragment((bm, bn), BF)
            T.clear(Cg)
            T.clear(Cu)
            for k in T.Pipelined(K // bk, num_stages=stages):
                T.copy(A[by * bm:by * bm + bm, k * bk:k * bk + bk], As)
                T.copy(W[bx * bn:bx * bn + bn, k * bk:k * bk + bk], Gs)
                T.copy(W[F + bx * bn:F + bx * bn + bn, k * bk:k * bk + bk], Us)
                T.gemm(As, Gs, Cg, transpose_B=True)
                T.gemm(As, Us, Cu, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                Ob[i, j] = T.Cast(BF, T.Cast(F32, T.Cast(BF, T.Cast(F32, T.Cast(BF, Cg[i, j])) / (
                    1.0 + T.exp(-T.Cast(F32, T.Cast(BF, Cg[i, j])))))) * T.Cast(F32, T.Cast(BF, Cu[i, j])))
            T.copy(Ob, O[by * bm:by * bm + bm, bx * bn:bx * bn + bn])
    return main


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


def main(prefix, Ms):
    compile_only = prefix == "--compile"  # (fills TileLang's kernel cache, e.g. while the GPU runs something else)
    t0 = time.time()
    names, funcs = [], []
    for shape, cfgs in CFGS.items():
        N, K = SHAPES[shape]
        for c in cfgs:
            if K % (c[5] * c[2]) == 0:
                names.append((shape, "tl%dx%dx%ds%dt%dk%d" % c, c))
                funcs.append(gemm_nt(N, K, *c))
    for c in GLU:
        names.append(("gate_up", "glu%dx%dx%ds%dt%d" % c, c))
        funcs.append(gate_up_silu(3584, 1024, *c))
    kernels = tilelang.par_compile(funcs, ignore_error=True, num_workers=16)
    print(f"compiled {sum(k is not None for k in kernels)} / {len(kernels)} kernels in {time.time() - t0:.0f} s", flush=True)
    for (shape, way, _), k in zip(names, kernels):
        if k is None:
            print("  failed:", shape, way, flush=True)
    if compile_only:
        return
    import megakernel.build as mb
    mb.load()
    silu_mul = torch.ops.qwen35_megakernel.prefill_silu_mul
    rows = []
    torch.manual_seed(0)
    for shape, (N, K) in SHAPES.items():
        Ws = torch.randn(LAYERS, N, K, device=dev, dtype=torch.bfloat16) * 0.02
        for M in Ms:
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
            ref = x.float() @ Ws[0].float().t()
            flop = 2 * M * N * K
            ways = {"mm": lambda i: torch.mm(x, Ws[i].t(), out=y)}
            act = None
            if shape == "gate_up":
                act = torch.empty(M, N // 2, device=dev, dtype=torch.bfloat16)
                ways["mm+silu"] = lambda i: (torch.mm(x, Ws[i].t(), out=y), silu_mul(y, act))
                ways["mm+silu"](0)
                torch.cuda.synchronize()
                act_ref = act.clone()
            for (s, way, c), k in zip(names, kernels):
                if s != shape or k is None:
                    continue
                try:
                    if way.startswith("glu"):
                        o = torch.empty(M, N // 2, device=dev, dtype=torch.bfloat16)
                        f = (lambda k, o: lambda i: k(x, Ws[i], o))(k, o)
                        f(0)
                        torch.cuda.synchronize()
                        diff = (o.view(torch.int16) != act_ref.view(torch.int16)).float().mean().item()
                        err = ((o.float() - act_ref.float()).norm() / act_ref.float().norm()).item()
                        print(f"  {shape} M={M} {way}: differs from mm+silu in {diff:.2e} of values, rel {err:.2e}", flush=True)
                        assert err < 1e-2, err
                    else:
                        split = c[5]
                        o = torch.empty((M, N) if split == 1 else (split, M, N), device=dev,
                                        dtype=torch.bfloat16 if split == 1 else torch.float32)
                        f = (lambda k, o: lambda i: k(x, Ws[i], o))(k, o)
                        o.fill_(float("nan"))
                        f(0)
                        torch.cuda.synchronize()
                        got = o.float() if split == 1 else o.sum(0)
                        err = ((got - ref).norm() / ref.norm()).item()
                        assert err == err and err < 1e-2, err
                    ways[way] = f
                except Exception as e:
                    print(f"  {shape} M={M} {way}: {type(e).__name__} {str(e)[:300]}", flush=True)
            for way, fn in ways.items():
                us = graph_us(fn)
                rows.append(dict(shape=shape, N=N, K=K, M=M, way=way, us=us, tflops=flop / us / 1e6))
            base = next(r for r in rows if r["shape"] == shape and r["M"] == M and r["way"] == "mm")
            line = "  ".join(f"{r['way']} {r['us']:.2f}" for r in rows if r["shape"] == shape and r["M"] == M)
            print(f"{shape:8s} M={M:5d} ({base['tflops']:.0f} TF/s for mm): {line}", flush=True)
        del Ws
    json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, tilelang=tilelang.__version__, rows=rows),
              open(prefix + ".json", "w"), indent=1)
    with open(prefix + ".md", "w") as f:
        f.write("| shape | M | way | µs | TFLOP/s |\n| --- | ---: | --- | ---: | ---: |\n")
        for r in rows:
            f.write(f"| {r['shape']} | {r['M']} | {r['way']} | {r['us']:.2f} | {r['tflops']:.0f} |\n")


if __name__ == "__main__":
    main(sys.argv[1], [int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "520").split(",")])
