"""Sampling a token on the device, as the specification: temperature sampling by the Gumbel-max
trick with counter-based noise, so a kernel can draw it inside its argmax (no second pass over
the vocabulary, no random state to carry between launches).

The draw for batch row b whose token at position p is being decoded (the step consumes the
token at p and yields the one at p + 1):

    id = argmax_i ( logit_i * (1 / T) + g_i ),   g_i = -log(-log(u_i)),   ties: the lowest i

with logit_i the fp32 value of the bf16-rounded logit, 1 / T rounded to fp32, every product and
sum rounded to fp32 on its own (no fused multiply-add), and u_i in (0, 1) from a 32-bit hash of
(seed, p, b, i):

    c   = fmix32(fmix32(fmix32(seed) ^ p) ^ b)        (per row and position)
    h_i = fmix32(c ^ i)                               (fmix32: MurmurHash3's finalizer)
    u_i = ((h_i >> 9) + 0.5) / 2^23                   (exact in fp32, in [2^-24, 1 - 2^-24])

argmax(logit / T + Gumbel noise) is distributed as softmax(logit / T) (the Gumbel-max trick), so
this is the distribution compare/sampling.choose draws from at top_k 0 and top_p 1, with other
draws: a seed gives the same tokens on every tier that implements this spec (up to the tiers' own
logit differences), not the same tokens as the host sampler. Keying the noise by position (not by
the step of a launch) makes one launch of 8 steps draw what two launches of 4 draw. The kernel
(csrc/lm_head.cuh) computes the same function; g_i stays below GUMBEL_MAX (~16.64 at the largest
u), so a logit whose scaled value plus GUMBEL_MAX is below the best key so far cannot win (fp32
addition is monotonic) and needs no noise.
"""

from __future__ import annotations

import torch

MASK32 = 0xFFFFFFFF
GUMBEL_MAX = 16.7  # above the noise at the largest u, -log(-log(1 - 2^-24)) ~ 16.64 (csrc/lm_head.cuh: the same)


def fmix32(h: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's 32-bit finalizer on int64 tensors holding uint32 values."""
    h = h & MASK32
    h = h ^ (h >> 16)
    h = (h * 0x85EBCA6B) & MASK32
    h = h ^ (h >> 13)
    h = (h * 0xC2B2AE35) & MASK32
    return h ^ (h >> 16)


def row_key(seed: int, position: int, row: int) -> int:
    """c of the spec: the hash state of batch row `row` decoding its token at `position`."""
    t = lambda v: torch.tensor(v & MASK32, dtype=torch.int64)  # noqa: E731
    return int(fmix32(fmix32(fmix32(t(seed)) ^ t(position)) ^ t(row)))


def gumbel_noise(seed: int, position: int, row: int, vocab_size: int) -> torch.Tensor:
    """g_i for every token i of one row and position: fp32 [vocab_size]."""
    h = fmix32(torch.arange(vocab_size, dtype=torch.int64) ^ row_key(seed, position, row))
    u = ((h >> 9).to(torch.float32) + 0.5) * (1.0 / 2 ** 23)
    return -torch.log(-torch.log(u))


def sample(logits: torch.Tensor, temperature: float, seed: int, positions: list[int]) -> torch.Tensor:
    """The spec's draw for every row: logits [B, vocab] (any float dtype; taken as fp32),
    row b decoding its token at positions[b] → ids [B] int64 on the CPU."""
    if not temperature > 0:
        raise ValueError(f"temperature={temperature!r}; sampling needs a temperature > 0 (0 is greedy: argmax)")
    x = logits.detach().float().cpu()
    inv_t = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(temperature, dtype=torch.float32)
    out = []
    for b, p in enumerate(positions):
        key = x[b] * inv_t + gumbel_noise(seed, p, b, x.shape[1])
        out.append(int(torch.argmax(key)))  # (torch.argmax: the first of equal maxima, the lowest id)
    return torch.tensor(out, dtype=torch.int64)
