"""`python -m compare diff`: every tier, same weights, same prompt, same teacher-forced
decode tokens; per traced tensor the relative error against the fp32 reference.

Rows: embed, layers 0..N-1 (with their type), norm, logits. Columns: tiers. Each cell is
the worst relative error over the prefill and every decode step. transformers' bf16 run
("hf") is the yardstick a bf16 tier is held to (reference/tolerances.py). Exit status 1
when a tier is out of tolerance.
"""

from __future__ import annotations

import json
import math
import os
import sys

import torch

from reference import ReferenceTier
from reference.tolerances import bound, rel_err, within

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
    device = pick_device(args.device)
    tiers, skipped = select_tiers(args.tiers, device)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    config, weights = load_model(args)
    max_seq = args.prompt_len + args.decode_steps + 1
    if max_seq > config.max_position_embeddings:
        raise UsageError(f"--prompt-len + --decode-steps = {max_seq - 1} exceeds the model's "
                         f"{config.max_position_embeddings} positions")
    gen = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(0, config.vocab_size, (1, args.prompt_len), generator=gen)

    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    say(f"diff: {config.name} on {device}, prompt {args.prompt_len} + {args.decode_steps} decode steps, tiers {tiers}")
    say("  fp32 reference (oracle) ...")
    oracle_tier = ReferenceTier(config, weights, device=device, dtype=torch.float32)
    # teacher forcing: every tier is fed the oracle's greedy tokens
    state = oracle_tier.new_state(1, max_seq)
    oracle = [{}]
    logits = oracle_tier.prefill(prompt, state, oracle[0])
    decode_tokens = []
    for _ in range(args.decode_steps):
        decode_tokens.append(logits.argmax(-1).cpu())
        oracle.append({})
        logits = oracle_tier.decode(decode_tokens[-1], state, oracle[-1])
    del oracle_tier, state

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
    yard = results.get("hf", {}).get("worst") if dtype == torch.bfloat16 else None
    for name, r in results.items():
        ys = yard if (yard is not None and name != "hf") else None
        r["bounds"] = {n: bound(dtype, ys[n] if ys else None) for n in names}
        r["ok"] = all(within(r["worst"][n], dtype, ys[n] if ys else None) for n in names)

    against = diff_against_dump(args.against, traces_by_tier, names) if args.against else None
    print(format_table(config, names, results, skipped, dtype))
    if against:
        print(format_against(config, names, against, args.against))
    report = {
        "environment": environment(), "config": config.name, "device": str(device), "dtype": args.dtype,
        "prompt_len": args.prompt_len, "decode_steps": args.decode_steps, "seed": args.seed,
        "skipped": skipped, "tiers": results, "against": against,
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


def format_table(config, names, results, skipped, dtype) -> str:
    tiers = list(results)
    width = max(len(part_label(config, n)) for n in names) + 2
    head = "part".ljust(width) + "".join(t.rjust(13) for t in tiers)
    lines = [f"relative error vs the fp32 reference (worst over prefill + decode steps; tiers in "
             f"{'bf16' if dtype == torch.bfloat16 else 'fp32'}; '!' = out of tolerance, '*' = worst layer)",
             head, "-" * len(head)]
    worst_part = {t: max(names, key=lambda n: results[t]["worst"][n]) for t in tiers}
    for n in names:
        cells = []
        for t in tiers:
            e, b = results[t]["worst"][n], results[t]["bounds"][n]
            mark = "!" if not (math.isfinite(e) and e <= b) else ("*" if worst_part[t] == n else " ")
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
            bad = not (math.isfinite(data[i, j]) and data[i, j] <= results[t]["bounds"][names[i]])
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
