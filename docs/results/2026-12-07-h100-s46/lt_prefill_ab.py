"""The prefill with its plain GEMMs (torch.mm: the in-projections and gate/ups, beta = 0) through cuBLASLt's
algorithm that measured fastest for the shape (gate_up / dn_in / attn_in at 520 rows: call 1's search found
cuBLASLt's heuristic picks 0-5% ahead of torch.mm's for dn_in and attn_in), against the prefill as it is, in one
process: two FastPrefill objects on one tier, the second's plans made and captured while torch.mm is routed
through cuBLASLt (the graph keeps the kernels it captured), then each prompt length timed alternating (a CUDA
event before and after the call, a fresh state each, as `compare bench`'s pp rows), with the logits' difference.
    PYTHONPATH=<tree> python lt_prefill_ab.py OUT_DIR [T,T,...]
An experiment beside the results (ctypes into the cuBLASLt torch loaded), not tier code."""
import ctypes as C
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_lt_search as L  # noqa: E402

from compare import load_tier  # noqa: E402
from megakernel.prefill import FastPrefill  # noqa: E402
from reference import ModelConfig, random_weights  # noqa: E402
from compare.timing import random_ids  # noqa: E402

_mm = torch.mm
CANDIDATES, REPEATS = 8, 15


class Lt:
    def __init__(self):
        self.lib, self.path = L.load_lt()
        self.h = C.c_void_p()
        L.ok(self.lib.cublasLtCreate(C.byref(self.h)), "create")
        self.shapes, self.choice, self.log = {}, {}, []

    def shape(self, M, N, K):
        key = (M, N, K)
        if key not in self.shapes:
            self.shapes[key] = L.Shape(self.lib, self.h, f"{M}x{N}x{K}", M, N, K, 0)
        return self.shapes[key]

    def tune(self, M, N, K):
        """The fastest of torch.mm and cuBLASLt's first CANDIDATES heuristic picks for this shape (None: torch)."""
        key = (M, N, K)
        if key in self.choice:
            return self.choice[key]
        s = self.shape(M, N, K)
        t_torch = s.time(s.torch_call)
        best, t_best = None, t_torch
        rows = []
        for rank, a in enumerate(s.heuristic(CANDIDATES)):
            try:
                t = s.time(lambda w, a=a: s.call(a, w))
            except RuntimeError:
                continue
            rows.append((rank, t))
            if t < t_best * 0.98:
                best, t_best = a, t
        t_torch2 = s.time(s.torch_call)
        self.choice[key] = best
        entry = {"M": M, "N": N, "K": K, "torch_us": [t_torch, t_torch2], "heuristic_us": rows,
                 "chosen": None if best is None else L.config(self.lib, best), "chosen_us": t_best}
        self.log.append(entry)
        print(f"  tune {M}x{N}x{K}: torch {t_torch:.2f}/{t_torch2:.2f} µs, heuristic "
              + ", ".join(f"{r}:{t:.2f}" for r, t in rows) + f" -> {'torch' if best is None else f'{t_best:.2f}'}",
              flush=True)
        return best

    def mm(self, a, b, *, out=None):
        """torch.mm, routed through cuBLASLt where a tuned algorithm beat it: a [M, K] row-major, b a weight's
        transposed view ([N, K] row-major), out [M, N] row-major, all bf16."""
        if (out is None or a.dtype != torch.bfloat16 or a.dim() != 2 or not a.is_contiguous() or not b.t().is_contiguous()
                or not out.is_contiguous()):
            return _mm(a, b, out=out)
        M, K = a.shape
        N = b.shape[1]
        algo = self.tune(M, N, K)
        if algo is None:
            return _mm(a, b, out=out)
        s = self.shapes[(M, N, K)]
        st = self.lib.cublasLtMatmul(self.h, s.desc, C.byref(s.alpha), C.c_void_p(b.data_ptr()), s.a,
                                     C.c_void_p(a.data_ptr()), s.b, C.byref(s.beta_c), C.c_void_p(out.data_ptr()), s.c,
                                     C.c_void_p(out.data_ptr()), s.c, C.byref(algo), C.c_void_p(s.ws.data_ptr()),
                                     C.c_size_t(L.WORKSPACE), C.c_void_p(torch.cuda.current_stream().cuda_stream))
        if st != 0:
            raise RuntimeError(f"cublasLtMatmul {st}")
        return out


def timed(fn):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    a.record()
    out = fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3, out


def main(out_dir, lengths):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
    lt = Lt()
    plain, routed = FastPrefill(tier), FastPrefill(tier)
    doc = {"device": torch.cuda.get_device_name(), "lib": lt.path, "rows": []}
    for T in lengths:
        ids = random_ids(config, T, 7, "cuda")
        for fp, route in ((plain, False), (routed, True)):  # eager, capture, replay
            if route:
                torch.mm = lt.mm
            try:
                for _ in range(3):
                    fp(ids, tier.new_state(1, T))
            finally:
                torch.mm = _mm
        torch.cuda.synchronize()
        ta, tb = [], []
        for _ in range(REPEATS):
            for fp, ts in ((plain, ta), (routed, tb)):
                state = tier.new_state(1, T)
                t, logits = timed(lambda: fp(ids, state))
                ts.append(t)
        la, lb = plain(ids, tier.new_state(1, T)), routed(ids, tier.new_state(1, T))
        diff = ((la - lb).norm() / la.norm()).item()
        row = {"T": T, "plain_us": statistics.median(ta), "routed_us": statistics.median(tb), "plain_all": ta,
               "routed_all": tb, "logits_rel_diff": diff}
        doc["rows"].append(row)
        print(f"pp{T}: plain {row['plain_us']:.1f} µs ({T / row['plain_us'] * 1e6:,.0f} tok/s), routed "
              f"{row['routed_us']:.1f} µs ({T / row['routed_us'] * 1e6:,.0f} tok/s): "
              f"{row['plain_us'] / row['routed_us'] - 1:+.2%}; logits {diff:.1e}", flush=True)
    doc["tuned"] = lt.log
    json.dump(doc, open(f"{out_dir}/lt_prefill_ab.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "520,4096").split(",")])
