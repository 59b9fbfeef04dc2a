"""Every kernel of one fast prefill (after the shape's graph is captured), by name: launches and µs (session 27;
`compare prefill` keeps the top four a category).

    PYTHONPATH=<tree> python kernel_table.py OUT.json 520 4096
"""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from compare import load_tier
from reference import ModelConfig, random_weights


def table(tier, T: int):
    ids = torch.randint(0, tier.config.vocab_size, (1, T), generator=torch.Generator().manual_seed(0)).to(tier.device)
    for _ in range(2):
        tier.prefill(ids, tier.new_state(max_seq_len=T))
    state = tier.new_state(max_seq_len=T)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        tier.prefill(ids, state)
        torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        r = rows.setdefault(e.name[:110], [0, 0.0])
        r[0] += 1
        r[1] += e.time_range.elapsed_us()
    return sorted(([n, c, us] for n, (c, us) in rows.items()), key=lambda r: -r[2])


def main(path, lengths):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
    out = {}
    for T in lengths:
        out[T] = table(tier, T)
        total = sum(r[2] for r in out[T])
        print(f"pp{T}: {sum(r[1] for r in out[T])} kernels, {total:,.0f} µs")
        for n, c, us in out[T]:
            print(f"  {us:8.1f} µs {c:4d} x {us / c:6.2f}  {n}")
    json.dump(out, open(path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [int(x) for x in sys.argv[2:]])
