"""`python -m compare prefill`: where the megakernel tier's fast prefill spends its time (the
official pp figures come from `compare bench`): ppN on a fresh state per repetition, graph
replay, CUDA events, median / min / max; then one replay under torch.profiler with the kernels
grouped into GEMM (cuBLAS), delta rule (fla's or FlashQLA's: the tier's `prefill_delta_rule`,
named in the table), attention (SDPA), ours (csrc/prefill.cu) and other, each kernel listed below the
table with its launches and µs; and the rest of the
time, not in kernels: the gaps between them and the host's work before the first (the checks,
bind, the graph's launch) and after the last (the logits' copy). Against the floors, both measured in the
same run (compare/timing.py): matrix FLOPs / the dense bf16 rate, weight bytes / the copy bandwidth.

    python -m compare prefill [--pp 520,4096,32768] [--depth 16384] [--reference-pp 520] [--out DIR]
    python -m compare prefill --rerender DIR/prefill_bench.json   (derived columns only, no GPU)

`--depth D` adds rows "ppN @ dD": the prefill of N tokens on top of a D-token context (prefilled
first in 4,096-token chunks, untimed, on every repetition's fresh state): a turn that continues a
conversation, whose time is the time to first token, and where its kernel time goes.
"""

from __future__ import annotations

import json
import os
import statistics

import torch

from megakernel.prefill_delta_rule import DELTA_RULES
from reference import ModelConfig, perturb_norms, random_weights

from .common import UsageError, environment
from .tiers import tier_class, unavailable_reason
from .timing import (Clock, copy_bandwidth, dense_bf16_flops, matrix_flops, prefill_chunked, random_ids, time_pp,
                     weight_bytes_per_step)

# a kernel's group: the first whose keys its name holds (lower case), in this order: attention before GEMM (cuDNN's
# names hold "sm90_"), ours before GEMM (gemv_add_row holds "gemv") and before the delta rule ("attn_merge")
CATEGORIES = (("attention (SDPA)", ("sdpa", "flash", "fmha", "attention")),
              ("ours (prefill.cu)", ("mkp", "mk_decode", "add_rms_norm", "dn_prep", "dn_out_norm", "silu_mul",
                                     "attn_prep", "kv_prefix", "attn_gate", "attn_merge", "lm_head_kernel")),
              ("GEMM (cuBLAS)", ("gemm", "nvjet", "xmma", "cutlass", "sm90_", "gemv")),
              ("delta rule", ("chunk", "solve_tril", "recompute", "kkt", "cumsum", "fwd_h", "fwd_o", "merge", "tilelang")))
DELTA_RULE_OLD = "delta rule (fla)"  # the category's name in files written before FlashQLA was a choice


def pp_row(tier, T: int, reps: int, seed: int = 0, depth: int = 0):
    """ppT (@ d`depth`): `reps` prefills of one random T-token prompt, each on a fresh state
    (holding a random `depth`-token context first, untimed), after two untimed ones (a shape's
    graph is captured at its second prefill) → tok/s median, min, max and ms."""
    ids, clock = random_ids(tier.config, T, seed, tier.device), Clock(tier.device)
    context = random_ids(tier.config, depth, seed + 1, tier.device) if depth else None
    times = [time_pp(tier, ids, clock, context)[0] for _ in range(reps + 2)][2:]
    tps = [T / t for t in times]
    return {"T": T, "depth": depth, "tok_s_median": statistics.median(tps), "tok_s_min": min(tps), "tok_s_max": max(tps),
            "ms_median": 1000.0 * statistics.median(times), "reps": reps}


def category(kernel: str) -> str:
    """The group (CATEGORIES) a kernel's name puts it in, "other" where none."""
    name = kernel.lower()
    return next((c for c, keys in CATEGORIES if any(k in name for k in keys)), "other")


