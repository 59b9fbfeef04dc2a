"""The greedy argmax from an int8 copy of the lm_head (csrc/lm_head.cuh lm_head_bounded at batch 1,
lm_head_bounded_batch for a batch, per row): the argmax of the bf16 logits, read from half the bytes.

The lm_head is the step's largest matrix (the 0.8B: 248,320 x 1,024 bf16, 508 MB of a step's 1.5 GB).
The greedy argmax needs the largest logit, not every logit: row r's int8 copy q_r (per-row scale s_r)
gives s_r (q_r . x), within err_r |x|_2 of the logit w_r . x the bf16 row gives, with

    err_r = |w_r - s_r q_r|_2 (1 + 2^-10) + 2^-12 |w_r|_2

(Cauchy-Schwarz for the rounding; the second term covers both fp32 sums' rounding: batch 1's ~37 terms deep, a
batch's tensor-core sums ~65 mma steps deep, both under 5e-6 |w_r|_2 |x|_2). A row whose upper bound, rounded to
bf16, is below the best lower bound, rounded, can neither be the argmax of the bf16 logits nor tie it, so only the rows left (on the built-in weights
a few per block) are computed exactly, from their bf16 rows, as the bf16 pass computes them: the
result is the bf16 pass's argmax, ties to the lowest index included.

`quantize(w)` makes the copy the kernel reads; `argmax(w, q, scales, x)` is the same selection in
PyTorch, the specification the CPU tests check against the plain argmax.
"""

from __future__ import annotations

import torch

Q_OFFSET = 128  # stored bytes are q + 128 (q in [-127, 127]): the kernel turns a byte into a float with one prmt and one add
QUANT_CHUNK = 16384  # rows quantized at a time (the fp64 error norms of the whole 0.8B head at once would be 2 GB)
# A row with a value of HUGE or more is computed exactly, never ruled out: with |x|_2 < 2^64 (a finite fp32 sum of
# squares) a lane's partial sums of such a row could overflow fp32 and meet as inf - inf = NaN, which no bound covers.
HUGE = 2.0 ** 58
# |x|_2^2 below SMALL (squares in fp32's subnormal range: the kernel's |x|_2 would come out low) or not finite: every
# row exactly. ABS_SLACK: added to every bound (the sums' products that fall below fp32's normal range).
SMALL = 2.0 ** -96
ABS_SLACK = 2.0 ** -120


def quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w [V, D] (bf16, any device) -> (q [V + 1, D] uint8: round(w / s) + 128 per row, a last row of zeros
    the kernel may read past the end; scales [V, 2] fp32: {s_r, err_r}). A row with a non-finite value or
    one of HUGE or more gets s_r = 0 and err_r = inf (never ruled out: computed exactly); an all-zero row
    s_r = 1, err_r = 0."""
    if w.dim() != 2 or w.dtype != torch.bfloat16:
        raise ValueError(f"quantize: expected a [V, D] bfloat16 matrix; got {w.dtype} of shape {tuple(w.shape)}")
    V, D = w.shape
    q = torch.zeros(V + 1, D, dtype=torch.uint8, device=w.device)
    scales = torch.empty(V, 2, dtype=torch.float32, device=w.device)
    for r0 in range(0, V, QUANT_CHUNK):
        rows = w[r0:r0 + QUANT_CHUNK].double()
        # (a row of values past HUGE could overflow the kernel's fp32 sums to a NaN its bound does not see)
        finite = torch.isfinite(rows).all(dim=1) & (rows.abs().amax(dim=1) < HUGE)
        rows = torch.where(finite[:, None], rows, torch.zeros_like(rows))
        amax = rows.abs().amax(dim=1)
        s = torch.where(amax > 0, (amax / 127).float().double(), torch.ones_like(amax))  # the fp32 scale the kernel multiplies by
        qi = torch.round(rows / s[:, None]).clamp_(-127, 127)
        err = (rows - qi * s[:, None]).norm(dim=1) * (1 + 2.0 ** -10) + rows.norm(dim=1) * 2.0 ** -12
        err32 = err.float()
        err32 = torch.where(err32.double() < err, torch.nextafter(err32, torch.full_like(err32, float("inf"))), err32)
        q[r0:r0 + rows.shape[0]] = (qi + Q_OFFSET).to(torch.uint8)
        scales[r0:r0 + rows.shape[0], 0] = torch.where(finite, s.float(), torch.zeros_like(err32))
        scales[r0:r0 + rows.shape[0], 1] = torch.where(finite, err32, torch.full_like(err32, float("inf")))
    return q, scales


def bf16_round(v: torch.Tensor) -> torch.Tensor:
    return v.to(torch.bfloat16).float()


def first_argmax(v: torch.Tensor) -> int:
    """The index of the largest value, the lowest of equal ones (NaN never wins; all NaN: -1)."""
    ok = ~torch.isnan(v)
    if not ok.any():
        return -1
    best = v[ok].max()
    return int(torch.nonzero(v == best)[0])


def argmax(w: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, x: torch.Tensor) -> tuple[int, int]:
    """The kernel's selection in PyTorch (fp32 on w's device): the argmax of bf16(w . x) found from the int8
    rows' bounds and the exact logits of the rows they leave -> (the argmax, how many rows were computed
    exactly). The kernel rules rows out per block (against its own best lower bound, which only keeps more);
    this rules them out against the best lower bound of all rows."""
    x = x.float()
    logits = bf16_round(w.float() @ x)  # (the rows kept are read from here: one product, so no row's bits differ)
    ss = x.pow(2).sum()
    if not (torch.isfinite(ss) and ss >= SMALL):
        return first_argmax(logits), w.shape[0]
    xn = ss.sqrt() * (1 + 2.0 ** -12)
    approx = scales[:, 0] * ((q[:-1].float() - Q_OFFSET) @ x)
    e = scales[:, 1] * xn + ABS_SLACK
    low = torch.nan_to_num(approx - e, nan=-float("inf")).max()
    keep = torch.nonzero(bf16_round(approx + e) >= bf16_round(low)).flatten()
    best = first_argmax(logits[keep])
    return (int(keep[best]) if best >= 0 else -1), int(keep.numel())
