"""`python -m compare ab`: A/B timing of variants of one tier in one process, interleaved
(A B C A B C ...) so that a drift of the machine hits every variant alike.

A variant is the tier with some of its `variant_attributes` changed:

    python -m compare ab base g97:grid=97 reg:schedule=register --depth 4096      # the megakernel
    python -m compare ab --tier triton graph eager:cuda_graph=false cublas:gemv=cublas

`NAME[:attr=value,...]`; a value is an int where it reads as one, true/false, or a string.
Rows: tg (`--tg` greedy steps after a 16-token prompt), tg after a `--depth`-token prompt,
and the prefill of `--pp` tokens, each the median of `--reps` repeats per round (with `--batch B`
the tg rows decode B sequences together, each after its own prompt: total tokens/s, as `compare
bench --batch`; the bits are then B rows' prefill and one decode step); then the
median over rounds, the change against the first variant, the tg rows as a fraction of the
copy bandwidth measured in this run, and whether the variant's logits (of a 16-token prompt's
prefill, then of one decode step fed the first variant's token) equal the first variant's bit
for bit (else their largest difference). The tier: `--tier` (default: the megakernel on a GPU, the reference
tier in fp32 at the tiny config on a CPU). Comparing two commits needs two processes:
tests/gpu/run_all.sh ab.
"""

from __future__ import annotations

import json
import statistics

import torch

from reference import TierInputError

from . import tables
from .common import UsageError, add_model_arguments, environment, load_model, pick_device
from .timing import TG_PROMPT, Clock, copy_bandwidth, prefill_chunked, random_ids, time_pp, time_tg, weight_bytes_per_step
from .tiers import TIERS, load_tier, tier_class, unavailable_reason


def add_arguments(parser):
    add_model_arguments(parser, default_config=None)
    arg = parser.add_argument
    arg("variants", nargs="+", help="NAME[:attr=value,...]; the first is the reference for the bits and the changes")
    arg("--tier", default=None, help="the tier whose variants run (default: megakernel on a GPU, reference on a CPU)")
    arg("--rounds", type=int, default=3, help="rounds of every variant (default: %(default)s)")
    arg("--reps", type=int, default=3, help="repeats per round and row, median (default: %(default)s)")
    arg("--tg", type=int, default=128, help="greedy decode steps of the tg rows (default: %(default)s)")
    arg("--depth", type=int, default=0, help="also tg after a prompt of this many tokens (0: off)")
    arg("--pp", type=int, default=0, help="also the prefill of this many tokens (0: off)")
    arg("--batch", type=int, default=1, help="sequences decoded together in the tg rows (default: %(default)s)")
    arg("--json", metavar="PATH", dest="json_path", help="also write the results as JSON to PATH")