def breakdown(tier, T: int, seed: int = 0, depth: int = 0):
    """GPU time per kernel category in one prefill of T tokens (on top of a `depth`-token context,
    prefilled first) as the bench runs it (µs), the number of kernels, the four that take most ("top") and
    every kernel by name ("all": [name, launches, µs], most µs first)."""
    from torch.profiler import ProfilerActivity, profile

    ids = random_ids(tier.config, T, seed, tier.device)
    context = random_ids(tier.config, depth, seed + 1, tier.device) if depth else None

    def fresh():
        state = tier.new_state(max_seq_len=depth + T)
        if depth:
            prefill_chunked(tier, context, state)
        return state

    for _ in range(2):  # make sure the graph exists (captured at a shape's second prefill)
        tier.prefill(ids, fresh())
    state = fresh()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        tier.prefill(ids, state)
        torch.cuda.synchronize()
    sums, counts, names = {}, {}, {}
    for evt in prof.events():
        if evt.device_type != torch.autograd.DeviceType.CUDA or "memcpy" in evt.name.lower() or "memset" in evt.name.lower():
            continue
        cat, us = category(evt.name), evt.time_range.elapsed_us()
        sums[cat] = sums.get(cat, 0.0) + us
        counts[cat] = counts.get(cat, 0) + 1
        launches_us = names.setdefault(cat, {}).setdefault(evt.name[:90], [0, 0.0])
        launches_us[0] += 1
        launches_us[1] += us
    every = {c: sorted(([k, n, us] for k, (n, us) in got.items()), key=lambda r: -r[2]) for c, got in names.items()}
    return {c: {"us": sums[c], "kernels": counts[c], "top": [[k, us] for k, _, us in every[c][:4]], "all": every[c]}
            for c in sums}


def derive(row: dict, config, rates: dict) -> dict:
    """Add the figures computed from a measured row and the run's measured rates: achieved
    TFLOP/s, the FLOP floor and the weight-bytes floor."""
    flops = matrix_flops(config, row["T"], row.get("depth", 0))
    row.update(tflops=flops / (row["ms_median"] / 1000.0) / 1e12,
               flop_floor_ms=1000.0 * flops / rates["dense_bf16_flops"],
               bytes_floor_ms=1000.0 * weight_bytes_per_step(config) / rates["copy_bandwidth_Bps"])
    return row


def gemm_rows(timings: dict) -> list[dict]:
    """The prefill's GEMM shapes as timed (megakernel/prefill_gemm.py PrefillGemms.timings) as JSON rows (a
    candidate that would not run: null)."""
    return [dict(t, candidates_us=[None if u == float("inf") else u for u in t.get("candidates_us", [])])
            for t in timings.values()]


def gemm_table(gemms: list[dict]) -> list[str]:
    """Markdown lines: each GEMM shape the prefill timed, torch's call against cuBLASLt's best candidate (µs a call,
    each way's faster pass) and the way taken; none where no shape was timed."""
    if not gemms:
        return []
    us = lambda v: "–" if v is None else f"{v:,.2f}"  # noqa: E731
    lines = ["", "the GEMM shapes the prefill timed (megakernel/prefill_gemm.py; shapes of fewer rows than its "
                 "TUNE_MIN_ROWS take torch's call untimed):", "",
             "| M x N x K | beta | torch µs | cuBLASLt's best µs | taken |", "| --- | ---: | ---: | ---: | --- |"]
    for g in gemms:
        times = [u for u in g.get("candidates_us", []) if u is not None]
        taken = "torch's call" if g.get("chosen") is None else f"cuBLASLt candidate {g['chosen']}"
        taken += f" ({g['why']})" if g.get("why") else ""
        lines.append(f"| {g['M']:,} x {g['N']:,} x {g['K']:,} | {g['beta']} | "
                     f"{us(min(g['torch_us']) if g.get('torch_us') else None)} | {us(min(times) if times else None)} | {taken} |")
    return lines


