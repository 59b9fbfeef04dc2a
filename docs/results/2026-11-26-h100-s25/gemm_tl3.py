"""Session 25 call 4 (issue 21): calls 1 and 3's TileLang GEMMs ran one block an SM (a consumer's 240 registers x
256 threads fill the register file) and their tile counts missed the 132 SMs (gate_up 128 x 256: 140 blocks, two
waves; out 128 x 128: 40). cuBLAS's picks fit one wave (gate_up 192 x 176: 123 blocks; out / down 64 x 88: 108). The
same kernels with tiles sized for one wave of 132 (M = 520 rows: 3 tiles of 192), and SwiGLU fused at 192-row tiles.
    PYTHONPATH=<tree>:<site> python gemm_tl3.py OUT_PREFIX       (or --compile)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_tl2  # noqa: E402

gemm_tl2.WAYS = [  # (shape, (bm, bn, bk, stages, threads, split), static M): blocks at M = 520
    ("gate_up", (192, 176, 64, 4, 384, 1), False),   # 3 x 41 = 123 (cuBLAS's tile)
    ("gate_up", (192, 128, 64, 4, 384, 1), False),   # 3 x 56 = 168 (for the record: two waves)
    ("gate_up", (128, 224, 64, 4, 256, 1), False),   # 5 x 32 = 160
    ("out", (192, 128, 64, 4, 384, 4), False),       # 3 x 8 x 4 = 96
    ("out", (192, 64, 64, 4, 384, 2), False),        # 3 x 16 x 2 = 96
    ("out", (64, 96, 64, 4, 128, 1), False),         # 9 x 11 = 99
    ("out", (128, 256, 64, 3, 256, 4), False),       # 5 x 4 x 4 = 80
    ("down", (192, 128, 64, 4, 384, 4), False),
    ("down", (192, 64, 64, 4, 384, 2), False),
    ("down", (64, 96, 64, 4, 128, 1), False),
    ("down", (128, 256, 64, 3, 256, 4), False),
]
gemm_tl2.GLU = [  # (bm, bn act columns, bk, stages, threads): blocks at M = 520
    ((192, 88, 64, 4, 384), False),   # 3 x 41 = 123
    ((192, 96, 64, 4, 384), False),   # 3 x 38 = 114
    ((192, 112, 64, 3, 384), False),  # 3 x 32 = 96
    ((128, 144, 64, 3, 256), False),  # 5 x 25 = 125
    ((64, 224, 64, 3, 128), False),   # 9 x 16 = 144
]

if __name__ == "__main__":
    gemm_tl2.main(sys.argv[1])
