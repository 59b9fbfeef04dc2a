"""The fast prefill's GEMMs — its in-projections and gate/ups (out = x wᵀ) and, where not split over K, its
out-projections and downs (out += x wᵀ into the residual stream) — each shape of at least TUNE_MIN_ROWS rows by
whichever of torch's call (cuBLAS's own pick) and cuBLASLt's first CANDIDATES heuristic algorithms measures fastest on
this GPU, timed once per shape in the process (at the first eager run that meets it: a plan's first prefill) and kept
for the process. Measured on an H100 (docs/results/2026-12-07-h100-s46, calls 1, 4 and 5): at 4,096 rows cuBLASLt's
picks run gate/up in 78 µs where torch's takes 84, the attention in-projection in 61 where torch's takes 66-70 and the
DeltaNet in-projection in 91 where torch's takes 94-95 (pp4096 +2.6%); at 32,768 rows +1.3%; at 520 rows no cuBLASLt
algorithm is ahead of torch's pick by the margin (the out-projections' and downs' included), hence TUNE_MIN_ROWS:
shorter prompts take torch's call untimed, so a new prompt length costs no timing there.

Timing: each way as a CUDA graph of one call per copy of the weight (the copies past twice the L2, so the weight
comes from HBM as in the prefill), replayed REPLAYS times, µs a call (median); two passes over all the ways, each
way's faster pass counted (at 32,768 rows one way's runs differ by up to 25%: clocks); a candidate is kept only where
it beats torch's by MARGIN. A shape first met while a graph is being captured takes torch's call for good (nothing
can be timed then), so a graph and an eager run of one shape take the same way. Where cuBLASLt cannot be asked or a
timing fails (memory), torch's call, the reason in `timings`. The choices are per process and device (two processes
may pick differently where two ways measure alike; each way's bits are its own, so their prefills may then differ by
rounding): every PrefillGemms of a process shares them, unless given its own table.
"""
from __future__ import annotations

import statistics

import torch

from . import ops

TUNE_MIN_ROWS = 2048  # shapes of fewer rows take torch's call untimed (measured: torch's picks stay at 520 rows)
CANDIDATES = 8  # cuBLASLt's heuristic algorithms timed a shape
MARGIN = 0.03  # a candidate is taken only if its faster pass beats torch's faster pass by this fraction
WORKSPACE_BYTES = 32 << 20  # the most a candidate may ask for (cuBLASLt's split-K algorithms use some)
REPLAYS = 5  # replays of a way's graph a pass (its median counts)
PASSES = 2  # passes over every way (its faster pass counts)
MAX_COPIES = 16  # weight copies a graph at most (small weights: 2 x L2 would need more)

_PROCESS_CHOICES: dict = {}  # (device, shape key) -> CPU int64 [8] (a cuBLASLt algorithm) or None (torch's call)
_PROCESS_TIMINGS: dict = {}  # the same keys -> what was measured (PrefillGemms.timings)


def torch_gemm(x, w, out, beta: int) -> None:
    """out = x wᵀ (beta 0) or out += x wᵀ (beta 1, one rounding of the sum) by torch (cuBLAS's pick)."""
    if beta:
        out.addmm_(x, w.t())
    else:
        torch.mm(x, w.t(), out=out)


def alignment(t) -> int:
    """The largest power of two up to 256 that divides t's address (cuBLASLt's algorithms may assume 256)."""
    p = t.data_ptr()
    return min(256, p & -p) if p else 256


