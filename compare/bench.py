"""`python -m compare bench`: llama-bench-style speed of every tier, in one run.

Workloads (names as llama-bench uses them; batch 1, bf16, seeded random prompt ids):
  pp{N}          `tier.prefill` of an N-token prompt on a fresh state → prompt tokens/s
  tg{N}          N greedy `tier.decode_argmax` steps, each fed the last one's output (no
                 host sync inside the timed loop), after a 16-token prompt → tokens/s
  tg{N} @ d{D}   the same after a D-token prompt (prefilled in chunks, untimed)
Each is run `--warmup` times untimed, then `--repeats` times; rows give the median
tokens/s with min–max, ms/token, for tg the fraction of the copy bandwidth measured in
this run (weight bytes read per step × tokens/s ÷ copy bytes/s), and tokens per joule
where NVML's energy counter is readable. `--layers` adds the time of each part of one
decode step per tier (see compare/layer_times.py), `--png` draws it.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from dataclasses import dataclass, field

import torch

from reference import TierInputError, TierUnavailable

from . import layer_times, tables
from .common import UsageError, add_model_arguments, environment, load_model, pick_device, select_tiers
from .progress import Progress
from .timing import (TG_PROMPT, Clock, EnergyMeter, Summary, copy_bandwidth, random_ids, time_pp, time_tg,
                     weight_bytes_per_step)
from .tiers import load_tier


@dataclass(frozen=True)
class Workload:
    kind: str      # "pp" or "tg"
    n: int         # prompt tokens (pp) or decode steps (tg)
    context: int = 0  # tg: tokens in the state before the first step
    depth: bool = False  # tg: the context is a --depth (named "@ d{context}")

    @property
    def name(self) -> str:
        base = f"{self.kind}{self.n}"
        return f"{base} @ d{self.context}" if self.depth else base


@dataclass
class Result:
    tier: str
    workload: Workload
    seconds: list[float]          # one per timed repeat
    tokens: int                   # tokens per repeat (prompt tokens or decode steps)
    joules: list[float] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def tok_s(self) -> Summary:
        return Summary.of(self.tokens / s for s in self.seconds)

    @property
    def tok_per_joule(self) -> float | None:
        if not self.joules or sum(self.joules) <= 0:
            return None
        return self.tokens * len(self.joules) / sum(self.joules)


def add_arguments(parser):
    add_model_arguments(parser, default_config=None)
    arg = parser.add_argument
    arg("--pp", default="520", help="prompt lengths to prefill, comma-separated; 0 for none (default: %(default)s)")
    arg("--tg", default="128", help="decode steps, comma-separated; 0 for none (default: %(default)s)")
    arg("--depth", default="4096",
        help="contexts for extra tg rows `tg@d`, comma-separated; 0 for none (default: %(default)s)")
    arg("--repeats", type=int, default=None, help="timed runs per row (default: 5, 2 with --quick)")
    arg("--warmup", type=int, default=1, help="untimed runs before them (default: %(default)s)")
    arg("--quick", action="store_true", help="fewer repeats (2) and per-layer steps (5)")
    arg("--slow-repeats", "--hf-repeats", type=int, default=2, dest="slow_repeats",
        help="at most this many repeats for tiers marked slow (hf) (default: %(default)s)")
    arg("--slow-steps", "--hf-steps", type=int, default=32, dest="slow_steps",
        help="at most this many tg steps for tiers marked slow (hf) (default: %(default)s)")
    arg("--layers", action="store_true", help="also time each part of one decode step per tier")
    arg("--layer-steps", type=int, default=None,
        help="decode steps the per-layer medians take (default: 10, 5 with --quick)")
    arg("--png", metavar="PATH", help="draw the per-layer times as stacked bars (implies --layers)")
    arg("-o", "--output", choices=["md", "csv", "json"], default="md", help="stdout format (default: %(default)s)")
    arg("--json", metavar="PATH", dest="json_path", help="also write the results as JSON to PATH")
    arg("--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress bar on stderr (default: when stderr is a terminal)")


def _lengths(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--{what} {text!r}: expected comma-separated token counts such as 128,512") from None
    if any(v < 0 for v in values):
        raise UsageError(f"--{what} {text!r}: token counts cannot be negative")
    return [v for v in values if v > 0]


def plan(args, config) -> tuple[list[Workload], list[str]]:
    """→ (workloads, notes on the ones left out)."""
    workloads = [Workload("pp", n) for n in _lengths(args.pp, "pp")]
    steps, depths = _lengths(args.tg, "tg"), _lengths(args.depth, "depth")
    workloads += [Workload("tg", n, TG_PROMPT) for n in steps]
    workloads += [Workload("tg", n, d, depth=True) for d in depths for n in steps]
    limit, notes, kept = config.max_position_embeddings, [], []
    for w in workloads:
        need = w.n if w.kind == "pp" else w.context + w.n
        if need > limit:
            notes.append(f"{w.name} left out: it needs {need} positions, config {config.name} has {limit}")
        else:
            kept.append(w)
    return kept, notes


def run_once(tier, w: Workload, steps: int, seed: int, clock: Clock):
    """One repeat of workload `w` (tg with `steps` steps) → (seconds, joules | None)."""
    if w.kind == "pp":
        return time_pp(tier, random_ids(tier.config, w.n, seed, tier.device), clock)
    return time_tg(tier, w.context, steps, seed, clock)


def bench_tier(tier, workloads, settings, clock, progress) -> list[Result]:
    results = []
    for w in workloads:
        repeats, steps, notes = settings["repeats"], w.n, []
        if tier.slow:
            if repeats > settings["slow_repeats"]:
                notes.append(f"{settings['slow_repeats']} of {repeats} repeats")
                repeats = settings["slow_repeats"]
            if w.kind == "tg" and steps > settings["slow_steps"]:
                notes.append(f"{settings['slow_steps']} of {steps} steps")
                steps = settings["slow_steps"]
        if w.kind == "pp" and tier.prefill_note:
            notes.append(tier.prefill_note)
        seconds, joules = [], []
        for r in range(settings["warmup"] + repeats):
            progress.show(f"{w.name} {tier.name}")
            s, j = run_once(tier, w, steps, settings["seed"] + r, clock)
            if r >= settings["warmup"]:
                seconds.append(s)
                joules.append(j)
            progress.step(f"{w.name} {tier.name}")
        for _ in range(settings["repeats"] - repeats):
            progress.step()
        tokens = w.n if w.kind == "pp" else steps
        results.append(Result(tier.name, w, seconds, tokens, None if None in joules else joules, notes))
    return results


# ---- rendering --------------------------------------------------------------------------
RESULT_HEADER = ["tier", "test", "t/s", "min–max", "ms/token", "of copy bw", "tokens/J", "note"]
CSV_HEADER = ["tier", "test", "tokens", "repeats", "tok_s_median", "tok_s_min", "tok_s_max",
              "ms_per_token", "bw_fraction", "tok_per_joule", "note"]


def bw_fraction(result: Result, bytes_per_step: int, copy_bw: float | None) -> float | None:
    if result.workload.kind != "tg" or not copy_bw:
        return None
    return result.tok_s.median * bytes_per_step / copy_bw


def result_record(r: Result, bytes_per_step, copy_bw) -> dict:
    t = r.tok_s
    return {
        "tier": r.tier, "test": r.workload.name, "kind": r.workload.kind, "tokens": r.tokens,
        "context": r.workload.context, "repeats": len(r.seconds),
        "tok_s": {"median": t.median, "min": t.min, "max": t.max},
        "ms_per_token": 1e3 / t.median, "bw_fraction": bw_fraction(r, bytes_per_step, copy_bw),
        "tok_per_joule": r.tok_per_joule, "seconds": r.seconds, "note": "; ".join(r.notes),
    }


def markdown_results(records, skipped) -> str:
    rows = []
    for rec in records:
        t, bw = rec["tok_s"], rec["bw_fraction"]
        rows.append([rec["tier"], rec["test"], tables.fmt(t["median"]),
                     f"{tables.fmt(t['min'])}–{tables.fmt(t['max'])}", tables.fmt(rec["ms_per_token"], 3),
                     "n/a" if bw is None else f"{100 * bw:.1f}%", tables.fmt(rec["tok_per_joule"], 2), rec["note"]])
    rows += [[tier, "skipped", "", "", "", "", "", reason] for tier, reason in skipped.items()]
    return tables.markdown(RESULT_HEADER, rows, right={2, 3, 4, 5, 6})


def csv_results(records, skipped) -> str:
    rows = [[rec["tier"], rec["test"], rec["tokens"], rec["repeats"], rec["tok_s"]["median"], rec["tok_s"]["min"],
             rec["tok_s"]["max"], rec["ms_per_token"], rec["bw_fraction"], rec["tok_per_joule"], rec["note"]]
            for rec in records]
    rows += [[tier, "skipped"] + [None] * 8 + [reason] for tier, reason in skipped.items()]
    return tables.csv_text(CSV_HEADER, rows)


def layer_rows(doc) -> tuple[list[str], list[list]]:
    times, kinds = doc["layers"]["times"], doc["layers"]["kinds"]
    tiers = list(times)
    names = list(dict.fromkeys(p for t in tiers for p in times[t] if p != "total")) + ["total"]
    rows = [[p, kinds.get(p, "")] + [times[t].get(p) for t in tiers] for p in names]
    return ["part", "kind"] + [f"{t} µs" for t in tiers], rows


def header_lines(doc) -> list[str]:
    env, s = doc["environment"], doc["settings"]
    where = f"GPU {env['device']}" if env.get("cuda") else "device cpu (no GPU)"
    bw = doc["copy_bandwidth_Bps"]
    weights = doc["weights"] + (f", {doc['config_note']}" if doc["config_note"] else "")
    copy = "n/a (no GPU)" if bw is None else f"{bw / 1e12:.2f} TB/s (2 GiB bf16 copy, read + write)"
    lines = [
        f"{where} | CUDA {env.get('cuda') or 'n/a'} | torch {env['torch']} | triton {env.get('triton') or 'n/a'}"
        f" | commit {env['commit']}",
        f"config {doc['config']} ({weights}) | bf16 | batch 1"
        f" | weights read per decode step {doc['bytes_per_step']:,} B | copy bandwidth {copy}",
        f"{s['repeats']} timed repeats after {s['warmup']} warm-up; tokens/s median with min–max;"
        f" tg after a {TG_PROMPT}-token prompt; tokens/J {doc['energy']}",
    ]
    return lines


def render(doc, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    if fmt == "csv":
        out = csv_results(doc["results"], doc["skipped"])
        if doc.get("layers"):
            header, rows = layer_rows(doc)
            out += "\n" + tables.csv_text(header, rows)
        return out.rstrip("\n")
    parts = ["\n".join(header_lines(doc)), markdown_results(doc["results"], doc["skipped"])]
    if doc["notes"]:
        parts.append("\n".join(f"- {n}" for n in doc["notes"]))
    if doc.get("layers"):
        header, rows = layer_rows(doc)
        cells = [row[:2] + [tables.fmt(v) for v in row[2:]] for row in rows]
        methods = ", ".join(f"{t}: {m}" for t, m in doc["layers"]["method"].items())
        parts.append(f"per-part time of one decode step, µs (median of {doc['settings']['layer_steps']} steps; {methods})\n"
                     + tables.markdown(header, cells, right=set(range(2, len(header)))))
    return "\n\n".join(parts)


# ---- the command ----------------------------------------------------------------------------
def run(args) -> int:
    device = pick_device(args.device)
    config_note = ""
    if args.config is None:
        args.config = "qwen3.5-0.8b" if device.type == "cuda" else "tiny"
        if device.type != "cuda" and not args.checkpoint:
            config_note = "the default on a machine without a GPU"
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    layer_steps = args.layer_steps if args.layer_steps is not None else (5 if args.quick else 10)
    for what, value, least in (("--repeats", repeats, 1), ("--warmup", args.warmup, 0),
                               ("--slow-repeats", args.slow_repeats, 1), ("--slow-steps", args.slow_steps, 1),
                               ("--layer-steps", layer_steps, 1)):
        if value < least:
            raise UsageError(f"{what} {value}: expected at least {least}")
    want_layers = args.layers or bool(args.png)
    tiers, skipped = select_tiers(args.tiers, device)
    config, weights = load_model(args)
    workloads, notes = plan(args, config)
    if not workloads and not want_layers:
        raise UsageError("nothing to run: every workload is 0 or left out, and no --layers")

    settings = {"repeats": repeats, "warmup": args.warmup, "seed": args.seed, "slow_repeats": args.slow_repeats,
                "slow_steps": args.slow_steps, "layer_steps": layer_steps}
    meter = EnergyMeter(device)
    copy_bw = copy_bandwidth(device)
    clock = Clock(device, meter)
    per_tier = len(workloads) * (args.warmup + repeats) + int(want_layers)
    progress = Progress(per_tier * len(tiers), enabled=args.progress)
    results, layer_times_by_tier, layer_method = [], {}, {}
    try:
        for name in tiers:
            progress.show(f"loading {name}")
            try:
                tier = load_tier(name, config, weights, device=device, dtype=torch.bfloat16)
            except (TierUnavailable, TierInputError) as e:  # e.g. triton's CPU interpreter takes fp32 only
                skipped[name] = str(e)
                for _ in range(per_tier):
                    progress.step()
                continue
            results += bench_tier(tier, workloads, settings, clock, progress)
            if want_layers:
                progress.show(f"per-layer {name}")
                if tier.part_timing is None:
                    notes.append(f"per-layer: tier {name} offers no per-layer timing")
                else:
                    prompt = random_ids(config, TG_PROMPT, args.seed, device)
                    layer_times_by_tier[name], layer_method[name] = layer_times.decode_layer_times(
                        tier, prompt, steps=layer_steps, warmup=3)
                progress.step(f"per-layer {name}")
            del tier
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
    finally:
        progress.close()

    bytes_per_step = weight_bytes_per_step(config)
    doc = {
        "environment": environment(),
        "config": config.name,
        "config_note": config_note,
        "weights": f"checkpoint {args.checkpoint}" if args.checkpoint else f"random weights, seed {args.seed}",
        "dtype": "bfloat16",
        "bytes_per_step": bytes_per_step,
        "copy_bandwidth_Bps": copy_bw,
        "energy": "from NVML's energy counter" if meter.available else f"n/a ({meter.why})",
        "settings": settings,
        "results": [result_record(r, bytes_per_step, copy_bw) for r in results],
        "skipped": skipped,
        "notes": notes,
    }
    if want_layers:
        kinds = {p: layer_times.part_kind(config, p) for t in layer_times_by_tier.values() for p in t if p != "total"}
        doc["layers"] = {"times": layer_times_by_tier, "kinds": kinds, "method": layer_method}
    print(render(doc, args.output))
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(doc, f, indent=2)
    if args.png:
        if layer_times_by_tier:
            from .plots import stacked_layer_bars

            stacked_layer_bars(args.png, layer_times_by_tier, doc["layers"]["kinds"],
                               f"one decode step, {config.name}, {doc['environment']['device']}")
        else:
            print("no per-layer times to draw; no PNG written", file=sys.stderr)
    return 0