def parse_value(text: str):
    try:
        return int(text, 0)
    except ValueError:
        pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def parse_variant(spec: str, allowed: tuple[str, ...]) -> tuple[str, dict]:
    name, _, body = spec.partition(":")
    if not name:
        raise UsageError(f"variant {spec!r}: the name before ':' is empty (expected NAME[:attr=value,...])")
    attrs = {}
    for item in filter(None, body.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not value:
            raise UsageError(f"variant {spec!r}: {item!r} is not attr=value")
        if key not in allowed:
            raise UsageError(f"variant {spec!r}: {key!r} is not a variant attribute of this tier; expected one of "
                             f"{', '.join(allowed) or '(none: this tier has no variants)'}")
        attrs[key] = parse_value(value)
    return name, attrs


def apply(tier, default: dict, attrs: dict) -> None:
    """The tier's defaults, then the variant's changes (a value the tier refuses is a TierInputError)."""
    for key, value in {**default, **attrs}.items():
        try:
            setattr(tier, key, value)
        except (ValueError, TypeError) as e:
            raise TierInputError(f"{key}={value!r}: {e}") from e


def run(args) -> int:
    device = pick_device(args.device)
    if args.config is None:
        args.config = "qwen3.5-0.8b" if device.type == "cuda" else "tiny"
    if args.tiers:
        raise UsageError("compare ab times the variants of one tier: use --tier NAME, not --tiers")
    name = args.tier or ("megakernel" if device.type == "cuda" else "reference")
    if name not in TIERS:
        raise UsageError(f"--tier {name!r}: unknown tier; expected one of {', '.join(TIERS)}")
    reason = unavailable_reason(name, device)
    if reason is not None:
        raise UsageError(f"tier {name!r} cannot run on {device}: {reason}")
    for what, value in (("--rounds", args.rounds), ("--reps", args.reps), ("--tg", args.tg), ("--batch", args.batch)):
        if value < 1:
            raise UsageError(f"{what} {value}: expected at least 1")
    if args.depth < 0 or args.pp < 0:
        raise UsageError("--depth and --pp cannot be negative")
    variants = [parse_variant(v, tier_class(name).variant_attributes) for v in args.variants]
    names = [n for n, _ in variants]
    if len(set(names)) != len(names):
        raise UsageError(f"variant names must differ; got {', '.join(names)}")
    config, weights = load_model(args)
    limit = config.max_position_embeddings
    for what, need in (("--tg", TG_PROMPT + args.tg), ("--depth with --tg", args.depth + args.tg), ("--pp", args.pp)):
        if need > limit:
            raise UsageError(f"{what} needs {need} positions; config {config.name} has {limit}")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    tier = load_tier(name, config, weights, device=device, dtype=dtype)
    B = args.batch
    if tier.max_batch is not None and B > tier.max_batch:
        raise UsageError(f"--batch {B}: tier {name!r} decodes 1 to {tier.max_batch} sequences together")
    default = {k: getattr(tier, k) for k in tier.variant_attributes}
    clock = Clock(device)
    copy_bw = copy_bandwidth(device)
    bytes_per_step = weight_bytes_per_step(config)

    # the bits: every variant prefills one prompt a row (twice: a shape's second prefill may run another
    # path, its graph) and decodes one step from it, fed the first variant's greedy tokens
    prompt, token = random_ids(config, TG_PROMPT, args.seed, device, rows=B), None
    tag = f" b{B}" if B > 1 else ""
    rows = {"tg": f"tg{args.tg}{tag}"}
    if args.depth:
        rows["depth"] = f"tg{args.tg} @ d{args.depth}{tag}"
    if args.pp:
        rows["pp"] = f"pp{args.pp}"
    results, ref = {}, None
    for vname, attrs in variants:  # also checks every variant before any timing
        try:
            apply(tier, default, attrs)
            for _ in range(2):
                state = tier.new_state(B, TG_PROMPT + 2)
                first = prefill_chunked(tier, prompt, state)
            token = first.argmax(-1) if token is None else token
            logits = torch.cat([first, tier.decode(token, state)])
        except TierInputError as e:
            raise TierInputError(f"variant {vname!r}: {e}") from e
        ref = logits if ref is None else ref
        notes = tier.variant_notes(B)
        for note in notes:
            print(f"variant {vname}: {note}", flush=True)
        results[vname] = {"attrs": attrs, "notes": notes, "same_bits": bool(torch.equal(logits, ref)),
                          "max_logit_diff": float((logits.float() - ref.float()).abs().max()),
                          **{row: [] for row in rows.values()}}

    def tg_tok_s(context: int) -> float:
        """Median (total) tokens/s of `--reps` tg runs after one untimed warm-up run."""
        seconds = [time_tg(tier, context, args.tg, args.seed + rep, clock, batch=B)[0] for rep in range(args.reps + 1)]
        return statistics.median(B * args.tg / s for s in seconds[1:])

    def pp_tok_s() -> float:
        """Median prompt tokens/s of `--reps` prefills after one untimed warm-up prefill."""
        ids = random_ids(config, args.pp, args.seed, device)
        seconds = [time_pp(tier, ids, clock)[0] for _ in range(args.reps + 1)]
        return statistics.median(args.pp / s for s in seconds[1:])

    for rnd in range(args.rounds):
        for vname, attrs in variants:
            apply(tier, default, attrs)
            r = results[vname]
            r[rows["tg"]].append(tg_tok_s(TG_PROMPT))
            if args.depth:
                r[rows["depth"]].append(tg_tok_s(args.depth))
            if args.pp:
                r[rows["pp"]].append(pp_tok_s())
            print(f"round {rnd + 1} {vname:14s} " + "  ".join(f"{row} {r[row][-1]:10,.1f}" for row in rows.values()),
                  flush=True)
    apply(tier, default, {})

    header = ["variant"] + [f"{row} tok/s" for row in rows.values()] + ["bits"]
    table, first = [], None
    for vname, _ in variants:
        r = results[vname]
        medians = {row: statistics.median(r[row]) for row in rows.values()}
        r["median"] = medians
        if copy_bw:
            r["copy_fraction"] = {row: m / B * bytes_per_step / copy_bw for row, m in medians.items() if row.startswith("tg")}
        first = first or medians
        cells = []
        for row, m in medians.items():
            change = "" if first is medians else f" ({100 * (m / first[row] - 1):+.2f}%)"
            frac = f", {100 * r['copy_fraction'][row]:.1f}% of copy" if row in r.get("copy_fraction", {}) else ""
            cells.append(f"{tables.fmt(m)}{change}{frac}")
        bits = "same" if r["same_bits"] else f"max Δlogit {r['max_logit_diff']:.2e}"
        table.append([vname] + cells + [bits])
    env = environment()
    print(f"\n{tier.name} on {env['device']} | commit {env['commit']} | config {config.name} | batch {B} | "
          f"median of {args.rounds} rounds × {args.reps} repeats | copy bandwidth "
          + (f"{copy_bw / 1e12:.2f} TB/s" if copy_bw else "n/a (no GPU)"))
    print(tables.markdown(header, table, right=set(range(1, len(header) - 1))))
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump({"environment": env, "tier": tier.name, "config": config.name, "copy_bandwidth_Bps": copy_bw,
                       "bytes_per_step": bytes_per_step, "batch": B, "rows": list(rows.values()), "results": results}, f, indent=1)
    return 0