class PrefillGemms:
    """`gemms(x, w, out, beta)`: out = x wᵀ (+ out where beta is 1) by the way chosen for the shape. `tuned=False`
    keeps torch's call everywhere (an A/B's base); `table` (a dict) keeps this instance's choices apart from the
    process's (tests). `timings` says what was measured and taken for each shape, `choices` what is used."""

    def __init__(self, tier, tuned: bool = True, table: dict | None = None):
        self.tier, self.tuned = tier, tuned
        self.choices = _PROCESS_CHOICES if table is None else table
        self.timings = _PROCESS_TIMINGS if table is None else {}
        self._workspace = None
        self._op = None

    @staticmethod
    def key(x, w, out, beta: int) -> tuple:
        """(device, M, N, K, beta, x's and out's row strides, the three pointers' alignments)."""
        return (out.device.index, x.shape[0], w.shape[0], x.shape[1], beta, x.stride(0), out.stride(0), alignment(x),
                alignment(w), alignment(out))

    def __call__(self, x, w, out, beta: int) -> None:
        algo = self.choice(x, w, out, beta) if self.tuned else None
        if algo is None:
            torch_gemm(x, w, out, beta)
        else:
            self.op(x, w, out, float(beta), algo, self.workspace())

    @property
    def op(self):
        """The prefill_gemm_lt op of the tier's build (settable: a test's stand-in)."""
        if self._op is None:
            self._op = ops.op("prefill_gemm_lt", self.tier.ops_namespace)
        return self._op

    @op.setter
    def op(self, value):
        self._op = value

    def workspace(self) -> torch.Tensor:
        if self._workspace is None:
            self._workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=self.tier.device)
        return self._workspace

    def choice(self, x, w, out, beta: int):
        """The shape's cuBLASLt algorithm, or None for torch's call (timed at its first eager call)."""
        if x.shape[0] < TUNE_MIN_ROWS:
            return None
        key = self.key(x, w, out, beta)
        if key not in self.choices:
            if torch.cuda.is_current_stream_capturing():
                self.choices[key] = None  # (nothing can be timed in a capture: torch's call, for good)
                self.record(key, x, w, beta)["why"] = "first met during a graph capture"
            else:
                with torch.cuda.device(out.device):
                    self.choices[key] = self.tune(key, x, w, out, beta)
        return self.choices[key]

    def record(self, key, x, w, beta: int) -> dict:
        """The shape's entry in `timings`, empty: filled by tune()."""
        self.timings[key] = {"M": x.shape[0], "N": w.shape[0], "K": x.shape[1], "beta": beta, "torch_us": [],
                             "candidates_us": [], "chosen": None}
        return self.timings[key]

    def tune(self, key, x, w, out, beta: int):
        """Time torch's call and cuBLASLt's candidates for this shape (x read; out written where beta is 0, which
        the caller's call overwrites next; a copy of out where beta is 1) → the algorithm to use, or None."""
        M, K = x.shape
        N = w.shape[0]
        record = self.record(key, x, w, beta)
        try:
            words = self.tier.ext.gemm_lt_candidates(M, N, K, x.stride(0), out.stride(0), CANDIDATES, WORKSPACE_BYTES,
                                                     alignment(x), alignment(w), alignment(out))
            if not words:
                record["why"] = "cuBLASLt offered no algorithm"
                return None
            target = out.clone() if beta else out
            ws = [w.clone() for _ in range(weight_copies(w))]
            algos = [torch.tensor(a, dtype=torch.int64) for a in words]
            ways = [lambda wi: torch_gemm(x, wi, target, beta)]
            ways += [lambda wi, a=a: self.op(x, wi, target, float(beta), a, self.workspace()) for a in algos]
            passes = [[time_way(way, ws) for way in ways] for _ in range(PASSES)]
        except (RuntimeError, AttributeError) as e:  # (no cuBLASLt, no memory for the copies: torch's call)
            record["why"] = f"not timed: {e}"
            return None
        times = [min(p[i] for p in passes) for i in range(len(ways))]
        record["torch_us"], record["candidates_us"] = [p[0] for p in passes], times[1:]
        best = min(range(len(algos)), key=lambda i: times[1 + i])
        if times[1 + best] < times[0] * (1 - MARGIN):
            record["chosen"] = best
            return algos[best]
        return None


def weight_copies(w) -> int:
    """Copies of w that together pass twice the GPU's L2 (2..MAX_COPIES): timed over them, w comes from HBM."""
    l2 = torch.cuda.get_device_properties(w.device).L2_cache_size
    return max(2, min(MAX_COPIES, -(-2 * l2 // max(1, w.numel() * w.element_size()))))


def time_way(way, weights) -> float:
    """µs a call of way(w), or inf where it does not run (a candidate cuBLASLt offered but refused)."""
    try:
        return timed_per_call(way, weights)
    except RuntimeError as e:
        if "prefill_gemm_lt" not in str(e):
            raise
        return float("inf")


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
