"""The tier's prefill with its GEMMs tuned (megakernel/prefill_gemm.py: each shape by torch's call or the cuBLASLt
candidate that measured fastest) against torch's calls everywhere, in one process: two FastPrefill objects on one
tier (tuned_gemms True / False), each prompt length's plans made and captured, then timed alternating (a CUDA event
before and after the call, a fresh state each, as `compare bench`'s pp rows); the logits' difference and what was
chosen for each shape.
    PYTHONPATH=<tree> python tuned_ab.py OUT_DIR [T,T,...] [MIN_ROWS]
MIN_ROWS (where given) replaces prefill_gemm.TUNE_MIN_ROWS for the run (e.g. 0: every shape timed, to find where
tuning starts to pay; the tree of call 5, 9c8f459, had no such gate)."""
import json
import statistics
import sys

import torch

from compare import load_tier
from compare.timing import random_ids
from megakernel.prefill import FastPrefill
from reference import ModelConfig, random_weights

REPEATS = 15


def timed(fn):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    a.record()
    out = fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3, out


def main(out_dir, lengths):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
    plain, tuned = FastPrefill(tier, tuned_gemms=False), FastPrefill(tier)
    doc = {"device": torch.cuda.get_device_name(), "rows": []}
    for T in lengths:
        ids = random_ids(config, T, 7, "cuda")
        reps = REPEATS if T <= 4096 else 4
        for fp in (plain, tuned):
            for _ in range(3):  # eager (and tuning), capture, replay
                fp(ids, tier.new_state(1, T))
        ta, tb = [], []
        for _ in range(reps):
            for fp, ts in ((plain, ta), (tuned, tb)):
                state = tier.new_state(1, T)
                ts.append(timed(lambda: fp(ids, state))[0])
        la, lb = plain(ids, tier.new_state(1, T)), tuned(ids, tier.new_state(1, T))
        row = {"T": T, "plain_us": statistics.median(ta), "tuned_us": statistics.median(tb), "plain_all": ta,
               "tuned_all": tb, "logits_rel_diff": ((la - lb).norm() / la.norm()).item()}
        doc["rows"].append(row)
        print(f"pp{T}: torch's GEMMs {row['plain_us']:.1f} µs ({T / row['plain_us'] * 1e6:,.0f} tok/s), tuned "
              f"{row['tuned_us']:.1f} µs ({T / row['tuned_us'] * 1e6:,.0f} tok/s): {row['plain_us'] / row['tuned_us'] - 1:+.2%};"
              f" logits {row['logits_rel_diff']:.1e}", flush=True)
    doc["timings"] = [dict(v, key=list(k)) for k, v in tuned.gemms.timings.items()]
    for t in doc["timings"]:
        if len(t.get("torch_us", [])) < 2:
            print(f"  {t['M']}x{t['N']}x{t['K']} beta {t['beta']}: not timed ({t.get('why')})", flush=True)
            continue
        c = t["candidates_us"]
        print(f"  {t['M']}x{t['N']}x{t['K']} beta {t['beta']}: torch {t['torch_us'][0]:.2f}/{t['torch_us'][1]:.2f} µs,"
              f" candidates {', '.join(f'{u:.2f}' for u in c)} -> "
              + ("torch" if t["chosen"] is None else f"candidate {t['chosen']} ({c[t['chosen']]:.2f})"), flush=True)
    json.dump(doc, open(f"{out_dir}/tuned_ab.json", "w"), indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 3:
        import megakernel.prefill_gemm as prefill_gemm

        prefill_gemm.TUNE_MIN_ROWS = int(sys.argv[3])
    main(sys.argv[1], [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "520,4096").split(",")])
