"""For ncu (call 4): gemm_t in the named ways and cuBLAS's torch.mm on the out-projection's shape at 520 rows, two
calls each, nothing else on the GPU.
    PYTHONPATH=<tree> ncu ... python profile_t.py WAY/S [WAY/S ...]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_t import SHAPES, build  # noqa: E402


def main(ways):
    ext = build()
    N, K = SHAPES["out"]
    torch.manual_seed(0)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02
    x = torch.randn(520, K, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(520, N, device="cuda", dtype=torch.bfloat16)
    ws = torch.empty(16 << 20, device="cuda", dtype=torch.float32)
    counters = torch.zeros(4096, device="cuda", dtype=torch.int32)
    for _ in range(2):
        torch.mm(x, w.t(), out=y)
        for way in ways:
            spec, split = way.split("/")
            ext.gemm_t(x, w, y, ws, counters, spec, int(split))
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv[1:])
