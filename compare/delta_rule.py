"""`python -m compare delta-rule`: the prefill's chunked gated delta rule alone, one DeltaNet layer at
the model's shapes, for every implementation importable here (megakernel/prefill_delta_rule.py:
fla's Triton kernels; FlashQLA's, the Qwen team's kernels and the fast prefill's default where they
run; FlashInfer's GDN prefill, the serving engines' other kernel), against fla in the same run and
against the fp32 reference. Exit status 1 where a rule raised (its rows say FAILED and how).

    python -m compare delta-rule [--pp 256,520,4096,32768] [--rules fla,flash-qla,flashinfer] [--out DIR] [--png PATH]
    python -m compare delta-rule --rerender DIR/delta_rule.json [--png PATH]   (the table and chart again, no GPU)

Rows: every prompt length x {a fresh state, a carried one} x {the decays of a model-like layer
(e^g ~ 0.95 a token), slow ones (e^g > 0.998: the state remembers the whole prompt)}. Per row and
rule: µs per layer (a CUDA graph of `--calls` calls, median of `--replays` replays), the same x
the model's DeltaNet layers, the speed against fla, and the relative error (Frobenius) of the output
and of the final state against reference/delta_rule.py's chunked rule in fp32 on the same bf16
inputs. A rule that cannot run here is listed with the reason, not left out silently.
"""

from __future__ import annotations

import json
import os
import sys

import torch

from reference import ModelConfig
from reference.delta_rule import gated_delta_rule_chunked
from reference.ops import l2norm

from .common import UsageError, environment
from .prefill import lengths
from .tables import markdown
from .timing import graph_us

STATES = ("fresh", "carried")
GATES = {"model": "e^g ~ 0.95 a token (logsigmoid(N(3, 1)))", "slow": "e^g > 0.998 a token (g ~ -U(0, 0.002))"}


def inputs(config, T: int, state: str, gates: str, seed: int, device):
    """One layer's prefill buffers (megakernel/prefill_delta_rule.py's layout): q, k l2-normed and v
    in bf16, g and beta in fp32, the initial state [1, value heads, V, K] in fp32."""
    gen = torch.Generator(device=device).manual_seed(seed)
    HK, HV, DK, DV = (config.linear_num_key_heads, config.linear_num_value_heads, config.linear_key_head_dim,
                      config.linear_value_head_dim)
    q = l2norm(x=torch.randn(1, T, HK, DK, device=device, generator=gen)).bfloat16()  # (normed before the rounding,
    k = l2norm(x=torch.randn(1, T, HK, DK, device=device, generator=gen)).bfloat16()  # as the prefill's dn_prep does)
    v = torch.randn(1, T, HV, DV, device=device, generator=gen).bfloat16()
    if gates == "model":
        g = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, device=device, generator=gen) + 3)
    else:
        g = -0.002 * torch.rand(1, T, HV, device=device, generator=gen)
    beta = torch.rand(1, T, HV, device=device, generator=gen)
    h0 = torch.zeros(1, HV, DV, DK, device=device)
    if state == "carried":
        h0 = 0.5 * torch.randn(1, HV, DV, DK, device=device, generator=gen)
    return q, k, v, g, beta, h0


def reference(q, k, v, g, beta, h0, scale):
    """The fp32 chunked rule on the same (bf16-rounded) inputs → o [1, T, HV, V], state [1, HV, V, K]."""
    HV = v.shape[2]
    group = HV // q.shape[2]  # value head h reads key head h // group
    qf, kf = (x.float().repeat_interleave(group, dim=2) for x in (q, k))
    o, s = gated_delta_rule_chunked(q=qf * scale, k=kf, v=v.float(), g=g, beta=beta,
                                    initial_state=h0.transpose(-1, -2))
    return o, s.transpose(-1, -2)


def relative_error(a, b) -> float:
    a, b = a.float(), b.float()
    if not torch.isfinite(a).all():
        return float("nan")
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def padded(q, k, v, g, beta, R: int, rule):
    """A T-row prompt's inputs to `rule` as the prefill's dn_prep writes them for a rule of R >= T rows
    (megakernel/prefill.py rule_rows): the rows past T padding — q, k, v and beta 0, g's step 0 — and g in the rule's
    form (prefill_delta_rule.rule_gates: summed within its chunks, a padding row then holding row T - 1's sum; or e^g)."""
    from megakernel.prefill_delta_rule import rule_gates

    T = q.shape[1]
    if R > T:
        q, k, v, g, beta = (torch.cat([x, x.new_zeros((1, R - T) + tuple(x.shape[2:]))], 1) for x in (q, k, v, g, beta))
    return q, k, v, rule_gates(g, rule), beta