def render(rows, rates: dict, gemms: list[dict] = ()) -> str:
    rule = rows[0].get("delta_rule", "fla") if rows else "fla"
    lines = [f"floors from this run's rates: dense bf16 {rates['dense_bf16_flops'] / 1e12:.0f} TFLOP/s, copy "
             f"{rates['copy_bandwidth_Bps'] / 1e12:.2f} TB/s; the delta rule: {rule}", "",
             "| prompt | tok/s (median) | min–max | ms | TFLOP/s | matrix floor ms | bytes floor ms | GEMM µs | delta rule µs | attention µs | ours µs | other µs | kernels | not in kernels µs |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        b = {"delta rule" if c == DELTA_RULE_OLD else c: v for c, v in r["breakdown"].items()}
        us = lambda c: f"{b.get(c, {}).get('us', 0.0):,.0f}"  # noqa: E731
        n = sum(v["kernels"] for v in b.values())
        name = f"pp{r['T']}" + (f" @ d{r['depth']}" if r.get("depth") else "")
        lines.append(f"| {name} | {r['tok_s_median']:,.0f} | {r['tok_s_min']:,.0f}–{r['tok_s_max']:,.0f} | "
                     f"{r['ms_median']:.3f} | {r['tflops']:.0f} | {r['flop_floor_ms']:.3f} | {r['bytes_floor_ms']:.3f} | {us('GEMM (cuBLAS)')} | "
                     f"{us('delta rule')} | {us('attention (SDPA)')} | {us('ours (prefill.cu)')} | {us('other')} | {n} | "
                     f"{outside_us(r):,.0f} |")
    lines += ["", "not in kernels: the median time less the profiled kernels' own times: the gaps between kernels and the "
                  "host's work before the first and after the last (the profiler widens the gaps, so its span is not used)"]
    for r in rows:
        lines += kernel_table(r)
    lines += gemm_table(list(gemms))
    return "\n".join(lines) + "\n"


def kernel_table(row: dict) -> list[str]:
    """Markdown lines: every kernel of the row's profiled prefill, most µs first (none for rows written before
    the breakdown kept them all)."""
    every = [(name, c, n, us) for c, v in row["breakdown"].items() for name, n, us in v.get("all", [])]
    if not every:
        return []
    name = f"pp{row['T']}" + (f" @ d{row['depth']}" if row.get("depth") else "")
    lines = ["", f"every kernel of {name} (one profiled prefill):", "",
             "| kernel | group | launches | µs | µs a launch |", "| --- | --- | ---: | ---: | ---: |"]
    for kernel, c, n, us in sorted(every, key=lambda e: -e[3]):
        lines.append(f"| `{kernel.replace('|', '/')}` | {c} | {n} | {us:,.1f} | {us / n:,.2f} |")
    return lines


def outside_us(row: dict) -> float:
    """The row's median time less the sum of its profiled kernels' times (µs): launch gaps and host work."""
    return 1000.0 * row["ms_median"] - sum(v["us"] for v in row["breakdown"].values())


def rerender(path: str) -> None:
    """Recompute the derived columns of a prefill_bench.json (and its .md beside it) from its
    measured times and the rates measured in the same run (stored in it)."""
    config = ModelConfig.qwen3_5_0_8b()
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"--rerender {path}: cannot read it as JSON ({e}); expected a prefill_bench.json") from None
    if not isinstance(doc, dict) or "fast" not in doc:
        raise UsageError(f"{path}: no \"fast\" rows in it; expected a prefill_bench.json that `compare prefill` wrote")
    rates = doc.get("rates")
    if not rates:
        raise UsageError(f"{path}: no measured rates in it (written by an older version); expected a \"rates\" entry")
    doc["fast"] = [derive(r, config, rates) for r in doc["fast"]]
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(os.path.dirname(path), "prefill_bench.md"), "w") as f:
        f.write(render(doc["fast"], rates, doc.get("gemms", [])))


def lengths(text: str, what: str, allow_zero: bool = False) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what} {text!r}: expected comma-separated whole numbers, e.g. 520,4096") from None
    if any(v < (0 if allow_zero else 1) for v in values):
        raise UsageError(f"{what} {text!r}: lengths must be {'0 or more' if allow_zero else 'at least 1'}")
    return [v for v in values if v > 0]


