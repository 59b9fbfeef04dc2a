"""A fresh prompt's last-row attention at T keys (session 45, issue 21): prefill_attn_last_row (one launch: split over
the keys, merged and gated) against what it replaces, SDPA of the one query row (cuDNN's kernels where torch picks
them) + prefill_attn_gate; each way 20 calls in one CUDA graph, timed by compare.timing.graph_us (µs a call, median of 20 replays), random
bf16 inputs; the two outputs' relative difference.
    PYTHONPATH=<tree> python attn_last_row_bench.py [T ...]
"""
import sys

import torch
import torch.nn.functional as F

from compare import load_tier
from compare.timing import graph_us
from megakernel import ops
from megakernel.prefill import LAST_ROW_KEYS, FastPrefill
from reference import ModelConfig, random_weights


def main(lengths):
    config = ModelConfig.qwen3_5_0_8b()
    mk = load_tier("megakernel", config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
    k = mk.k
    last_row, gate = (ops.op(n, mk.ops_namespace) for n in ("prefill_attn_last_row", "prefill_attn_gate"))
    for T in lengths:
        plan, state = FastPrefill(mk).plan(T, T, True), mk.new_state(max_seq_len=T)
        plan.bind(torch.randint(0, config.vocab_size, (1, T)).cuda(), state)
        gen = torch.Generator(device="cuda").manual_seed(T)
        qbuf = torch.randn(T, k.FA_HQ, k.FA_HD, device="cuda", generator=gen).bfloat16()
        kv = torch.randn(2, T, k.FA_HKV, k.FA_HD, device="cuda", generator=gen).bfloat16()
        proj = torch.randn(T, k.FA_QKV, device="cuda", generator=gen).bfloat16()
        keys = max(LAST_ROW_KEYS, -(-T // k.PREFILL_LAST_ROW_MAX_SPLITS))
        head = getattr(k, "PREFILL_LAST_ROW_PART_HEAD", 2)  # (a partial's floats before its o: 2 in s45-tail3's kernel)
        part = torch.empty(k.FA_HKV, -(-T // keys), k.FA_GROUP, head + k.FA_HD, device="cuda")
        count = torch.zeros(k.FA_HKV, dtype=torch.int32, device="cuda")
        ours, theirs = (torch.zeros(T, k.FA_OIN, dtype=torch.bfloat16, device="cuda") for _ in range(2))

        def own():
            last_row(qbuf, kv, proj, plan.table, part, count, ours, keys)

        def sdpa():
            q = qbuf[T - 1:].view(1, 1, -1, k.FA_HD).transpose(1, 2)
            kk, vv = (x.view(1, T, -1, k.FA_HD).transpose(1, 2) for x in (kv[0], kv[1]))
            o = F.scaled_dot_product_attention(q, kk, vv, scale=k.FA_HD ** -0.5, enable_gqa=True).transpose(1, 2)[0]
            gate(o, proj[T - 1:], plan.table, theirs[T - 1:])

        (t_own, how_own), (t_sdpa, how_sdpa) = graph_us(own, 20, 20), graph_us(sdpa, 20, 20)
        diff = ((ours[T - 1].float() - theirs[T - 1].float()).norm() / theirs[T - 1].float().norm()).item()
        print(f"T {T:6d} ({how_own}, {how_sdpa}): attn_last_row {t_own:7.2f} µs ({-(-T // keys)} x {k.FA_HKV} blocks of {keys} keys); "
              f"SDPA + attn_gate {t_sdpa:7.2f} µs; relative difference {diff:.2e}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [520, 4096, 32768])
