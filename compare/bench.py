"""`python -m compare bench`: llama-bench-style speed of every tier, in one run.

Workloads (names as llama-bench uses them; batch 1, bf16, seeded random prompt ids):
  pp{N}          `tier.prefill` of an N-token prompt on a fresh state → prompt tokens/s
  pp{N} @ d{D}   the same on top of a D-token context (prefilled first, untimed): the time to
                 first token of a turn that continues a conversation is N × ms/token
  tg{N}          N greedy `tier.decode_argmax` steps, each fed the last one's output (no
                 host sync inside the timed loop), after a 16-token prompt → tokens/s
  tg{N} @ d{D}   the same after a D-token prompt (prefilled in chunks, untimed)
  tg{N} b{B}     (`--batch`) the tg rows with B sequences decoded together in one state,
                 each after its own prompt → total tokens/s (B × steps ÷ time)
  tg{N} stream   (`--stream`) tg{N} with every token read on the host as it is produced
                 (timing.greedy_tokens, how `compare generate` streams: a tier with
                 many_tokens_per_launch, the megakernel, runs all N steps in ONE launch);
                 at each `--batch` B > 1 a row `tg{N} stream b{B}` (decode_greedy: every
                 step's ids on the host as the step ends)
Each is run `--warmup` times untimed (a pp row once more: a tier may capture a prompt shape's
CUDA graph at its second prefill, which must not land in a timed run), then `--repeats` times;
rows give the median
tokens/s with min–max, ms/token, for tg the fraction of the copy bandwidth measured in
this run (weight bytes read per step × steps/s ÷ copy bytes/s), and tokens per joule
where NVML's energy counter is readable, and the fraction of the row's floor: a tg row's byte
floor (the weights once + B × each sequence's state and K/V cache traffic ÷ the copy bandwidth,
timing.floor_bytes_per_step), a pp row's compute floor (its matrix FLOPs ÷ the dense bf16 rate
measured in this run, timing.matrix_flops). With a batch size above 1, tokens/s per sequence
joins; a batch size above a tier's `max_batch` is a skipped row. `--layers` adds the time of each part of one decode
step per tier (see compare/layer_times.py) next to that part's byte floor (its weights and its
state / K/V traffic at the copy bandwidth: timing.part_bytes_per_step), `--png` draws both on a
log axis (compare/plots.py). Under the rows, every tier's tokens/s divided by the `--vs` tier's
(default triton) in the same row of the same run.
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
from .timing import (TG_PROMPT, Clock, EnergyMeter, Summary, copy_bandwidth, dense_bf16_flops, floor_bytes_per_step,
                     matrix_flops, part_bytes_per_step, random_ids, sequence_bytes_per_step, time_pp, time_tg,
                     time_tg_stream, weight_bytes_per_step)
from .tiers import TIERS, load_tier


@dataclass(frozen=True)
class Workload:
    kind: str      # "pp" or "tg"
    n: int         # prompt tokens (pp) or decode steps (tg)
    context: int = 0  # tokens in the state before the timed prefill (pp) or the first step (tg)
    depth: bool = False  # the context is a --depth (named "@ d{context}")
    batch: int = 1  # tg: sequences decoded together (named "b{batch}" above 1)
    stream: bool = False  # tg: every token read on the host as it is produced (named "stream")

    @property
    def name(self) -> str:
        base = f"{self.kind}{self.n}"
        base = f"{base} @ d{self.context}" if self.depth else base
        base = f"{base} stream" if self.stream else base
        return f"{base} b{self.batch}" if self.batch > 1 else base


@dataclass
class Result:
    tier: str
    workload: Workload
    seconds: list[float]          # one per timed repeat
    tokens: int                   # tokens per repeat (prompt tokens, or decode steps × batch)
    joules: list[float] | None = None
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None    # why this tier did not run the workload (no timings then)

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
    arg("--batch", default="1",
        help="batch sizes of the tg rows, comma-separated, e.g. 1,2,4,8: B sequences decoded together, each "
             f"after its own {TG_PROMPT}-token prompt; rows `tg{{N}} b{{B}}` give total and per-sequence tokens/s "
             "and the fraction of the byte floor (default: %(default)s)")
    arg("--stream", action="store_true",
        help="also tg{N} stream rows, one per --batch: the tg steps with every token read on the host as it is "
             "produced, as `compare generate` streams (the megakernel: every step in one launch; the others: the "
             "next step queued before the token is read, or a decode_argmax a step at a batch)")
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
    arg("--png", metavar="PATH", help="draw each part's time against its byte floor, log axes (implies --layers)")
    arg("--vs", metavar="TIER", default="triton",
        help="the tier the others' tokens/s are divided by, row by row of this run (default: %(default)s; no table "
             "where it did not run)")
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


def batch_sizes(text: str) -> list[int]:
    """--batch "1,2,4,8" → [1, 2, 4, 8] (in the order given, repeats dropped)."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = None
    if not values or any(v < 1 for v in values):
        raise UsageError(f"--batch {text!r}: expected comma-separated batch sizes of at least 1, such as 1,2,4,8")
    return list(dict.fromkeys(values))


