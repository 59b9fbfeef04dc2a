"""`python -m compare diff`: every tier, same weights, same prompt, same teacher-forced
decode tokens; per traced tensor the relative error against the fp32 reference.

Rows: embed, layers 0..N-1 (with their type), norm, logits. Columns: tiers. Each cell is
the worst relative error over the prefill and every decode step. transformers' bf16 run
("hf") is the yardstick a bf16 tier is held to (reference/tolerances.py); where it ran, a
second table gives every other tier's error over hf's, part by part. Exit status 1 when a
tier is out of tolerance.

`--batch B` checks a batch instead: B prompts of --prompt-len, +3, +6, ... tokens, each row
prefilled on its own (`prefill(row=r)`) on a tier with per-row positions (on one without,
every row gets --prompt-len tokens and the batch is prefilled at once), then the decode
steps together, teacher-forced with each row's fp32-reference tokens. Per tier and row:
the max |Δlogit| between the row in the batch and the same sequence run alone on the same
tier, how many greedy tokens agree, and the per-layer error of the row against the fp32
reference run of that sequence. A tier whose max_batch is below B is skipped.
"""

from __future__ import annotations

import json
import math
import os
import sys

import torch

from reference import ReferenceTier
from reference.tolerances import bound, rel_err, within, within_bound

from . import tables
from .common import UsageError, add_model_arguments, environment, load_model, pick_device, select_tiers
from .tiers import load_tier


def add_arguments(p):
    add_model_arguments(p)
    p.add_argument("--prompt-len", type=int, default=16, help="prompt tokens (default %(default)s)")
    p.add_argument("--decode-steps", type=int, default=4, help="teacher-forced decode steps (default %(default)s)")
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16", help="dtype of the tiers under test")
    p.add_argument("--json", metavar="PATH", help="write the table and every per-step error as JSON")
    p.add_argument("--png", metavar="PATH", help="write a heatmap (layer × tier) of the errors")
    p.add_argument("--dump", metavar="DIR", help="save every traced tensor, to diff another run against later")
    p.add_argument("--against", metavar="DIR", help="also diff this run's traces against a --dump folder")
    p.add_argument("--batch", type=int, default=None, metavar="B",
                   help=f"check a batch of B sequences (prompts of --prompt-len, +{BATCH_PROMPT_STEP}, "
                        f"+{2 * BATCH_PROMPT_STEP}, ... tokens, each row prefilled alone where the tier has per-row "
                        "positions) against each sequence run alone on the same tier: max |Δlogit|, greedy "
                        "agreement, and per row the per-layer error vs the fp32 reference")


BATCH_PROMPT_STEP = 3  # --batch: row r's prompt is --prompt-len + 3 r tokens


def part_names(config):
    return ["embed"] + [f"layers.{i}" for i in range(config.num_layers)] + ["norm", "logits"]


def part_label(config, name):
    if name.startswith("layers."):
        i = int(name.split(".")[1])
        return f"{name} ({'DeltaNet' if config.layer_types[i] == 'linear_attention' else 'attention'})"
    return name


def run_tier(tier, prompt, decode_tokens, max_seq_len):
    """→ list of traces: [prefill, decode 1, ...], each {name: fp32 CPU tensor}."""
    state = tier.new_state(prompt.shape[0], max_seq_len)
    traces = [{}]
    tier.prefill(prompt, state, traces[0])
    for tok in decode_tokens:
        traces.append({})
        tier.decode(tok, state, traces[-1])
    return traces


def errors_against(traces, oracle, names):
    """{name: [rel err per call]} of one tier's traces against the oracle's."""
    return {n: [rel_err(t[n], o[n]) if n in t else math.inf for t, o in zip(traces, oracle)] for n in names}


def oracle_run(oracle_tier, prompt, steps, max_seq):
    """The fp32 reference's run of one sequence: its prefill of `prompt` [1, T], then `steps`
    decode steps each fed its own greedy token → (traces per call, the tokens it was fed): the
    tokens every tier is then teacher-forced with."""
    state = oracle_tier.new_state(1, max_seq)
    traces, tokens = [{}], []
    logits = oracle_tier.prefill(prompt, state, traces[0])
    for _ in range(steps):
        tokens.append(logits.argmax(-1).cpu())
        traces.append({})
        logits = oracle_tier.decode(tokens[-1], state, traces[-1])
    return traces, tokens


