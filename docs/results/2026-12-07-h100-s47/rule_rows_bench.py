"""Session 47 (issue 21): FlashQLA's delta rule (kkt_solve + cp_preprocess + its fused kernel, as the prefill calls it:
prefill_delta_rule.make) at T rows against the same rule given R = T rounded up to its 64-row chunk, the rows past T
padding (q, k, v 0, beta 0, g's step 0: what dn_prep now writes). FlashQLA's kernels load a part chunk element by element
on one warp (TMA only for whole chunks), and s28's figures (block_DV 16: 10.5 / 22.8 / 30.1 µs at 256 / 520 / 1,024
rows) put 520's 9th, part chunk at ~4 µs more than a whole chunk. One layer at the 0.8B's shapes; µs from a CUDA graph
of 20 calls (compare.timing.graph_us), medians of 7 replays, each way twice (alternating); o[:T] and the final state of
the padded call against the unpadded call's (bits, and the largest difference).
    PYTHONPATH=<tree> python rule_rows_bench.py OUT_DIR [T,T,...]
"""
import json
import sys

import torch

from compare.delta_rule import inputs, reference, relative_error
from compare.timing import graph_us
from megakernel import prefill_delta_rule as pdr
from reference import ModelConfig


def padded(x, R, fill=0.0):
    out = torch.full((x.shape[0], R) + tuple(x.shape[2:]), fill, dtype=x.dtype, device=x.device)
    out[:, :x.shape[1]] = x
    return out


def main(out_dir, lengths=(512, 520, 576, 1000, 1024)):
    config, dev = ModelConfig.qwen3_5_0_8b(), torch.device("cuda")
    HV, scale = config.linear_num_value_heads, config.linear_key_head_dim ** -0.5
    rows = []
    for T in lengths:
        R = -(-T // 64) * 64
        q, k, v, g, beta, h0 = inputs(config, T, "carried", "model", T, dev)
        o_ref, s_ref = reference(q, k, v, g, beta, h0, scale)
        gc = pdr.chunk_cumsum(g, 64)
        ways = {"T": (pdr.make("flash-qla", T, HV, dev), (q, k, v, gc, beta))}
        if R != T:
            gp = padded(gc, R)
            gp[:, T:] = gc[:, T - 1:T]  # (g summed within the chunk: the padding rows add 0)
            ways["R"] = (pdr.make("flash-qla", R, HV, dev), (padded(q, R), padded(k, R), padded(v, R), gp, padded(beta, R)))
        got, us = {}, {name: [] for name in ways}
        for name, (rule, args) in ways.items():
            o, final = rule(*args, scale, h0.clone())
            got[name] = (o[:, :T].clone(), final.clone())
        for _ in range(2):
            for name, (rule, args) in ways.items():
                us[name].append(graph_us(lambda: rule(*args, scale, h0), 20, 7)[0])
        row = {"T": T, "R": R, "us_T": us["T"], "err_o_T": relative_error(got["T"][0], o_ref),
               "err_state_T": relative_error(got["T"][1], s_ref)}
        if R != T:
            row.update(us_R=us["R"], err_o_R=relative_error(got["R"][0], o_ref), err_state_R=relative_error(got["R"][1], s_ref),
                       o_bits_equal=bool(torch.equal(got["T"][0], got["R"][0])),
                       state_bits_equal=bool(torch.equal(got["T"][1], got["R"][1])),
                       o_max_diff=float((got["T"][0].float() - got["R"][0].float()).abs().max()),
                       state_max_diff=float((got["T"][1] - got["R"][1]).abs().max()))
        rows.append(row)
        print(json.dumps(row), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(f"{out_dir}/rule_rows_bench.json", "w"), indent=1)
    with open(f"{out_dir}/rule_rows_bench.md", "w") as f:
        f.write("| T | µs at T rows | R | µs at R rows (padded) | o bits equal | state bits equal |\n| ---: | ---: | ---: | ---: | --- | --- |\n")
        for r in rows:
            f.write(f"| {r['T']} | {' / '.join(f'{x:.1f}' for x in r['us_T'])} | {r['R']} | "
                    f"{' / '.join(f'{x:.1f}' for x in r.get('us_R', [])) or '(whole chunks)'} | {r.get('o_bits_equal', '')} | "
                    f"{r.get('state_bits_equal', '')} |\n")


if __name__ == "__main__":
    main(sys.argv[1], *([tuple(int(t) for t in sys.argv[2].split(","))] if len(sys.argv) > 2 else []))