def plan(args, config, batches) -> tuple[list[Workload], list[str]]:
    """→ (workloads, notes on the ones left out); tg rows for each of `batches`."""
    prompts, steps, depths = _lengths(args.pp, "pp"), _lengths(args.tg, "tg"), _lengths(args.depth, "depth")
    workloads = [Workload("pp", n) for n in prompts]
    workloads += [Workload("pp", n, d, depth=True) for d in depths for n in prompts]
    workloads += [Workload("tg", n, TG_PROMPT, batch=b) for n in steps for b in batches]
    if args.stream:
        workloads += [Workload("tg", n, TG_PROMPT, stream=True, batch=b) for n in steps for b in batches]
    workloads += [Workload("tg", n, d, depth=True, batch=b) for d in depths for n in steps for b in batches]
    limit, notes, kept = config.max_position_embeddings, [], []
    for w in workloads:
        need = w.context + w.n
        if need > limit:
            notes.append(f"{w.name} left out: it needs {need} positions, config {config.name} has {limit}")
        else:
            kept.append(w)
    return kept, notes


def run_once(tier, w: Workload, steps: int, seed: int, clock: Clock):
    """One repeat of workload `w` (tg with `steps` steps) → (seconds, joules | None)."""
    if w.kind == "pp":
        context = random_ids(tier.config, w.context, seed + 1, tier.device) if w.context else None
        return time_pp(tier, random_ids(tier.config, w.n, seed, tier.device), clock, context)
    if w.stream:
        return time_tg_stream(tier, w.context, steps, seed, clock, batch=w.batch)
    return time_tg(tier, w.context, steps, seed, clock, batch=w.batch)


def batch_refusal(tier, w: Workload) -> str | None:
    """Why `tier` cannot run workload `w`'s batch (its declared max_batch), or None."""
    if tier.max_batch is not None and w.batch > tier.max_batch:
        return (f"skipped: batch {w.batch} is above tier {tier.name}'s max_batch {tier.max_batch} "
                f"(it decodes 1 to {tier.max_batch} sequences per state)")
    return None


def warmups(w, settings) -> int:
    """Untimed runs before a row's timed ones: `--warmup`, and one more for a pp row (a tier may
    capture a prompt shape's graph at its second prefill: the megakernel's fast prefill does)."""
    return settings["warmup"] + (1 if w.kind == "pp" else 0)


def bench_tier(tier, workloads, settings, clock, progress) -> list[Result]:
    results = []
    for w in workloads:
        refusal = batch_refusal(tier, w)
        if refusal:
            results.append(Result(tier.name, w, [], 0, skipped=refusal))
            for _ in range(warmups(w, settings) + settings["repeats"]):
                progress.step()
            continue
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
        if w.kind == "pp" and getattr(tier, "prefill_delta_rule", "none") != "none":
            notes.append(f"delta rule: {tier.prefill_delta_rule}")
        seconds, joules = [], []
        warm = warmups(w, settings)
        for r in range(warm + repeats):
            progress.show(f"{w.name} {tier.name}")
            s, j = run_once(tier, w, steps, settings["seed"] + r, clock)
            if r >= warm:
                seconds.append(s)
                joules.append(j)
            progress.step(f"{w.name} {tier.name}")
        for _ in range(settings["repeats"] - repeats):
            progress.step()
        tokens = w.n if w.kind == "pp" else steps * w.batch
        results.append(Result(tier.name, w, seconds, tokens, None if None in joules else joules, notes))
    return results


