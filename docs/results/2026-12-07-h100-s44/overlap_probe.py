"""Could a DeltaNet layer's z projection run beside its delta rule? (session 44, issue 21; no tier code)

The prefill's DeltaNet in-projection computes q, k, v, z, b, a in one GEMM (N = 8,224 at the 0.8B); z is read
only by dn_out_norm, after the delta rule. Split off, z's GEMM (520 x 2,048 x 1,024) could run on a side stream
of the graph while the rule (kkt_solve, FlashQLA's fused kernel: 128 blocks) runs. This times, in CUDA graphs of
REPS layers each (medians of 30 replays, µs a layer):
  rule        the delta rule alone (make("flash-qla", T, 16): what the prefill runs)
  z           the z GEMM alone
  rule || z   both, z forked onto a side stream before the rule and joined after it
  in full     the in-projection as it is (N = 8,224)
  in no-z     without z's 2,048 columns (N = 6,176)
What the split would save a layer: (in full - in no-z) - ((rule || z) - rule). Timed by compare.timing.graph_us (call 1
ran this file at e4a46b8 with its own copy of that loop: 2 eager warm-ups and one replay before the timed ones).
    PYTHONPATH=<tree> python overlap_probe.py OUT_DIR [T]
"""
import json
import statistics
import sys

import torch

from compare.timing import graph_us
from megakernel.prefill_delta_rule import chunk_cumsum, make

REPS, REPLAYS = 18, 30


def main(out_dir, T=520):
    dev, H, D, hidden = torch.device("cuda"), 16, 128, 1024
    gen = torch.Generator(device=dev).manual_seed(0)
    rule = make("flash-qla", T, H, dev)
    rn = lambda *s: torch.randn(*s, device=dev, generator=gen)  # noqa: E731
    q = torch.nn.functional.normalize(rn(1, T, H, D), dim=-1).bfloat16()
    k = torch.nn.functional.normalize(rn(1, T, H, D), dim=-1).bfloat16()
    v = rn(1, T, H, D).bfloat16()
    g = chunk_cumsum(-torch.nn.functional.softplus(rn(1, T, H)) * 0.1, rule.g_chunk).contiguous()
    beta = torch.sigmoid(rn(1, T, H)).contiguous()
    h0 = torch.zeros(1, H, D, D, device=dev)
    x = rn(T, hidden).bfloat16()
    w_full, w_noz, w_z = (rn(n, hidden).bfloat16() * 0.03 for n in (8224, 6176, 2048))
    out_full, out_noz, out_z = (torch.empty(T, n, device=dev, dtype=torch.bfloat16) for n in (8224, 6176, 2048))
    side = torch.cuda.Stream()

    def both():
        main = torch.cuda.current_stream()
        side.wait_stream(main)  # (the fork: z's GEMM after what the main stream has queued)
        with torch.cuda.stream(side):
            torch.mm(x, w_z.t(), out=out_z)
        rule(q, k, v, g, beta, D ** -0.5, h0)
        main.wait_stream(side)  # (the join)

    rows = {}
    for name, fn in (("rule", lambda: rule(q, k, v, g, beta, D ** -0.5, h0)),
                     ("z", lambda: torch.mm(x, w_z.t(), out=out_z)),
                     ("rule || z", both),
                     ("in full", lambda: torch.mm(x, w_full.t(), out=out_full)),
                     ("in no-z", lambda: torch.mm(x, w_noz.t(), out=out_noz))):
        rows[name] = [graph_us(fn, REPS, REPLAYS)[0] for _ in range(3)]
        print(f"{name:10s} µs a layer: " + " / ".join(f"{t:.2f}" for t in rows[name]), flush=True)
    med = {n: statistics.median(v) for n, v in rows.items()}
    saved = (med["in full"] - med["in no-z"]) - (med["rule || z"] - med["rule"])
    print(f"the split would save {saved:.2f} µs a layer ({18 * saved:.1f} µs over 18 layers; > 0: worth building)")
    json.dump({"device": torch.cuda.get_device_name(), "T": T, "reps": REPS, "replays": REPLAYS, "rows": rows,
               "saved_us_per_layer": saved}, open(f"{out_dir}/overlap_probe.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
