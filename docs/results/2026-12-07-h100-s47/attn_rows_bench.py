"""Session 47 (issue 21): is cuDNN's fresh-prompt attention at 520 rows held back by its part row tile? The last row
tile (8 valid rows of 64) walks all 520 keys: ceil(520 / 128) = 5 key tiles where 512 rows take 4. µs of torch's SDPA
(cuDNN, as the prefill calls it: q [1, 8, T, 256], k / v [1, 2, T, 256], causal, GQA) at T rows, from a CUDA graph of
20 calls (compare.timing.graph_us), medians of 7 replays; and, for T not a multiple of 64, the split a plan could make:
SDPA over the first T0 = 64 floor(T / 64) rows (their keys end there: causal) and the T - T0 last rows against all T
keys by torch's flash (FA2, varlen, causal aligned to the lower right), one after the other and on two streams.
    PYTHONPATH=<tree> python attn_rows_bench.py OUT_DIR [T,T,...]
"""
import json
import sys

import torch
import torch.nn.functional as F

from compare.timing import graph_us


def main(out_dir, lengths=(512, 520, 576, 1024, 1032)):
    dev, gen = torch.device("cuda"), torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for T in lengths:
        q = torch.randn(1, T, 8, 256, device=dev, generator=gen).bfloat16()
        kv = torch.randn(2, T, 2, 256, device=dev, generator=gen).bfloat16()
        qt, kt, vt = q.transpose(1, 2), kv[0:1].transpose(1, 2), kv[1:2].transpose(1, 2)

        def sdpa(qq=qt, kk=kt, vv=vt):
            return F.scaled_dot_product_attention(qq, kk, vv, is_causal=True, scale=256 ** -0.5, enable_gqa=True)
        full = sdpa()
        row = {"T": T, "sdpa_us": graph_us(sdpa, 20, 7)[0]}
        T0 = T // 64 * 64
        if T0 != T:
            n = T - T0
            cu_q = torch.tensor([0, n], dtype=torch.int32, device=dev)
            cu_k = torch.tensor([0, T], dtype=torch.int32, device=dev)

            def head():
                return sdpa(qt[:, :, :T0], kt[:, :, :T0], vt[:, :, :T0])

            def tail():
                return torch.ops.aten._flash_attention_forward(q[0, T0:], kv[0, :T], kv[1, :T], cu_q, cu_k, n, T, 0.0, True,
                                                               False, scale=256 ** -0.5)[0]
            o_head, o_tail = head(), tail()
            err = max(float((o_head - full[:, :, :T0]).abs().max()), float((o_tail - full[0, :, T0:].transpose(0, 1)).abs().max()))
            side = torch.cuda.Stream()

            def both():
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    tail()
                head()
                torch.cuda.current_stream().wait_stream(side)
            row.update(T0=T0, head_us=graph_us(head, 20, 7)[0], tail_us=graph_us(tail, 20, 7)[0],
                       both_streams_us=graph_us(both, 20, 7)[0], split_max_diff=err)
        rows.append(row)
        print(json.dumps(row), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(f"{out_dir}/attn_rows_bench.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], *([tuple(int(t) for t in sys.argv[2].split(","))] if len(sys.argv) > 2 else []))