def measure(config, rules, pps, calls: int, replays: int, seed: int, device):
    """Every (T, state, gates) x rule → rows (dicts), in the order of the table."""
    from megakernel import prefill_delta_rule
    from megakernel.prefill import rule_rows

    scale = config.linear_key_head_dim ** -0.5
    rows = []
    for T in pps:
        made, R = {}, rule_rows(T)
        for name in rules:  # one rule per prompt length, as a prefill plan makes it (for its R rows)
            try:
                made[name] = prefill_delta_rule.make(name, R, config.linear_num_value_heads, device)
            except ValueError as e:
                made[name] = str(e)
        for state in STATES:
            for gates in GATES:
                q, k, v, g, beta, h0 = inputs(config, T, state, gates, seed + T, device)
                o_ref, s_ref = reference(q, k, v, g, beta, h0, scale)
                base_us = None
                for name in rules:
                    row = {"T": T, "state": state, "gates": gates, "rule": name}
                    fn = made[name]
                    if isinstance(fn, str):
                        rows.append({**row, "unavailable": fn})
                        continue
                    print(f"pp{T} {state} {gates}: {name} ...", file=sys.stderr, flush=True)
                    h = h0.clone()
                    args = padded(q, k, v, g, beta, R, fn)
                    try:  # (a rule that fails is a row that says how; the other rules' rows still run)
                        o, final = fn(*args, scale, h)
                        o = o[:, :T]
                        torch.cuda.synchronize()
                        unchanged = bool(torch.equal(h, h0))  # the rule must not write its input state
                        us, how = graph_us(lambda: fn(*args, scale, h), calls, replays)
                    except Exception as e:  # (a sticky CUDA error fails the rows after it too, each saying so)
                        rows.append({**row, "failed": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"})
                        print(f"  failed: {rows[-1]['failed']}", file=sys.stderr, flush=True)
                        continue
                    base_us = us if name == rules[0] else base_us
                    rows.append({**row, "us": us, "timing": how, "pieces": fn.pieces, "route": fn.route, "layers_ms": us * len(config.linear_layers) / 1000.0,
                                 "vs_first": (base_us / us) if base_us else None,
                                 "err_o": relative_error(o, o_ref), "err_state": relative_error(final, s_ref),
                                 "input_state_unchanged": unchanged})
                    r = rows[-1]
                    print(f"  {us:9.1f} µs ({how}); error o {r['err_o']:.2e}, state {r['err_state']:.2e}",
                          file=sys.stderr, flush=True)
    return rows


def render(rows, config, rules) -> str:
    header = ["prompt", "state", "decays", "rule", "µs / layer", f"x {len(config.linear_layers)} layers ms",
              f"vs {rules[0]}", "output error", "state error", "timing"]
    body = []
    for r in rows:
        pieces = r.get("pieces", 1)  # (files before session 23 have none: no split)
        how = [f"{pieces} pieces"] * (pieces > 1) + ([r["route"]] if r.get("route") else [])
        cells = [f"pp{r['T']}", r["state"], r["gates"], r["rule"] + (f" ({', '.join(how)})" if how else "")]
        if "unavailable" in r or "failed" in r:
            why = f"not run: {r['unavailable']}" if "unavailable" in r else f"FAILED: {r['failed']}"
            body.append(cells + ["—", "—", "—", "—", "—", why])
            continue
        body.append(cells + [f"{r['us']:,.1f}", f"{r['layers_ms']:.3f}",
                             f"{r['vs_first']:.2f}x" if r["vs_first"] else "—", f"{r['err_o']:.2e}",
                             f"{r['err_state']:.2e}", r["timing"] + ("" if r["input_state_unchanged"] else
                                                                     "; WROTE ITS INPUT STATE")])
    notes = ["decays: " + "; ".join(f"{k}: {v}" for k, v in GATES.items()),
             "errors: relative (Frobenius) against reference/delta_rule.py's chunked rule in fp32 on the same bf16 inputs",
             "each rule runs the prompt's rows rounded up to its 64-row chunk, the rows past the prompt padding (q, k, v, "
             "beta 0, g's step 0), as the prefill gives them since 2026-12-07's session 47 (megakernel/prefill.py rule_rows); "
             "the errors are of the prompt's rows",
             "flash-qla takes g already summed within its 64-row chunks (the prefill's dn_prep writes it so; before "
             "2026-11-26's session 23 its time included that sum, ~2 µs); fla sums g itself; flashinfer takes the decay "
             "e^g, made before the timed calls (the prefill takes it in place after dn_prep, one elementwise launch)"]
    return markdown(header, body, right={4, 5, 6, 7, 8}) + "\n" + "\n".join(notes) + "\n"


def add_arguments(p):
    p.add_argument("--pp", default="256,520,4096,32768", help="prompt lengths (default: %(default)s)")
    p.add_argument("--rules", default="fla,flash-qla,flashinfer",
                   help="delta rules, the first the baseline of the speed column (default: %(default)s)")
    p.add_argument("--calls", type=int, default=20, help="calls per CUDA graph (default: %(default)s)")
    p.add_argument("--replays", type=int, default=7, help="replays, median (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for delta_rule.json / .md")
    p.add_argument("--png", metavar="PATH", help="also a chart: µs per layer and error against the prompt length")
    p.add_argument("--rerender", metavar="JSON", help="only the table (and --png) from a written delta_rule.json")


def chart(path: str, rows, rules, environment: dict) -> None:
    from .plots import delta_rule_chart

    delta_rule_chart(path, rows, rules, f"the prefill's chunked delta rule, one layer of the 0.8B | "
                                        f"{environment.get('device', '?')} | commit {environment.get('commit', '?')}")


def rerender(path: str, png: str | None) -> None:
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"--rerender {path}: cannot read it as JSON ({e}); expected a delta_rule.json") from None
    if not isinstance(doc, dict) or not {"rows", "rules"} <= set(doc):
        raise UsageError(f"{path}: no \"rows\" and \"rules\" in it; expected a delta_rule.json that `compare delta-rule` wrote")
    print(render(doc["rows"], ModelConfig.qwen3_5_0_8b(), doc["rules"]))
    if png:
        chart(png, doc["rows"], doc["rules"], doc.get("environment", {}))


def run(args) -> int:
    from megakernel.prefill_delta_rule import DELTA_RULES

    if args.rerender:
        rerender(args.rerender, args.png)
        return 0
    pps = lengths(args.pp, "--pp")
    if not pps:
        raise UsageError(f"--pp {args.pp!r}: no length in it; expected comma-separated lengths, e.g. 520,4096")
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    unknown = [r for r in rules if r not in DELTA_RULES]
    if not rules or unknown:
        raise UsageError(f"--rules {args.rules!r}: expected a comma-separated list of {', '.join(DELTA_RULES)}")
    if len(set(rules)) != len(rules):
        raise UsageError(f"--rules {args.rules!r}: a rule is named twice")
    for what, value in (("--calls", args.calls), ("--replays", args.replays)):
        if value < 1:
            raise UsageError(f"{what} {value}: expected at least 1")
    if not torch.cuda.is_available():
        raise UsageError("compare delta-rule times GPU kernels: no CUDA GPU is visible here")
    config = ModelConfig.qwen3_5_0_8b()
    rows = measure(config, rules, pps, args.calls, args.replays, args.seed, torch.device("cuda"))
    table = render(rows, config, rules)
    os.makedirs(args.out, exist_ok=True)
    env = environment()
    with open(os.path.join(args.out, "delta_rule.json"), "w") as f:
        json.dump({"environment": env, "rules": rules, "rows": rows}, f, indent=1)
    if args.png:
        chart(args.png, rows, rules, env)
    with open(os.path.join(args.out, "delta_rule.md"), "w") as f:
        f.write(table)
    print(table)
    failed = sum("failed" in r for r in rows)
    if failed:  # (the table and files hold every row; the exit status says that some rule did not run through)
        print(f"compare delta-rule: {failed} row(s) FAILED (the table's last column says how)", file=sys.stderr)
    return 1 if failed else 0