def top1(traces, oracle):
    hits = [(t["logits"].argmax(-1) == o["logits"].argmax(-1)).float().mean().item() for t, o in zip(traces, oracle)]
    return sum(hits) / len(hits)


def run(args) -> int:
    if args.prompt_len < 1:
        raise UsageError(f"--prompt-len must be at least 1, got {args.prompt_len}")
    if args.decode_steps < 0:
        raise UsageError(f"--decode-steps must be 0 or more, got {args.decode_steps}")
    if args.against and not os.path.isdir(args.against):
        raise UsageError(f"--against {args.against}: no such folder (expected one written by --dump)")
    if args.batch is not None:
        if args.batch < 1:
            raise UsageError(f"--batch {args.batch}: expected a batch size of at least 1")
        if args.dump or args.against:
            raise UsageError("--batch does not write or read dumps; expected --batch without --dump/--against")
        return run_batch(args)
    device = pick_device(args.device)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    select_tiers(args.tiers, device)  # (an unknown tier, or one that cannot run here: refused before the weights are made)
    config, weights = load_model(args)
    tiers, skipped = select_tiers(args.tiers, device, config=config)
    max_seq = args.prompt_len + args.decode_steps + 1
    if max_seq > config.max_position_embeddings:
        raise UsageError(f"--prompt-len + --decode-steps = {max_seq - 1} exceeds the model's "
                         f"{config.max_position_embeddings} positions")
    gen = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(0, config.vocab_size, (1, args.prompt_len), generator=gen)

    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    say(f"diff: {config.name} ({args.weights} weights) on {device}, prompt {args.prompt_len} + {args.decode_steps} decode "
        f"steps, tiers {tiers}")
    say("  fp32 reference (oracle) ...")
    oracle_tier = ReferenceTier(config, weights, device=device, dtype=torch.float32)
    # teacher forcing: every tier is fed the oracle's greedy tokens
    oracle, decode_tokens = oracle_run(oracle_tier, prompt, args.decode_steps, max_seq)
    del oracle_tier

    names = part_names(config)
    results, traces_by_tier = {}, {}
    for name in tiers:
        say(f"  {name} ({args.dtype}) ...")
        tier = load_tier(name, config, weights, device=device, dtype=dtype)
        traces = run_tier(tier, prompt, decode_tokens, max_seq)
        del tier
        traces_by_tier[name] = traces
        errs = errors_against(traces, oracle, names)
        results[name] = {"errors": errs, "worst": {n: max(e) for n, e in errs.items()}, "top1": top1(traces, oracle)}
        if args.decode_steps:  # the decode steps alone: a tier's decode kernels, apart from its prefill's
            results[name]["worst_decode"] = {n: max(e[1:]) for n, e in errs.items()}
    yard = results.get("hf", {}).get("worst") if dtype == torch.bfloat16 else None
    for name, r in results.items():
        ys = yard if (yard is not None and name != "hf") else None
        r["bounds"] = {n: bound(dtype, ys[n] if ys else None) for n in names}
        r["ok"] = all(within(r["worst"][n], dtype, ys[n] if ys else None) for n in names)

    against = diff_against_dump(args.against, traces_by_tier, names) if args.against else None
    ratios = ratios_to_hf(results, names) if yard is not None else {}
    ratios_decode = ratios_to_hf(results, names, "worst_decode") if yard is not None and args.decode_steps else {}
    print(format_table(config, names, results, skipped, dtype))
    if ratios:
        print("\n" + format_ratios(config, names, ratios))
    if ratios_decode:
        print("\n" + format_ratios(config, names, ratios_decode, over=f"the {args.decode_steps} decode steps alone"))
    if against:
        print(format_against(config, names, against, args.against))
    report = {
        "environment": environment(), "config": config.name, "device": str(device), "dtype": args.dtype,
        "weights": args.weights, "prompt_len": args.prompt_len, "decode_steps": args.decode_steps, "seed": args.seed,
        "skipped": skipped, "tiers": results, "against": against, "ratio_to_hf": ratios, "ratio_to_hf_decode": ratios_decode,
    }
    if args.json:
        _write(args.json, json.dumps(report, indent=1))
    if args.png:
        plot_heatmap(args.png, config, names, results)
    if args.dump:
        dump(args.dump, traces_by_tier, oracle, report)
    failed = [n for n, r in results.items() if not r["ok"]]
    if failed:
        print(f"OUT OF TOLERANCE: {', '.join(failed)}")
        return 1
    return 0


