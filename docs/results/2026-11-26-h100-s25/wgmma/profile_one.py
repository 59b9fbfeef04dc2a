"""For ncu (next_call_gemm_ncu.sh): our GEMM in one way and cuBLAS's torch.mm on the same operands, 3 calls each,
nothing else on the GPU. The prefill's shapes at 520 rows (gemm_wgmma.SHAPES).
    PYTHONPATH=<tree> ncu ... python profile_one.py SHAPE WAY/SPLIT
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_wgmma import M, SHAPES, build  # noqa: E402


def main(shape, way):
    ext = build()
    N, K = SHAPES[shape]
    spec, split = way.split("/")
    split, epi = int(split), int(spec.split("-")[3])
    torch.manual_seed(0)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    F = N // 2 if epi == 2 else 0
    o = torch.empty((M, F) if epi == 2 else ((M, N) if epi == 0 else (split, M, N)), device="cuda",
                    dtype=torch.float32 if epi == 1 else torch.bfloat16)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        ext.gemm(x, w, o, spec, split, F)
        torch.mm(x, w.t(), out=y)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
