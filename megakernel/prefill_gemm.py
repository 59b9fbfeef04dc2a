"""The fast prefill's GEMMs — its in-projections and gate/ups (out = x wᵀ) and, where not split over K, its
out-projections and downs (out += x wᵀ into the residual stream) — each shape by whichever of torch's call (cuBLAS's
own pick) and cuBLASLt's first CANDIDATES heuristic algorithms measures fastest on this GPU: timed once per shape in
the process, at the first eager run that needs it (a plan's first prefill), and kept. Measured on an H100 (docs/
results/2026-12-07-h100-s46, calls 1 and 4): at 4,096 rows cuBLASLt's third pick runs the gate/up GEMM in 82 µs where
torch's takes 92-95 and its fourth the attention in-projection in 60 where torch's takes 67-70 (pp4096 +2.2%); at
520 rows torch's picks stay (no candidate ahead by MARGIN).

Timing: each way as a CUDA graph of `copies` calls over as many copies of the weight (together past twice the L2,
so the weight comes from HBM as in the prefill), replayed REPLAYS times, µs a call (median); torch's call timed
before and after the candidates, its faster run the bar. A shape first met while a graph is being captured (nothing
can be timed then) takes torch's call and is timed at its next eager run. The choice is per process: two processes
may pick differently where two ways measure alike (each way's bits are its own, so such runs' prefills may differ
by rounding; within a process every run of a shape takes the same way).
"""
from __future__ import annotations

import statistics

import torch

CANDIDATES = 8  # cuBLASLt's heuristic algorithms timed a shape
MARGIN = 0.03  # a candidate is taken only if it beats torch's call by this fraction (runs of one way spread ~1-2%)
WORKSPACE_BYTES = 32 << 20  # the most a candidate may ask for (cuBLASLt's split-K algorithms use some)
REPLAYS = 5
MAX_COPIES = 16


def torch_gemm(x, w, out, beta: int) -> None:
    """out = x wᵀ (beta 0) or out += x wᵀ (beta 1, one rounding of the sum) by torch (cuBLAS's pick)."""
    if beta:
        out.addmm_(x, w.t())
    else:
        torch.mm(x, w.t(), out=out)


class PrefillGemms:
    """`gemms(x, w, out, beta)`: out = x wᵀ (+ out where beta is 1) by the way chosen for the shape. `tuned=False`
    keeps torch's call everywhere (an A/B's base). `choices` and `timings` say what was measured and taken."""

    def __init__(self, tier, tuned: bool = True):
        self.tier, self.tuned = tier, tuned
        self.choices: dict = {}  # shape key -> CPU int64 [8] (a cuBLASLt algorithm) or None (torch's call)
        self.timings: dict = {}  # shape key -> {"torch_us": [..], "candidates_us": [..], "chosen": index | None}
        self._workspace = None
        self._op = None

    @staticmethod
    def key(x, w, out, beta: int) -> tuple:
        return (x.shape[0], w.shape[0], x.shape[1], beta, x.stride(0), out.stride(0))

    def __call__(self, x, w, out, beta: int) -> None:
        algo = self.choice(x, w, out, beta) if self.tuned else None
        if algo is None:
            torch_gemm(x, w, out, beta)
        else:
            self.op(x, w, out, float(beta), algo, self.workspace())

    @property
    def op(self):
        if self._op is None:
            from . import ops

            self._op = ops.op("prefill_gemm_lt", self.tier.ops_namespace)
        return self._op

    def workspace(self) -> torch.Tensor:
        if self._workspace is None:
            self._workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=self.tier.device)
        return self._workspace

    def choice(self, x, w, out, beta: int):
        key = self.key(x, w, out, beta)
        if key not in self.choices:
            if torch.cuda.is_current_stream_capturing():
                return None  # (timed at the shape's next eager run; this capture keeps torch's call)
            self.choices[key] = self.tune(x, w, out, beta)
        return self.choices[key]

    def tune(self, x, w, out, beta: int):
        """Time torch's call and cuBLASLt's candidates for this shape (on copies: x, out and w are not written)."""
        M, K = x.shape
        N = w.shape[0]
        key = self.key(x, w, out, beta)
        words = [] if M == 0 or N == 0 else self.tier.ext.gemm_lt_candidates(
            M, N, K, x.stride(0), out.stride(0), CANDIDATES, WORKSPACE_BYTES)
        record = {"M": M, "N": N, "K": K, "beta": beta, "torch_us": [], "candidates_us": [], "chosen": None}
        self.timings[key] = record
        if not words:
            return None
        xs, outs = x.clone(), out.clone()
        ws = [w.clone() for _ in range(weight_copies(w))]
        algos = [torch.tensor(a, dtype=torch.int64) for a in words]
        ways = [lambda wi: torch_gemm(xs, wi, outs, beta)]
        ways += [lambda wi, a=a: self.op(xs, wi, outs, float(beta), a, self.workspace()) for a in algos]
        times = [timed_per_call(ways[0], ws)]
        for way in ways[1:]:
            try:
                times.append(timed_per_call(way, ws))
            except RuntimeError:  # (a candidate cuBLASLt offered but would not run: left out)
                times.append(float("inf"))
        times.append(timed_per_call(ways[0], ws))
        record["torch_us"], record["candidates_us"] = [times[0], times[-1]], times[1:-1]
        bar = min(times[0], times[-1])
        best = min(range(len(algos)), key=lambda i: times[1 + i])
        if times[1 + best] < bar * (1 - MARGIN):
            record["chosen"] = best
            return algos[best]
        return None


def weight_copies(w) -> int:
    """Copies of w that together pass twice the GPU's L2 (2..MAX_COPIES): timed over them, w comes from HBM."""
    l2 = torch.cuda.get_device_properties(w.device).L2_cache_size
    return max(2, min(MAX_COPIES, -(-2 * l2 // max(1, w.numel() * w.element_size()))))


def timed_per_call(way, weights) -> float:
    """µs a call of way(w): a CUDA graph of one call per weight copy, replayed REPLAYS times (median)."""
    way(weights[0])  # (errors surface here, outside the capture)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for w in weights:
            way(w)
    graph.replay()
    times = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / len(weights))
    return statistics.median(times)