def format_table(config, names, results, skipped, dtype, over="prefill + decode steps") -> str:
    tiers = list(results)
    width = max(len(part_label(config, n)) for n in names) + 2
    head = "part".ljust(width) + "".join(t.rjust(13) for t in tiers)
    lines = [f"relative error vs the fp32 reference (worst over {over}; tiers in "
             f"{'bf16' if dtype == torch.bfloat16 else 'fp32'}; '!' = out of tolerance, '*' = worst layer)",
             head, "-" * len(head)]
    worst_part = {t: max(names, key=lambda n: results[t]["worst"][n]) for t in tiers}
    for n in names:
        cells = []
        for t in tiers:
            e, b = results[t]["worst"][n], results[t]["bounds"][n]
            mark = "!" if not within_bound(e, b) else ("*" if worst_part[t] == n else " ")
            cells.append(f"{e:11.2e}{mark} ")
        lines.append(part_label(config, n).ljust(width) + "".join(cells))
    lines.append("-" * len(head))
    lines.append("top-1 agreement".ljust(width) + "".join(f"{results[t]['top1']:12.0%} " for t in tiers))
    lines.append("within tolerance".ljust(width) + "".join(f"{'yes' if results[t]['ok'] else 'NO':>12} " for t in tiers))
    for t in tiers:
        lines.append(f"worst part of {t}: {part_label(config, worst_part[t])} "
                     f"({results[t]['worst'][worst_part[t]]:.2e}, bound {results[t]['bounds'][worst_part[t]]:.2e})")
    for t, why in skipped.items():
        lines.append(f"skipped {t}: {why}")
    return "\n".join(lines)


def ratios_to_hf(results, names, key="worst") -> dict[str, dict[str, float | None]]:
    """Per bf16 tier but hf: each part's worst error over transformers' bf16 worst error (hf's)
    on the same part (None where hf's is 0: a part both compute exactly). key: "worst" (over the
    prefill and the decode steps) or "worst_decode" (the decode steps alone)."""
    hf = results["hf"][key]
    return {t: {n: (r[key][n] / hf[n] if hf[n] > 0 else None) for n in names}
            for t, r in results.items() if t != "hf"}


def format_ratios(config, names, ratios, over="the prefill and the decode steps") -> str:
    """The ratios as a table (rows: parts, columns: tiers), each tier's worst part last."""
    tiers = list(ratios)
    width = max(len(part_label(config, n)) for n in names) + 2
    head = "part".ljust(width) + "".join(t.rjust(13) for t in tiers)
    lines = [f"error ÷ transformers' bf16 error (hf) on the same part, worst over {over} (below 1.00x: closer to "
             "fp32 than transformers; '—': both exact)",
             head, "-" * len(head)]
    for n in names:
        lines.append(part_label(config, n).ljust(width)
                     + "".join(("—" if ratios[t][n] is None else f"{ratios[t][n]:.2f}x").rjust(13) for t in tiers))
    lines.append("-" * len(head))
    for t in tiers:
        known = {n: v for n, v in ratios[t].items() if v is not None}
        if known:
            n = max(known, key=known.get)
            lines.append(f"worst ratio of {t}: {known[n]:.2f}x ({part_label(config, n)})")
    return "\n".join(lines)


# ---- --batch: a batch against the same sequences run alone -----------------------------