# ---- rendering --------------------------------------------------------------------------
RESULT_HEADER = ["tier", "test", "t/s", "min–max", "ms/token", "of copy bw", "of floor", "tokens/J", "note"]
CSV_HEADER = ["tier", "test", "tokens", "repeats", "tok_s_median", "tok_s_min", "tok_s_max",
              "ms_per_token", "bw_fraction", "floor_fraction", "tok_per_joule", "note"]
# with a batch size above 1 (--batch): per-sequence tokens/s joins
BATCH_RESULT_HEADER = ["tier", "test", "t/s", "t/s/seq", "min–max", "ms/token", "of copy bw", "of floor",
                       "tokens/J", "note"]
BATCH_CSV_HEADER = CSV_HEADER[:-1] + ["batch", "tok_s_per_seq_median", "floor_bytes_per_step", "note"]


def batched(doc) -> bool:
    """Whether the run has tg rows above batch 1 (then the tables carry the batch columns)."""
    return any(b > 1 for b in doc["settings"].get("batches", [1]))


def bw_fraction(result: Result, bytes_per_step: int, copy_bw: float | None) -> float | None:
    """Weight bytes read per step × steps/s ÷ copy bytes/s (steps/s = tokens/s ÷ batch)."""
    if result.workload.kind != "tg" or not copy_bw:
        return None
    return result.tok_s.median / result.workload.batch * bytes_per_step / copy_bw


