"""Session 25 call 3 (issue 21): call 1's TileLang GEMMs ran 1.5-2.1x slower than cuBLAS at 520 rows with M dynamic.
Is that the dynamic M (no TMA / wgmma in the generated code)? The same kernels built for M = 520 exactly, and with a
rasterization swizzle, against the dynamic ones: time (gemm_tl.py's method), and whether the generated CUDA holds
wgmma and TMA (cp.async.bulk.tensor) instructions.
    PYTHONPATH=<tree>:<site> python gemm_tl2.py OUT_PREFIX       (or --compile)
"""
import json
import os
import sys
import time

import torch
import tilelang

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_tl import LAYERS, SHAPES, gate_up_silu, gemm_nt, graph_us  # noqa: E402

M = 520
dev = "cuda"
WAYS = [  # (shape, (bm, bn, bk, stages, threads, split), static M)
    ("out", (128, 128, 64, 4, 256, 1), False), ("out", (128, 128, 64, 4, 256, 1), True),
    ("out", (64, 128, 64, 4, 128, 2), True), ("out", (128, 128, 64, 4, 256, 2), True),
    ("out", (128, 64, 64, 4, 128, 1), True),
    ("down", (128, 128, 64, 4, 256, 1), False), ("down", (128, 128, 64, 4, 256, 1), True),
    ("down", (64, 128, 64, 4, 128, 2), True), ("down", (128, 128, 64, 4, 256, 2), True),
    ("gate_up", (128, 256, 64, 3, 256, 1), False), ("gate_up", (128, 256, 64, 3, 256, 1), True),
    ("gate_up", (128, 128, 64, 4, 256, 1), True),
]
GLU = [((128, 128, 64, 3, 256), True), ((64, 128, 64, 4, 128), True)]


def main(prefix):
    t0 = time.time()
    names, funcs = [], []
    for shape, c, static in WAYS:
        N, K = SHAPES[shape]
        names.append((shape, ("S" if static else "D") + "tl%dx%dx%ds%dt%dk%d" % c, c))
        funcs.append(gemm_nt(N, K, *c, M=M if static else None))
    for c, static in GLU:
        names.append(("gate_up", ("S" if static else "D") + "glu%dx%dx%ds%dt%d" % c, c))
        funcs.append(gate_up_silu(3584, 1024, *c, M=M if static else None))
    kernels = tilelang.par_compile(funcs, ignore_error=True, num_workers=16)
    print(f"compiled {sum(k is not None for k in kernels)} / {len(kernels)} kernels in {time.time() - t0:.0f} s", flush=True)
    for (shape, way, _), k in zip(names, kernels):
        if k is None:
            print("  failed:", shape, way, flush=True)
            continue
        src = k.get_kernel_source()
        print(f"  {shape} {way}: wgmma {'wgmma' in src}, TMA {'cp.async.bulk.tensor' in src or 'tma_load' in src}, "
              f"cp.async {'cp.async.cg' in src or 'cp_async' in src}, mma.sync {'mma.sync' in src or 'mma_sync' in src}",
              flush=True)
        if prefix != "--compile":
            with open(f"{prefix}_{shape}_{way}.cu", "w") as f:
                f.write(src)
    if prefix == "--compile":
        return
    import megakernel.build as mb
    mb.load()
    silu_mul = torch.ops.qwen35_megakernel.prefill_silu_mul
    rows = []
    torch.manual_seed(0)
    for shape in ("out", "down", "gate_up"):
        N, K = SHAPES[shape]
        Ws = torch.randn(LAYERS, N, K, device=dev, dtype=torch.bfloat16) * 0.02
        x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
        ref = x.float() @ Ws[0].float().t()
        ways = {"mm": lambda i: torch.mm(x, Ws[i].t(), out=y)}
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
                if "glu" in way:
                    o = torch.empty(M, N // 2, device=dev, dtype=torch.bfloat16)
                    f = (lambda k, o: lambda i: k(x, Ws[i], o))(k, o)
                    f(0)
                    torch.cuda.synchronize()
                    diff = (o.view(torch.int16) != act_ref.view(torch.int16)).float().mean().item()
                    print(f"  {way}: differs from mm+silu in {diff:.2e} of values", flush=True)
                    assert diff < 1e-3, diff
                else:
                    split = c[5]
                    o = torch.full((M, N) if split == 1 else (split, M, N), float("nan"), device=dev,
                                   dtype=torch.bfloat16 if split == 1 else torch.float32)
                    f = (lambda k, o: lambda i: k(x, Ws[i], o))(k, o)
                    f(0)
                    torch.cuda.synchronize()
                    got = o.float() if split == 1 else o.sum(0)
                    err = ((got - ref).norm() / ref.norm()).item()
                    assert err == err and err < 1e-2, err
                ways[way] = f
            except Exception as e:
                print(f"  {shape} {way}: {type(e).__name__} {str(e)[:300]}", flush=True)
        for way, fn in ways.items():
            us = graph_us(fn)
            rows.append(dict(shape=shape, N=N, K=K, M=M, way=way, us=us, tflops=2 * M * N * K / us / 1e6))
        print(f"{shape:8s} M={M}: " + "  ".join(f"{r['way']} {r['us']:.2f}" for r in rows if r["shape"] == shape), flush=True)
        del Ws
    json.dump(dict(device=torch.cuda.get_device_name(), tilelang=tilelang.__version__, rows=rows), open(prefix + ".json", "w"),
              indent=1)
    with open(prefix + ".md", "w") as f:
        f.write("| shape | M | way | µs | TFLOP/s |\n| --- | ---: | --- | ---: | ---: |\n")
        for r in rows:
            f.write(f"| {r['shape']} | {r['M']} | {r['way']} | {r['us']:.2f} | {r['tflops']:.0f} |\n")


if __name__ == "__main__":
    main(sys.argv[1])
