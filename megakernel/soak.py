"""A long run of the decode megakernel: `python -m megakernel soak --steps 100000`.

Greedy decode_argmax steps fed back on the device, in segments of `--reset-every` steps, each
on a fresh state (a random prompt of 32 tokens, fast prefill): what a serving loop does for
hours, compressed. Each segment also feeds one id outside the vocabulary (the device-side
check refuses it; the check raises; the state must go on as before). Measured and checked:
- the time per token, from CUDA events around every `--window` steps (no sync inside a
  window): p50, p99 and max of the windows, per segment and overall;
- every segment's last step runs twice, from one state and from its copy: as decode_argmax
  (fed back) and as decode (logits), whose logits must be finite and whose argmax must be
  the fed-back step's id;
- a hang is a step that does not finish: `--timeout` seconds of wall time in all.
Prints a line per segment and a summary; `--json PATH` writes every window's time.
Exit 1 on a NaN, a wrong or unreported refusal, or a drift of the per-token time (the last
segment's p50 more than 5% above the first's).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import torch


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


def soak(steps: int, reset_every: int, window: int, seed: int, timeout: float, json_path: str | None,
         config_name: str | None = None) -> int:
    from reference import TierInputError

    from .sanitize import tool_model

    from .tier import MegakernelTier

    if reset_every < window + 1 or steps < 1:
        raise SystemExit(f"error: --reset-every ({reset_every}) must exceed --window ({window}), --steps >= 1")
    config, weights = tool_model(config_name, seed=seed)
    tier = MegakernelTier(config, weights, device="cuda")
    gen = torch.Generator().manual_seed(seed)
    start, failures, segments, all_windows = time.monotonic(), [], [], []
    done = 0
    print(f"soak: {steps} steps, a fresh state every {reset_every}, per-token time over windows of {window} steps; "
          f"schedule {tier.schedule}, grid {tier.grid}", flush=True)
    while done < steps and not failures:
        segment, n = len(segments), min(reset_every, steps - done)
        prompt = torch.randint(0, config.vocab_size, (1, 32), generator=gen)
        state = tier.new_state(max_seq_len=32 + n + 1)
        ids = tier.prefill(prompt, state).argmax(-1).to(tier.device)
        # the device-side check: a refused step, raised by the next check; the state goes on as before
        tier.decode_argmax(torch.tensor([config.vocab_size + segment], device=tier.device), state)
        try:
            tier.check(state)
            failures.append(f"segment {segment}: the refused id was not reported")
        except TierInputError:
            pass
        events = [torch.cuda.Event(enable_timing=True) for _ in range((n - 1) // window + 1)]
        events[0].record()
        for i in range(n - 1):
            ids = tier.decode_argmax(ids, state)
            if (i + 1) % window == 0:
                events[(i + 1) // window].record()
                if time.monotonic() - start > timeout:
                    failures.append(f"segment {segment}: past the {timeout:.0f} s limit at step {done + i}")
                    break
        twin = tier.clone_state(state)  # (syncs: every window has been recorded)
        fed = tier.decode_argmax(ids, state)
        logits = tier.decode(ids, twin)
        finite, agree = bool(torch.isfinite(logits).all()), int(logits.argmax(-1)) == int(fed)
        if not finite or not agree:
            failures.append(f"segment {segment}: logits finite {finite}, argmax equals the fed-back step's {agree}")
        windows = [events[k - 1].elapsed_time(events[k]) * 1000 / window for k in range(1, len(events))]
        all_windows += windows
        row = {"segment": segment, "steps": n, "p50_us": statistics.median(windows),
               "p99_us": percentile(windows, 99), "max_us": max(windows)}
        segments.append(row)
        done += n
        print(f"segment {segment:3d}: {done:7d} steps, per token p50 {row['p50_us']:.1f} µs, p99 {row['p99_us']:.1f}, "
              f"max {row['max_us']:.1f}; logits finite {finite}, argmax agrees {agree}; "
              f"{time.monotonic() - start:.0f} s", flush=True)
    summary = {"steps": done, "segments": len(segments), "window": window,
               "p50_us": statistics.median(all_windows), "p99_us": percentile(all_windows, 99),
               "max_us": max(all_windows), "tokens_per_s_p50": 1e6 / statistics.median(all_windows),
               "wall_s": time.monotonic() - start, "failures": failures}
    if len(segments) > 1 and segments[-1]["p50_us"] > 1.05 * segments[0]["p50_us"]:
        failures.append(f"per-token time drifted: first segment p50 {segments[0]['p50_us']:.1f} µs, "
                        f"last {segments[-1]['p50_us']:.1f}")
    print(f"soak: {done} steps in {summary['wall_s']:.0f} s; per token p50 {summary['p50_us']:.1f} µs "
          f"({summary['tokens_per_s_p50']:.0f} tok/s), p99 {summary['p99_us']:.1f}, max {summary['max_us']:.1f}; "
          + ("no failure" if not failures else "FAILED: " + "; ".join(failures)), flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "summary": summary, "segments": segments,
                       "windows_us": all_windows}, f, indent=1)
    return 1 if failures else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m megakernel soak", description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--reset-every", type=int, default=5_000, help="steps per state (a fresh state and prompt after)")
    p.add_argument("--window", type=int, default=100, help="steps per timed window")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300.0, help="wall seconds before the run counts as hung")
    p.add_argument("--json", default=None)
    p.add_argument("--config", default=None, help="a built-in config the megakernel builds (default: the 0.8B)")
    a = p.parse_args(argv)
    return soak(a.steps, a.reset_every, a.window, a.seed, a.timeout, a.json, a.config)


if __name__ == "__main__":
    sys.exit(main())
