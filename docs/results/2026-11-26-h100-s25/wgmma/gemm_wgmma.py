"""Session 25 call 5 (issue 21): our own Hopper GEMM (gemm_wgmma.cu: TMA + wgmma, one producer and 1-3 consumer warp
groups, one wgmma group in flight) against cuBLAS on the prefill's shapes at 520 rows, and with SwiGLU in its
epilogue against mm + prefill_silu_mul. Each way first checked on NaN-poisoned outputs (every output written; rel.
Frobenius error against an fp32 product < 1e-2; SwiGLU: the share of act values that differ from mm + silu_mul's
bits), then timed as gemm_tl.py times (24 calls in a graph on 24 weight copies, median of 7 replays, µs a call).
    PYTHONPATH=<tree>:<site> python gemm_wgmma.py OUT_PREFIX [SHAPE]      (or --compile)
ways: "C-BN-STAGES-EPI[-CL-SHARE]/split": C consumer warp groups (BM = 64 C rows), BN columns, EPI 0 bf16, 1 fp32
partials [split, M, N], 2 SwiGLU; CL blocks a cluster sharing B (SHARE B: the M tiles of one N tile) or A (SHARE A).
"""
import json
import os
import sys
import time

import torch
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
M, LAYERS, dev = 520, 24, "cuda"
SHAPES = {"gate_up": (7168, 1024), "out": (1024, 2048), "down": (1024, 3584)}
WAYS = {  # (call 6's best ways, then clusters sharing one operand by TMA multicast)
    "gate_up": ["3-176-4-0/1", "3-168-4-0/1", "3-168-4-0-3-B/1", "3-192-4-0-3-B/1", "3-96-4-2/1", "3-96-4-2-3-B/1"],
    "out": ["3-64-4-1/2", "3-64-4-1-2-A/2", "3-64-4-1-4-A/2", "3-128-4-1-2-A/2"],
    "down": ["3-64-4-1/2", "3-64-4-1-2-A/2", "3-64-4-1-4-A/2", "3-128-4-1-2-A/2"],
}


def build():
    t0 = time.time()
    ext = load("gemm_wgmma", [os.path.join(HERE, "gemm_wgmma.cu")], extra_include_paths=[HERE],
               extra_cuda_cflags=["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "--expt-relaxed-constexpr",
                                  "-diag-suppress=3306"], verbose=False)
    print(f"built in {time.time() - t0:.0f} s", flush=True)
    return ext


def main(prefix, only=None):
    ext = build()
    if prefix == "--compile":
        return
    from gemm_tl import graph_us
    import megakernel.build as mb
    mb.load()
    silu_mul = torch.ops.qwen35_megakernel.prefill_silu_mul
    rows = []
    torch.manual_seed(0)
    for shape, (N, K) in SHAPES.items():
        if only and shape != only:
            continue
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
        for way in WAYS[shape]:
            spec, split = way.split("/")
            split, epi = int(split), int(spec.split("-")[3])  # (spec: C-BN-STAGES-EPI[-CL-SHARE])
            F = N // 2 if epi == 2 else 0
            shape_out = (M, F) if epi == 2 else ((M, N) if epi == 0 else (split, M, N))
            o = torch.full(shape_out, float("nan"), device=dev, dtype=torch.float32 if epi == 1 else torch.bfloat16)
            f = (lambda o, spec, split, F: lambda i: ext.gemm(x, Ws[i], o, spec, split, F))(o, spec, split, F)
            try:
                f(0)
                torch.cuda.synchronize()
                if epi == 2:
                    nan = torch.isnan(o).any().item()
                    diff = (o.view(torch.int16) != act_ref.view(torch.int16)).float().mean().item()
                    err = ((o.float() - act_ref.float()).norm() / act_ref.float().norm()).item()
                    print(f"  {shape} {way}: NaN {nan}, differs from mm+silu in {diff:.2e} of values, rel {err:.2e}", flush=True)
                    assert not nan and err < 1e-2, err
                else:
                    got = o.float() if epi == 0 else o.sum(0)
                    err = ((got - ref).norm() / ref.norm()).item()
                    print(f"  {shape} {way}: rel {err:.2e}", flush=True)
                    assert err == err and err < 1e-2, err
                ways[way] = f
            except Exception as e:
                print(f"  {shape} {way}: {type(e).__name__} {str(e)[:300]}", flush=True)
                torch.cuda.synchronize()
        for way, fn in ways.items():
            us = graph_us(fn)
            rows.append(dict(shape=shape, N=N, K=K, M=M, way=way, us=us, tflops=2 * M * N * K / us / 1e6))
        print(f"{shape:8s} M={M}: " + "  ".join(f"{r['way']} {r['us']:.2f}" for r in rows if r["shape"] == shape), flush=True)
        del Ws
    json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), open(prefix + ".json", "w"), indent=1)
    with open(prefix + ".md", "w") as f:
        f.write("| shape | M | way | µs | TFLOP/s |\n| --- | ---: | --- | ---: | ---: |\n")
        for r in rows:
            f.write(f"| {r['shape']} | {r['M']} | {r['way']} | {r['us']:.2f} | {r['tflops']:.0f} |\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