def add_arguments(p):
    p.add_argument("--pp", default="1,63,520,4096,32768", help="prompt lengths (default: %(default)s)")
    p.add_argument("--depth", default="0",
                   help="contexts for extra rows `ppN @ dD`: the prompt on top of a D-token context, comma-separated "
                        "(default: %(default)s: none)")
    p.add_argument("--reps", type=int, default=5, help="repetitions per length, median (default: %(default)s)")
    p.add_argument("--reference-pp", default="520", help="lengths also timed with prefill='reference' (0: none)")
    p.add_argument("--delta-rule", default=None,
                   help="the chunked delta rule the prefill runs (megakernel/prefill_delta_rule.py: "
                        "fla or flash-qla; default: the tier's own choice)")
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for prefill_bench.json / .md")
    p.add_argument("--rerender", metavar="JSON", help="only recompute the derived columns of a written prefill_bench.json")


def run(args) -> int:
    pp, reference_pp = lengths(args.pp, "--pp"), lengths(args.reference_pp, "--reference-pp", allow_zero=True)
    depths = lengths(args.depth, "--depth", allow_zero=True)
    limit = ModelConfig.qwen3_5_0_8b().max_position_embeddings
    too_long = [(d, T) for d in depths for T in pp if d + T > limit]
    if too_long:
        d, T = too_long[0]
        raise UsageError(f"--depth {d} with --pp {T} needs {d + T} positions; the model has {limit}")
    if args.delta_rule is not None and args.delta_rule not in DELTA_RULES:
        raise UsageError(f"--delta-rule {args.delta_rule!r}: expected one of {', '.join(DELTA_RULES)}")
    if args.rerender:
        rerender(args.rerender)
        return 0
    if args.reps < 1:
        raise UsageError(f"--reps {args.reps}: expected at least 1")
    reason = unavailable_reason("megakernel", "cuda")
    if reason is not None:
        raise UsageError(f"compare prefill times the megakernel tier's prefill, which cannot run here: {reason}")
    megakernel_tier = tier_class("megakernel")
    config = ModelConfig.qwen3_5_0_8b()
    weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
    tier = megakernel_tier(config, weights, device="cuda")
    if tier.fast_prefill is None:
        raise UsageError(f"no fast prefill here: {tier.prefill_note}")
    if args.delta_rule is not None:
        try:
            tier.prefill_delta_rule = args.delta_rule
        except ValueError as e:
            raise UsageError(f"--delta-rule {args.delta_rule}: {e}") from None
    rates = {"dense_bf16_flops": dense_bf16_flops("cuda"), "copy_bandwidth_Bps": copy_bandwidth("cuda")}
    rows = []
    for depth, T in [(0, T) for T in pp] + [(d, T) for d in depths for T in pp]:
        r = pp_row(tier, T, args.reps if T <= 4096 else 3, depth=depth)
        r["breakdown"] = breakdown(tier, T, depth=depth)
        r["delta_rule"] = tier.prefill_delta_rule
        rows.append(derive(r, config, rates))
        print(f"pp{T}" + (f" @ d{depth}" if depth else "") + f": {r['tok_s_median']:,.0f} tok/s ({r['ms_median']:.3f} ms; {r['tflops']:.0f} TFLOP/s; "
              f"floor {r['flop_floor_ms']:.3f} ms) " + ", ".join(f"{c} {v['us']:.0f} µs/{v['kernels']}"
                                                            for c, v in r["breakdown"].items())
              + f"; not in kernels {outside_us(r):.0f} µs",
              flush=True)
    gemms = gemm_rows(tier.fast_prefill.gemms.timings)
    ref_rows = []
    if reference_pp:
        del tier  # free its graphs and packed weights before the second copy
        slow = megakernel_tier(config, weights, device="cuda", prefill="reference")
        for T in reference_pp:
            r = pp_row(slow, T, 2)
            ref_rows.append(r)
            print(f"pp{T} (prefill='reference'): {r['tok_s_median']:,.0f} tok/s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "prefill_bench.json"), "w") as f:
        json.dump({"environment": environment(), "rates": rates, "fast": rows, "reference": ref_rows, "gemms": gemms},
                  f, indent=1)
    table = render(rows, rates, gemms)
    with open(os.path.join(args.out, "prefill_bench.md"), "w") as f:
        f.write(table)
    print(table)
    return 0