def run_batch(args) -> int:
    B = args.batch
    device = pick_device(args.device)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    select_tiers(args.tiers, device)  # (an unknown tier, or one that cannot run here: refused before the weights are made)
    config, weights = load_model(args)
    tiers, skipped = select_tiers(args.tiers, device, config=config)
    lengths = [args.prompt_len + BATCH_PROMPT_STEP * r for r in range(B)]
    max_seq = max(lengths) + args.decode_steps + 1
    if max_seq > config.max_position_embeddings:
        raise UsageError(f"--batch {B}: the longest prompt ({max(lengths)} tokens) + --decode-steps = {max_seq - 1} "
                         f"exceeds the model's {config.max_position_embeddings} positions")
    gen = torch.Generator().manual_seed(args.seed)
    prompts = [torch.randint(0, config.vocab_size, (1, n), generator=gen) for n in lengths]
    equal = [p[:, :args.prompt_len] for p in prompts]  # for a tier that keeps one position for the batch

    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    say(f"diff --batch {B}: {config.name} on {device}, prompts of {lengths} tokens + {args.decode_steps} decode "
        f"steps, tiers {tiers}")
    oracle_tier = ReferenceTier(config, weights, device=device, dtype=torch.float32)
    oracles = {}

    def oracle(prompt):
        """The fp32 reference run of one sequence alone: (traces, teacher-forced tokens)."""
        key = tuple(prompt[0].tolist())
        if key not in oracles:
            oracles[key] = oracle_run(oracle_tier, prompt, args.decode_steps, max_seq)
        return oracles[key]

    names = part_names(config)
    results, notes = {}, []
    for name in tiers:
        say(f"  {name} ({args.dtype}) ...")
        tier = load_tier(name, config, weights, device=device, dtype=dtype)
        if tier.max_batch is not None and B > tier.max_batch:
            skipped[name] = f"--batch {B} is above its max_batch {tier.max_batch} (it decodes 1 to {tier.max_batch} rows)"
            del tier
            continue
        per_row = tier.per_row_positions
        rows_prompts = prompts if per_row else equal
        if not per_row and B > 1:
            notes.append(f"{name}: one position for the whole batch (per_row_positions False): its rows were "
                         f"prefilled together, each with {args.prompt_len} tokens")
        rows_oracle = [oracle(p) for p in rows_prompts]
        alone = [run_tier(tier, p, toks, max_seq) for p, (_, toks) in zip(rows_prompts, rows_oracle)]
        batch = run_batch_rows(tier, rows_prompts, [toks for _, toks in rows_oracle], max_seq, per_row)
        del tier
        results[name] = batch_result(rows_prompts, batch, alone, rows_oracle, names, per_row)

    yard_tier = results.get("hf") if dtype == torch.bfloat16 else None
    for name, r in results.items():
        same_prompts = yard_tier is not None and name != "hf" and yard_tier["per_row_positions"] == r["per_row_positions"]
        ys = yard_tier["worst"] if same_prompts else None
        r["bounds"] = {n: bound(dtype, ys[n] if ys else None) for n in names}
        r["ok"] = all(within(r["worst"][n], dtype, ys[n] if ys else None) for n in names)
        for row in r["rows"]:  # the batch is held to the tier's own error against fp32 (alone)
            row["vs_alone_bound"] = bound(dtype, row["alone_logits_vs_fp32"])
            row["vs_alone_ok"] = within(row["logits_rel_err_vs_alone"], dtype, row["alone_logits_vs_fp32"])
        r["batch_ok"] = all(row["vs_alone_ok"] for row in r["rows"])

    print(format_batch_table(lengths, args.decode_steps, results, skipped, notes))
    if results:
        print()
        print(format_table(config, names, results, {}, dtype, over=f"the {B} rows of the batch, prefill + decode steps"))
    report = {
        "environment": environment(), "config": config.name, "device": str(device), "dtype": args.dtype,
        "batch": B, "prompt_len": args.prompt_len, "prompt_lens": lengths, "decode_steps": args.decode_steps,
        "seed": args.seed, "skipped": skipped, "notes": notes, "tiers": results,
    }
    if args.json:
        _write(args.json, json.dumps(report, indent=1))
    if args.png and results:
        plot_heatmap(args.png, config, names, results)
    failed = [n for n, r in results.items() if not (r["ok"] and r["batch_ok"])]
    if failed:
        print(f"OUT OF TOLERANCE: {', '.join(failed)}")
        return 1
    return 0


