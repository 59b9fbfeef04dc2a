"""A/B timing of megakernel schedule variants in one process, interleaved (A B C A B C ...)
so that a drift of the machine hits every variant alike. A variant is the default tier with
some attributes changed:

    python -m megakernel.ab base ef:flags=+2048 s16:positions_per_split=16 --rounds 3 --depth 4096

`NAME[:attr=value,...]`; `flags=+N` / `flags=-N` set / clear bits of the default flags, a
plain number replaces them. Prints tg128 (and tg128 after a `--depth`-token prompt) per
variant and round, the median over rounds, and whether the variant's logits for one decode
step equal the first variant's bit for bit (else their largest difference)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch

ATTRS = ("flags", "positions_per_split", "ring_inflight", "ring_slots", "pf_dist", "grid")


def parse_variant(spec: str, default_flags: int) -> tuple[str, dict]:
    name, _, body = spec.partition(":")
    if not name:
        raise SystemExit(f"variant {spec!r}: the name before ':' is empty (expected NAME[:attr=value,...])")
    attrs = {}
    for item in filter(None, body.split(",")):
        key, eq, value = item.partition("=")
        if not eq or key not in ATTRS:
            raise SystemExit(f"variant {spec!r}: {item!r} is not attr=value with attr one of {', '.join(ATTRS)}")
        try:
            number = int(value, 0)
        except ValueError:
            raise SystemExit(f"variant {spec!r}: {value!r} is not an integer") from None
        if key == "flags" and value[:1] in "+-":
            number = default_flags | number if value[0] == "+" else default_flags & ~(-number)
        attrs[key] = number
    return name, attrs


def apply(tier, default: dict, attrs: dict) -> None:
    """The tier's defaults, then the variant's changes."""
    for k, v in {**default, **attrs}.items():
        setattr(tier, k, v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", nargs="+", help="NAME[:attr=value,...] (the first is the reference for the bits)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every variant (default 3)")
    ap.add_argument("--reps", type=int, default=3, help="tg128 repetitions per round (median; default 3)")
    ap.add_argument("--depth", type=int, default=0, help="also tg128 after a prompt of this many tokens (0: off)")
    ap.add_argument("--anatomy", action="store_true", help="also print each variant's phase anatomy (timing mode)")
    ap.add_argument("--gaps", action="store_true",
                    help="also print each variant's kernel span and the gap between back-to-back launches (timing mode)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)

    from megakernel.bench import anatomy_lines, launch_gaps, phase_anatomy, tg
    from megakernel.tier import MegakernelTier
    from reference import ModelConfig, perturb_norms, random_weights

    variants = [parse_variant(v, MegakernelTier.flags) for v in args.variants]
    config = ModelConfig.qwen3_5_0_8b()  # the built-in random weights at the real shapes
    weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
    mk = MegakernelTier(config, weights, device="cuda")
    default = {k: getattr(mk, k) for k in ATTRS}

    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (1, 40), generator=gen)
    base_state = mk.new_state(max_seq_len=64)
    mk.prefill(prompt, base_state)
    token = torch.tensor([7])
    results, ref = {}, None
    for name, attrs in variants:
        apply(mk, default, attrs)
        logits = mk.decode(token, mk.clone_state(base_state))
        if ref is None:
            ref = logits
        diff = float((logits.float() - ref.float()).abs().max())
        results[name] = {"attrs": attrs, "same_bits": bool(torch.equal(logits, ref)), "max_logit_diff": diff, "tg128": []}
        if args.depth:
            results[name][f"tg128_d{args.depth}"] = []
    for rnd in range(args.rounds):
        for name, attrs in variants:
            apply(mk, default, attrs)
            r = results[name]
            r["tg128"].append(tg(mk, reps=args.reps)["tok_s_median"])
            line = f"round {rnd + 1} {name:14s} tg128 {r['tg128'][-1]:8.1f}"
            if args.depth:
                r[f"tg128_d{args.depth}"].append(tg(mk, reps=args.reps, prompt_len=args.depth)["tok_s_median"])
                line += f"  d{args.depth} {r[f'tg128_d{args.depth}'][-1]:8.1f}"
            print(line, flush=True)
    print(f"\n{'variant':14s} {'tg128':>8s} {'vs first':>8s}" + (f" {'d' + str(args.depth):>8s} {'vs first':>8s}" if args.depth else "")
          + "  bits")
    first = None
    for name, _ in variants:
        r = results[name]
        r["tg128_median"] = statistics.median(r["tg128"])
        row = [r["tg128_median"]]
        if args.depth:
            r["depth_median"] = statistics.median(r[f"tg128_d{args.depth}"])
            row.append(r["depth_median"])
        first = first or row
        cells = "".join(f" {v:8.1f} {100 * (v / f - 1):+7.2f}%" for v, f in zip(row, first))
        bits = "same" if r["same_bits"] else f"max |dlogit| {r['max_logit_diff']:.2e}"
        print(f"{name:14s}{cells}  {bits}", flush=True)
    if args.gaps:
        print("\nback-to-back launches (timing mode, means over 15 pairs): kernel span, gap from one's argmax to the next's "
              "start, restart (to the next's embedding row normed), first phase (to its barrier's exit)")
        for name, attrs in variants:
            apply(mk, default, attrs)
            g = results[name]["gaps"] = launch_gaps(mk)
            if g is None:
                print(f"{name:14s} no stamps (MKF_STREAM_ONLY)", flush=True)
                continue
            print(f"{name:14s} span {g['span_us']:7.1f} us  gap {g['gap_us']:+6.2f} us (min {g['gap_min_us']:+6.2f})  "
                  f"restart {g['restart_us']:5.2f} us  first phase {g['first_phase_us']:5.2f} us", flush=True)
    if args.anatomy:
        for name, attrs in variants:
            apply(mk, default, attrs)
            an = phase_anatomy(mk, prompt_len=64)
            results[name]["anatomy"] = an
            print(f"\nphase anatomy, {name} (64-token context; us from block 0's barrier exit)")
            print("\n".join(anatomy_lines(an)), flush=True)
    apply(mk, default, {})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
