"""reference/sampling.py, the draw every tier makes in `decode_sample` (the megakernel inside its
argmax): the hash is MurmurHash3's finalizer bit for bit, the noise is finite and below the bound
the kernel prunes with, a draw depends on (seed, position, row) alone, and the draws follow
softmax(logit / T) (a chi-square test over 20,000 seeded draws)."""

from __future__ import annotations

import math

import pytest
import torch

from reference import sampling


def fmix32_py(h: int) -> int:
    h &= 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def test_fmix32_is_murmur3s_finalizer():
    values = [0, 1, 2, 0xFFFFFFFF, 0x80000000, 123456789] + torch.randint(0, 2 ** 32, (200,),
                                                                          generator=torch.Generator().manual_seed(0)).tolist()
    got = sampling.fmix32(torch.tensor(values, dtype=torch.int64)).tolist()
    assert got == [fmix32_py(v) for v in values]
    assert fmix32_py(0) == 0 and fmix32_py(1) == 0x514E28B7  # MurmurHash3's published fmix32(1)
    assert sampling.row_key(7, 40, 3) == fmix32_py(fmix32_py(fmix32_py(7) ^ 40) ^ 3)


def test_noise_is_finite_and_below_the_kernels_bound():
    g = torch.cat([sampling.gumbel_noise(seed, 100, 0, 248320) for seed in range(4)])
    assert torch.isfinite(g).all()
    assert float(g.max()) < sampling.GUMBEL_MAX
    top = -math.log(-math.log(1 - 2 ** -24))  # the noise at the largest u the hash can give
    assert top < sampling.GUMBEL_MAX and sampling.GUMBEL_MAX - top < 0.1
    assert abs(float(g.mean()) - 0.5772) < 0.01  # the Gumbel distribution's mean (Euler's constant)


def test_a_draw_depends_on_seed_position_and_row_alone():
    logits = torch.randn(2, 1000, generator=torch.Generator().manual_seed(1))
    a = sampling.sample(logits, 1.0, seed=5, positions=[10, 10])
    assert torch.equal(a, sampling.sample(logits, 1.0, seed=5, positions=[10, 10]))
    draws = {tuple(sampling.sample(logits, 1.0, seed=s, positions=[p, p]).tolist()) for s in (5, 6) for p in (10, 11)}
    assert len(draws) == 4  # another seed or position: another draw (here)
    assert a[0] != a[1] or not torch.equal(logits[0], logits[1])
    same_rows = sampling.sample(logits[:1].expand(2, -1), 1.0, seed=5, positions=[10, 10])
    assert same_rows[0] != same_rows[1]  # two rows of the same logits draw their own noise


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_draws_follow_softmax_of_the_scaled_logits(temperature):
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -3.0]])
    p = torch.softmax(logits[0] / temperature, -1)
    n = 20000
    counts = torch.zeros(6)
    for seed in range(n):
        counts[int(sampling.sample(logits, temperature, seed, [0])[0])] += 1
    chi2 = float(((counts - n * p) ** 2 / (n * p)).sum())
    assert chi2 < 22.5, (chi2, counts.tolist(), (n * p).tolist())  # df 5: p < 0.0004 by chance


def test_temperature_zero_is_refused():
    with pytest.raises(ValueError, match="temperature"):
        sampling.sample(torch.zeros(1, 4), 0.0, 0, [0])