def run_batch_rows(tier, prompts, tokens, max_seq, per_row):
    """One batch state of len(prompts) rows: each row prefilled alone (`row=r`) where the tier
    has per-row positions, else all at once (equal lengths), then the decode steps together
    (row r fed tokens[r][i] at step i) → per row its traces [prefill, decode 1, ...]."""
    B = len(prompts)
    state = tier.new_state(B, max_seq)
    rows = [[] for _ in range(B)]
    if per_row:
        for r, p in enumerate(prompts):
            trace = {}
            tier.prefill(p, state, trace, row=r)
            rows[r].append(trace)
    else:
        trace = {}
        tier.prefill(torch.cat(prompts), state, trace)
        for r in range(B):
            rows[r].append({n: v[r:r + 1] for n, v in trace.items()})
    for i in range(len(tokens[0])):
        trace = {}
        tier.decode(torch.cat([t[i] for t in tokens]), state, trace)
        for r in range(B):
            rows[r].append({n: v[r:r + 1] for n, v in trace.items()})
    return rows


def near_tie_flip(batch_logits, alone_logits, diff: float) -> bool:
    """The batch's greedy token is not the alone run's, but the alone run's logits of the two are
    within twice the largest batch-vs-alone difference (a near tie the bf16 noise may flip)."""
    got, want = batch_logits.flatten().double(), alone_logits.flatten().double()
    i, j = int(got.argmax()), int(want.argmax())
    return i != j and math.isfinite(diff) and float(want[j] - want[i]) <= 2 * diff + 1e-6


def batch_result(prompts, batch, alone, oracles, names, per_row) -> dict:
    """Per row: the batch against the row run alone (max |Δlogit|, greedy agreement, relative
    error of the logits) and against the fp32 reference (per part, worst over the calls)."""
    rows, worst = [], {n: 0.0 for n in names}
    for p, b, a, (o, _) in zip(prompts, batch, alone, oracles):
        diffs = [(x["logits"] - y["logits"]).abs().max().item() for x, y in zip(b, a)]
        agree = sum(int(torch.equal(x["logits"].argmax(-1), y["logits"].argmax(-1))) for x, y in zip(b, a))
        ties = sum(near_tie_flip(x["logits"], y["logits"], d) for x, y, d in zip(b, a, diffs))
        errs = errors_against(b, o, names)
        row_worst = {n: max(e) for n, e in errs.items()}
        for n in names:
            worst[n] = max(worst[n], row_worst[n])
        rows.append({
            "prompt_len": p.shape[1],
            "max_abs_logit_diff": max(d if math.isfinite(d) else math.inf for d in diffs),
            "greedy_agree": agree, "near_tie_flips": ties, "calls": len(b),
            "logits_rel_err_vs_alone": max(rel_err(x["logits"], y["logits"]) for x, y in zip(b, a)),
            "alone_logits_vs_fp32": max(rel_err(y["logits"], z["logits"]) for y, z in zip(a, o)),
            "worst_vs_fp32": max(row_worst.values()), "worst": row_worst, "errors": errs,
        })
    return {"per_row_positions": per_row, "rows": rows, "worst": worst,
            "top1": top1([x for b in batch for x in b], [z for o, _ in oracles for z in o])}


