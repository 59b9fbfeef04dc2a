"""The step both attention kernels share: fold one tile of keys into an online softmax.

Given the scores' running max `m` and sum `l` [rows] and the unnormalised output `acc`
[rows, d], a tile of keys k, values v [BLOCK_N, d] and which of the tile's (row, key)
pairs may attend (`allowed`), return the updated (m, l, acc), all fp32.
"""

import triton
import triton.language as tl


@triton.jit
def online_softmax_step(q, k, v, allowed, m, l, acc, scale, IEEE: tl.constexpr):
    if IEEE:
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    else:
        s = tl.dot(q, tl.trans(k)) * scale
    s = tl.where(allowed, s, float("-inf"))
    m_new = tl.maximum(m, tl.max(s, axis=1))
    p = tl.exp(s - m_new[:, None])
    alpha = tl.exp(m - m_new)
    l = l * alpha + tl.sum(p, axis=1)
    if IEEE:
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
    else:
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
    return m_new, l, acc
