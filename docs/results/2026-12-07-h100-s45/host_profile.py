"""Where a pp520 prefill call's host time goes before and around the graph's launch (session 45, issue 21: the GPU
idles ~49 µs before the graph starts, s44's call_span.py): CALLS calls of tier.prefill(ids, state) on device ids
into states made beforehand (none allocated in the loop), after three untimed calls (eager, capture, launch), under
cProfile; then the same calls timed alone by the host's clock (median µs a call, the GPU synchronized every call).
Writes OUT_DIR/host_profile.txt (the profile's top functions by own time and by cumulative time).
    PYTHONPATH=<tree> python host_profile.py OUT_DIR [T] [CALLS]
"""
import cProfile
import io
import pstats
import statistics
import sys
import time

import torch

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights


def main(out_dir, T=520, calls=200):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)),
                     device="cuda")
    ids = torch.randint(0, config.vocab_size, (1, T), generator=torch.Generator().manual_seed(3)).cuda()
    for _ in range(3):  # eager, captured, launched
        tier.prefill(ids, tier.new_state(max_seq_len=T))
    states = [tier.new_state(max_seq_len=T) for _ in range(calls)]
    torch.cuda.synchronize()
    walls = []
    for s in states[:calls // 2]:  # (the host's time of a call, the GPU idle when it starts)
        t0 = time.perf_counter()
        tier.prefill(ids, s)
        walls.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
    prof = cProfile.Profile()
    for s in states[calls // 2:]:
        prof.enable()
        tier.prefill(ids, s)
        prof.disable()
        torch.cuda.synchronize()
    text = io.StringIO()
    text.write(f"pp{T}: the host's time of a call (tier.prefill returning; GPU idle at its start), median of {len(walls)}: "
               f"{statistics.median(walls):.1f} µs (min {min(walls):.1f})\n\n")
    for key in ("tottime", "cumulative"):
        stats = pstats.Stats(prof, stream=text)
        stats.sort_stats(key).print_stats(35)
    open(f"{out_dir}/host_profile.txt", "w").write(text.getvalue())
    print(text.getvalue()[:4000])


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