def floor_bytes(result: Result, config) -> float | None:
    """The byte floor of one step of a tg row (timing.floor_bytes_per_step, averaged over the
    steps it ran: the K/V read grows a position a step); None for pp rows."""
    w = result.workload
    if w.kind != "tg":
        return None
    return floor_bytes_per_step(config, w.batch, w.context, result.tokens // w.batch)


def result_record(r: Result, bytes_per_step, copy_bw, config, flop_rate=None) -> dict:
    """One row as JSON. tg rows: the byte floor (timing.floor_bytes_per_step at `copy_bw`); pp
    rows: the compute floor (timing.matrix_flops at `flop_rate`, the dense bf16 FLOP/s)."""
    w = r.workload
    base = {"tier": r.tier, "test": w.name, "kind": w.kind, "batch": w.batch}
    if r.skipped:
        return {**base, "tokens": 0, "context": w.context, "repeats": 0, "tok_s": None, "tok_s_per_seq": None,
                "ms_per_token": None, "ms_per_step": None, "bw_fraction": None, "floor_bytes_per_step": None,
                "floor_fraction": None, "tok_per_joule": None, "seconds": [], "note": r.skipped, "skipped": r.skipped}
    t = r.tok_s
    rec = {
        "tier": r.tier, "test": w.name, "kind": w.kind, "tokens": r.tokens,
        "context": w.context, "repeats": len(r.seconds),
        "tok_s": {"median": t.median, "min": t.min, "max": t.max},
        "ms_per_token": 1e3 / t.median, "bw_fraction": bw_fraction(r, bytes_per_step, copy_bw),
        "tok_per_joule": r.tok_per_joule, "seconds": r.seconds, "note": "; ".join(r.notes),
        "batch": w.batch,
    }
    if w.kind == "pp":
        flops = matrix_flops(config, w.n, w.context)
        rec.update({
            "ms_per_prefill": 1e3 * w.n / t.median,  # (on top of a context: the time to first token)
            "floor_flops": flops,
            "floor_fraction": flops / flop_rate * t.median / w.n if flop_rate else None,
        })
    if w.kind == "tg":
        per_seq = Summary.of(r.tokens / w.batch / s for s in r.seconds)  # = steps/s
        floor = floor_bytes(r, config)
        rec.update({
            "steps": r.tokens // w.batch,
            "tok_s_per_seq": {"median": per_seq.median, "min": per_seq.min, "max": per_seq.max},
            "ms_per_step": 1e3 / per_seq.median,
            "floor_bytes_per_step": floor,
            "floor_fraction": per_seq.median * floor / copy_bw if copy_bw else None,
        })
    return rec


def _percent(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def markdown_results(records, skipped, batch_columns: bool = False) -> str:
    width = len(BATCH_RESULT_HEADER if batch_columns else RESULT_HEADER)
    rows = []
    for rec in records:
        if rec.get("skipped"):
            rows.append([rec["tier"], rec["test"]] + [""] * (width - 3) + [rec["note"]])
            continue
        t = rec["tok_s"]
        cells = [rec["tier"], rec["test"], tables.fmt(t["median"]),
                 f"{tables.fmt(t['min'])}–{tables.fmt(t['max'])}", tables.fmt(rec["ms_per_token"], 3),
                 _percent(rec["bw_fraction"]), _percent(rec.get("floor_fraction")),
                 tables.fmt(rec["tok_per_joule"], 2), rec["note"]]
        if batch_columns:
            per_seq = rec.get("tok_s_per_seq")
            cells.insert(3, "" if per_seq is None else tables.fmt(per_seq["median"]))
        rows.append(cells)
    rows += [[tier, "skipped"] + [""] * (width - 3) + [reason] for tier, reason in skipped.items()]
    if batch_columns:
        return tables.markdown(BATCH_RESULT_HEADER, rows, right={2, 3, 4, 5, 6, 7, 8})
    return tables.markdown(RESULT_HEADER, rows, right={2, 3, 4, 5, 6, 7})


def csv_results(records, skipped, batch_columns: bool = False) -> str:
    rows = []
    for rec in records:
        t = rec["tok_s"] or {"median": None, "min": None, "max": None}
        row = [rec["tier"], rec["test"], rec["tokens"], rec["repeats"], t["median"], t["min"],
               t["max"], rec["ms_per_token"], rec["bw_fraction"], rec.get("floor_fraction"), rec["tok_per_joule"]]
        if batch_columns:
            per_seq = rec.get("tok_s_per_seq")
            row += [rec["batch"], per_seq and per_seq["median"], rec.get("floor_bytes_per_step")]
        rows.append(row + [rec["note"]])
    header = BATCH_CSV_HEADER if batch_columns else CSV_HEADER
    rows += [[tier, "skipped"] + [None] * (len(header) - 3) + [reason] for tier, reason in skipped.items()]
    return tables.csv_text(header, rows)


def layer_rows(doc) -> tuple[list[str], list[list]]:
    """Per part: its kind, its byte floor (µs at this machine's copy bandwidth), then per tier its
    time (µs) and the floor's share of it (%); without a GPU (no bandwidth) the times alone."""
    times, kinds, floor = doc["layers"]["times"], doc["layers"]["kinds"], doc["layers"]["floor"]["us"]
    tiers = list(times)
    names = list(dict.fromkeys(p for t in tiers for p in times[t] if p != "total")) + ["total"]
    rows = []
    for p in names:
        if floor is None:  # no GPU: no copy bandwidth, no floor columns
            rows.append([p, kinds.get(p, "")] + [times[t].get(p) for t in tiers])
            continue
        f, row = floor.get(p), [p, kinds.get(p, ""), floor.get(p)]
        for t in tiers:
            us = times[t].get(p)
            row += [us, None if f is None or not us else 100.0 * f / us]
        rows.append(row)
    if floor is None:
        return ["part", "kind"] + [f"{t} µs" for t in tiers], rows
    return ["part", "kind", "floor µs"] + [c for t in tiers for c in (f"{t} µs", f"{t} % of floor")], rows


def header_lines(doc) -> list[str]:
    env, s = doc["environment"], doc["settings"]
    where = f"GPU {env['device']}" if env.get("cuda") else "device cpu (no GPU)"
    bw = doc["copy_bandwidth_Bps"]
    weights = doc["weights"] + (f", {doc['config_note']}" if doc["config_note"] else "")
    copy = "n/a (no GPU)" if bw is None else f"{bw / 1e12:.2f} TB/s (2 GiB bf16 copy, read + write)"
    rate = doc.get("dense_bf16_flops")
    batch = "batch 1"
    if batched(doc):
        batch = f"batch 1 (pp), {','.join(map(str, s['batches']))} (tg)"
    lines = [
        f"{where} | CUDA {env.get('cuda') or 'n/a'} | torch {env['torch']} | triton {env.get('triton') or 'n/a'}"
        f" | fla {env.get('fla') or 'n/a'} | flash-qla {env.get('flash_qla') or 'n/a'} | commit {env['commit']}",
        f"config {doc['config']} ({weights}) | bf16 | {batch}"
        f" | weights read per decode step {doc['bytes_per_step']:,} B | copy bandwidth {copy}",
        f"{s['repeats']} timed repeats after {s['warmup']} warm-up (pp rows {s['warmup'] + 1}); tokens/s median with min–max;"
        f" tg after a {TG_PROMPT}-token prompt{' per sequence' if batched(doc) else ''}; tokens/J {doc['energy']}",
        "of floor: tg rows the byte floor (the weights once a step + each sequence's state and K/V traffic ÷ the copy"
        " bandwidth); pp rows the compute floor (the matrix FLOPs: projections, causal attention over the context,"
        " one lm_head row ÷ the dense bf16 rate, "
        + ("n/a (no GPU)" if rate is None else f"{rate / 1e12:.0f} TFLOP/s in an 8192³ GEMM") + ")",
    ]
    if any(r["kind"] == "pp" and r["context"] for r in doc["results"]):
        lines.append("pp{N} @ d{D}: N tokens prefilled on top of a D-token context (the time to first token of a turn"
                     " that continues a conversation: N × ms/token)")
    if batched(doc):
        lines.append(
            "tg b{B}: t/s = B × steps ÷ time, t/s/seq = steps ÷ time; of copy bw counts the weights read once a step;"
            " of floor counts the byte floor: the weights + B × each sequence's own traffic (DeltaNet recurrent"
            " state fp32 and conv state read + written, K/V cache read at the context + the new row written),"
            f" {doc['sequence_bytes_per_step']:,} B per sequence at the {TG_PROMPT}-token context")
    return lines


def speedups(records, base: str) -> dict[str, dict[str, float]]:
    """{test: {tier: its median tokens/s ÷ the base tier's}} for every row the base tier ran in this
    run (skipped rows and the base itself left out)."""
    ran = {(r["tier"], r["test"]): r["tok_s"]["median"] for r in records if not r.get("skipped") and r.get("tok_s")}
    out = {}
    for (tier, test), value in ran.items():
        b = ran.get((base, test))
        if tier != base and b:
            out.setdefault(test, {})[tier] = value / b
    return out


def speedup_table(doc) -> str | None:
    """The speed-ups as a table (rows: tests, columns: tiers), or None where there are none."""
    ratios, base = doc["speedups"]["ratios"], doc["speedups"]["base"]
    if not ratios:
        return None
    tiers = list(dict.fromkeys(t for r in ratios.values() for t in r))
    rows = [[test] + [f"{r[t]:.2f}x" if t in r else "" for t in tiers] for test, r in ratios.items()]
    return f"tokens/s over {base}'s, same run:\n" + tables.markdown(["test"] + tiers, rows, right=set(range(1, len(tiers) + 1)))


def render(doc, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    if fmt == "csv":
        out = csv_results(doc["results"], doc["skipped"], batched(doc))
        if doc.get("layers"):
            header, rows = layer_rows(doc)
            out += "\n" + tables.csv_text(header, rows)
        return out.rstrip("\n")
    parts = ["\n".join(header_lines(doc)), markdown_results(doc["results"], doc["skipped"], batched(doc))]
    speedup = speedup_table(doc) if doc.get("speedups") else None
    if speedup:
        parts.append(speedup)
    if doc["notes"]:
        parts.append("\n".join(f"- {n}" for n in doc["notes"]))
    if doc.get("layers"):
        header, rows = layer_rows(doc)
        cells = [row[:2] + [tables.fmt(v) for v in row[2:]] for row in rows]
        methods = ", ".join(f"{t}: {m}" for t, m in doc["layers"]["method"].items())
        fl = doc["layers"]["floor"]
        floor = (f"floor: the bytes each part must move (its weights, its state and K/V at {fl['context']} tokens)"
                 " ÷ the copy bandwidth" if fl["us"] is not None else "floor: n/a (no copy bandwidth without a GPU)")
        parts.append(f"per-part time of one decode step, µs (median of {doc['settings']['layer_steps']} steps; {methods});"
                     f" {floor}\n" + tables.markdown(header, cells, right=set(range(2, len(header)))))
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
    if args.vs not in TIERS:
        raise UsageError(f"--vs {args.vs!r}: unknown tier; expected one of {list(TIERS)}")
    want_layers = args.layers or bool(args.png)
    batches = batch_sizes(args.batch)
    select_tiers(args.tiers, device)  # (an unknown tier, or one that cannot run here: refused before the weights are made)
    config, weights = load_model(args)
    tiers, skipped = select_tiers(args.tiers, device, config=config)
    workloads, notes = plan(args, config, batches)
    if not workloads and not want_layers:
        raise UsageError("nothing to run: every workload is 0 or left out, and no --layers")

    settings = {"repeats": repeats, "warmup": args.warmup, "seed": args.seed, "slow_repeats": args.slow_repeats,
                "slow_steps": args.slow_steps, "layer_steps": layer_steps, "batches": batches}
    meter = EnergyMeter(device)
    copy_bw = copy_bandwidth(device)
    flop_rate = dense_bf16_flops(device) if any(w.kind == "pp" for w in workloads) else None
    clock = Clock(device, meter)
    per_tier = sum(warmups(w, settings) + repeats for w in workloads) + int(want_layers)
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
        "weights": (f"checkpoint {args.checkpoint}" if args.checkpoint else f"random weights, seed {args.seed}")
                   + (" (hazard: reference.hazard_weights)" if args.weights == "hazard" else ""),
        "dtype": "bfloat16",
        "bytes_per_step": bytes_per_step,
        "sequence_bytes_per_step": sequence_bytes_per_step(config, TG_PROMPT),
        "copy_bandwidth_Bps": copy_bw,
        "energy": "from NVML's energy counter" if meter.available else f"n/a ({meter.why})",
        "settings": settings,
        "dense_bf16_flops": flop_rate,
        "results": [result_record(r, bytes_per_step, copy_bw, config, flop_rate) for r in results],
        "skipped": skipped,
        "notes": notes,
    }
    doc["speedups"] = {"base": args.vs, "ratios": speedups(doc["results"], args.vs)}
    if want_layers:
        kinds = {p: layer_times.part_kind(config, p) for t in layer_times_by_tier.values() for p in t if p != "total"}
        context = layer_times.median_context(TG_PROMPT, layer_steps)
        floor_bytes = part_bytes_per_step(config, context)
        floor_bytes["total"] = sum(floor_bytes.values())
        floor_us = None if copy_bw is None else {p: b / copy_bw * 1e6 for p, b in floor_bytes.items()}
        doc["layers"] = {"times": layer_times_by_tier, "kinds": kinds, "method": layer_method,
                         "floor": {"context": context, "bytes": floor_bytes, "us": floor_us}}
    print(render(doc, args.output))
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(doc, f, indent=2)
    if args.png:
        if layer_times_by_tier:
            from .plots import part_roofline

            part_roofline(args.png, layer_times_by_tier, doc["layers"]["floor"]["us"], doc["layers"]["kinds"],
                          f"one decode step, {config.name}, {doc['environment']['device']}")
        else:
            print("no per-layer times to draw; no PNG written", file=sys.stderr)
    return 0