def format_batch_table(lengths, decode_steps, results, skipped, notes) -> str:
    """Rows × tiers: per cell the max |Δlogit| batch vs alone, greedy tokens agreeing, and the
    row's worst relative error vs the fp32 reference. `lengths`: the rows' prompt lengths
    (a tier without per-row positions ran --prompt-len for every row: a note says so)."""
    tiers, B = list(results), len(lengths)
    lines = [f"batch of {B} vs each row run alone on the same tier (prefill + {decode_steps} teacher-forced decode "
             "steps); cell: max |Δlogit| vs alone, greedy tokens agreeing, worst relative error vs fp32 over the "
             "parts ('!' = beyond the tier's bound; '~' = every greedy flip at a near tie: the alone run's two "
             "logits within twice the batch-vs-alone difference)"]
    if tiers:
        rows = []
        for r in range(B):
            cells = [str(r), str(lengths[r])]
            for t in tiers:
                row = results[t]["rows"][r]
                agree = f"{row['greedy_agree']}/{row['calls']}"
                diff_mark = "" if row["vs_alone_ok"] else "!"
                flips = row["calls"] - row["greedy_agree"]
                agree_mark = "" if flips == 0 else "~" if row["near_tie_flips"] == flips else "!"
                fp32_mark = "" if all(within_bound(row["worst"][n], results[t]["bounds"][n]) for n in row["worst"]) else "!"
                cells.append(f"{row['max_abs_logit_diff']:.2e}{diff_mark}  {agree}{agree_mark}  "
                             f"{row['worst_vs_fp32']:.2e}{fp32_mark}")
            rows.append(cells)
        lines.append(tables.markdown(["row", "prompt"] + tiers, rows, right={1}))
    lines += [f"- {n}" for n in notes]
    lines += [f"skipped {t}: {why}" for t, why in skipped.items()]
    return "\n".join(lines)


# ---- dumps: diff two runs (two commits, two machines) ----------------------------------

def dump(folder, traces_by_tier, oracle, report):
    os.makedirs(folder, exist_ok=True)
    torch.save({"oracle": oracle, **traces_by_tier}, os.path.join(folder, "traces.pt"))
    _write(os.path.join(folder, "report.json"), json.dumps(report, indent=1))


def diff_against_dump(folder, traces_by_tier, names):
    path = os.path.join(folder, "traces.pt")
    if not os.path.isfile(path):
        raise UsageError(f"--against {folder}: no traces.pt there (expected a folder written by --dump)")
    old = torch.load(path, weights_only=True)
    out = {}
    for tier, traces in traces_by_tier.items():
        if tier not in old:
            continue
        if len(old[tier]) != len(traces):
            raise UsageError(f"--against {folder}: it holds {len(old[tier])} calls of {tier}, this run "
                             f"{len(traces)}; use the same --prompt-len and --decode-steps")
        out[tier] = {n: max(e) for n, e in errors_against(traces, old[tier], names).items()}
    if not out:
        raise UsageError(f"--against {folder}: it holds none of the tiers run now ({list(traces_by_tier)})")
    return out


def format_against(config, names, against, folder) -> str:
    tiers = list(against)
    width = max(len(part_label(config, n)) for n in names) + 2
    lines = [f"relative difference vs the dump in {folder}", "part".ljust(width) + "".join(t.rjust(13) for t in tiers)]
    for n in names:
        lines.append(part_label(config, n).ljust(width) + "".join(f"{against[t][n]:12.2e} " for t in tiers))
    return "\n".join(lines)


# ---- the heatmap ----------------------------------------------------------------------

def plot_heatmap(path, config, names, results):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm

    tiers = list(results)
    data = np.array([[results[t]["worst"][n] for t in tiers] for n in names], dtype=float)
    shown = np.where(np.isfinite(data), np.maximum(data, 1e-9), np.nan)
    fig, ax = plt.subplots(figsize=(2.2 + 1.3 * len(tiers), 0.28 * len(names) + 1.6))
    finite = shown[np.isfinite(shown)]
    norm = LogNorm(vmin=max(finite.min(), 1e-9), vmax=max(finite.max(), 2e-9)) if finite.size else None
    im = ax.imshow(shown, aspect="auto", cmap="viridis", norm=norm)
    ax.set_xticks(range(len(tiers)), tiers)
    ax.set_yticks(range(len(names)), [part_label(config, n) for n in names], fontsize=7)
    for i in range(len(names)):
        for j, t in enumerate(tiers):
            bad = not within_bound(data[i, j], results[t]["bounds"][names[i]])
            light = norm is not None and math.isfinite(data[i, j]) and norm(max(data[i, j], 1e-9)) > 0.6
            ax.text(j, i, "NaN" if not math.isfinite(data[i, j]) else f"{data[i, j]:.1e}", ha="center",
                    va="center", fontsize=6, color="red" if bad else ("black" if light else "white"))
    fig.colorbar(im, ax=ax, label="relative error vs fp32 reference")
    ax.set_title(f"{config.name}: per-layer relative error", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _write(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")
