"""Device timing of the Triton tier: `python -m triton_kernels.bench_dev --out DIR`.

Batch 1, bf16, the real Qwen3.5-0.8B shapes with seeded random weights. Every figure is
the median (with min and max) of repeats timed with CUDA events after a warm-up.
  gemv      each decode GEMV shape: our kernel (the table's config and a sweep of others;
            a clear winner replaces the table's entry for the sections after it) and
            cuBLAS, over rotated weight copies (no L2 reuse), replayed from a graph
  gemv_all  every GEMV of one decode step, back to back in one graph (triton vs cublas)
  profile   device time per kernel name over graph-replayed decode steps (torch.profiler)
Writes triton_dev.json and triton_dev.md into DIR; each section is saved as it finishes.
The tier's tokens/s (and the share of the measured copy bandwidth) come from `python -m
compare bench`; its variants (eager or graphed, our GEMV or cuBLAS) side by side from
`python -m compare ab --tier triton graph eager:cuda_graph=false cublas:gemv=cublas --pp 520`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import traceback

import torch
import torch.nn.functional as F


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def graph_time_ms(fn, calls_per_replay, replays=20, warmup=3):
    """Capture `fn` (which makes `calls_per_replay` calls) in a graph; ms per call."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(warmup):
        graph.replay()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls_per_replay)
    return stats(times)


def gemv_candidates(N, K):
    """(BLOCK_N, BLOCK_K, num_warps) configs to sweep for an [N, K] weight."""
    full_k = min(4096, 1 << (K - 1).bit_length())
    for block_n in (1, 2, 4, 8):
        for warps in (4, 8):
            yield block_n, full_k, warps


def bench_gemv(results, sweep=True):
    """Time each decode GEMV shape; with `sweep`, also the candidates, and adopt a winner
    (into gemv.TUNED, for the rest of the run) when it beats the table by over 3%."""
    from triton_kernels import gemv as gemv_module
    from triton_kernels.gemv import gemv, gemv_config

    device = torch.device("cuda")
    rows = []
    for N, K in list(gemv_module.TUNED):
        nbytes = N * K * 2
        copies = max(2, -(-256 * 2**20 // nbytes))
        weights = [torch.randn(N, K, device=device, dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
        x = torch.randn(1, K, device=device, dtype=torch.bfloat16)
        chosen = tuple(gemv_config(N, K))
        configs = [chosen] + ([c for c in gemv_candidates(N, K) if c != chosen] if sweep else [])
        entry = {"N": N, "K": K, "MB": nbytes / 1e6, "chosen": list(chosen), "configs": []}
        for cfg in configs:
            try:
                t = graph_time_ms(lambda: [gemv(x, w, config=cfg) for w in weights], copies)
                entry["configs"].append({"config": list(cfg), "us": t["median"] * 1e3,
                                         "GBps": nbytes / t["median"] / 1e6})
            except Exception as e:  # a config that does not compile or fit: note it, go on
                entry["configs"].append({"config": list(cfg), "error": repr(e)[:200]})
        t = graph_time_ms(lambda: [F.linear(x, w) for w in weights], copies)
        entry["cublas"] = {"us": t["median"] * 1e3, "GBps": nbytes / t["median"] / 1e6}
        ok = [c for c in entry["configs"] if "us" in c]
        entry["best"] = min(ok, key=lambda c: c["us"]) if ok else None
        if entry["best"] and "us" in entry["configs"][0] and entry["best"]["us"] < 0.97 * entry["configs"][0]["us"]:
            gemv_module.TUNED[(N, K)] = tuple(entry["best"]["config"])
        entry["used"] = list(gemv_module.TUNED[(N, K)])
        rows.append(entry)
        weights.clear()
        torch.cuda.empty_cache()
        print(f"gemv {N}x{K}: table {entry['configs'][0].get('us', float('nan')):.1f} us, "
              f"best {entry['best']}, cublas {entry['cublas']['us']:.1f} us, using {entry['used']}", flush=True)
    results["gemv"] = rows


def bench_gemv_all(results, tier):
    """Every decode GEMV of one token (fused weights, lm_head included) in one graph."""
    from triton_kernels.gemv import gemv

    w = tier.model.w
    mats = [t for k, t in w.items() if t.dim() == 2 and k.endswith("weight") and "conv1d" not in k]
    lm = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    total = sum(m.numel() * 2 for m in mats)
    xs = {m.shape[1]: torch.randn(1, m.shape[1], device="cuda", dtype=torch.bfloat16) for m in mats}
    out = {"matrices": len(mats), "bytes": total}
    for name, fn in (("triton", lambda m: gemv(xs[m.shape[1]], m, out_dtype=torch.float32 if m is lm else None)),
                     ("cublas", lambda m: F.linear(xs[m.shape[1]], m))):
        t = graph_time_ms(lambda: [fn(m) for m in mats], 1, replays=10)
        out[name] = {"ms": t["median"], "tok_per_s": 1e3 / t["median"], "TBps": total / t["median"] / 1e9}
        print(f"all GEMVs of a step, {name}: {t['median']:.3f} ms", flush=True)
    results["gemv_all"] = out


def bench_profile(results, tier, steps=20):
    """Device time per kernel name over `steps` graph-replayed decode steps."""
    from torch.profiler import ProfilerActivity, profile

    ids = torch.randint(0, tier.config.vocab_size, (1, 16), generator=torch.Generator().manual_seed(2))
    out, graphed = {}, tier.cuda_graph
    for graph in (True, False):
        tier.cuda_graph = graph
        state = tier.new_state(1, 4096)
        token = tier.prefill(ids, state).argmax(-1)
        for _ in range(3):
            token = tier.decode_argmax(token, state)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                token = tier.decode_argmax(token, state)
            torch.cuda.synchronize()
        wall_ms = (time.perf_counter() - t0) * 1e3 / steps
        rows = []
        for evt in prof.key_averages():
            dev_us = getattr(evt, "self_device_time_total", None)
            if dev_us is None:
                dev_us = getattr(evt, "self_cuda_time_total", 0)
            if dev_us > 0:
                rows.append({"kernel": evt.key[:90], "calls_per_step": evt.count / steps,
                             "us_per_step": dev_us / steps})
        rows.sort(key=lambda r: -r["us_per_step"])
        kernel_us = sum(r["us_per_step"] for r in rows)
        out["graph" if graph else "eager"] = {"wall_ms_per_step_profiled": wall_ms, "kernel_us_per_step": kernel_us,
                                              "kernels": rows}
        print(f"profile {'graph' if graph else 'eager'}: kernels {kernel_us:.0f} us/step, "
              f"wall {wall_ms * 1e3:.0f} us/step (under the profiler)", flush=True)
        for r in rows[:12]:
            print(f"  {r['us_per_step']:8.1f} us  {r['calls_per_step']:5.1f}x  {r['kernel']}", flush=True)
    tier.cuda_graph = graphed
    results["profile"] = out


def write(results, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "triton_dev.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(out_dir, "triton_dev.md"), "w") as f:
        f.write(markdown(results))


def markdown(r):
    env = r.get("environment", {})
    lines = [f"# Triton tier on {env.get('device')} ({env.get('date')})", "",
             f"torch {env.get('torch')}, triton {env.get('triton')}, CUDA {env.get('cuda')}, commit {env.get('commit')}. "
             "Batch 1, bf16, random weights; medians of repeats (min–max).", ""]
    if "gemv_all" in r:
        g = r["gemv_all"]
        lines += ["## Every GEMV of one decode step in one graph", "", "| backend | ms | tok/s bound | TB/s |",
                  "| --- | --- | --- | --- |"]
        for name in ("triton", "cublas"):
            if name in g:
                lines.append(f"| {name} | {g[name]['ms']:.3f} | {g[name]['tok_per_s']:.0f} | {g[name]['TBps']:.2f} |")
        lines.append("")
    if "gemv" in r:
        lines += ["## GEMV per shape (rotated weights, graph replay)", "",
                  "(BLOCK_N, BLOCK_K, num_warps); the tier ran with the last column's config.", "",
                  "| N×K | MB | table config | µs | GB/s | best config | µs | GB/s | cuBLAS µs | GB/s | used |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for e in r["gemv"]:
            c, b = e["configs"][0], e.get("best") or {}
            c = dict(c, config=c.get("config", ()))
            lines.append(f"| {e['N']}×{e['K']} | {e['MB']:.1f} | {tuple(c['config'])} | {c.get('us', float('nan')):.1f} | "
                         f"{c.get('GBps', float('nan')):.0f} | {tuple(b.get('config', ()))} | {b.get('us', float('nan')):.1f} | "
                         f"{b.get('GBps', float('nan')):.0f} | {e['cublas']['us']:.1f} | {e['cublas']['GBps']:.0f} | "
                         f"{tuple(e.get('used', ()))} |")
        lines.append("")
    if "profile" in r:
        for mode, p in r["profile"].items():
            lines += [f"## Device time per kernel, {mode} decode (torch.profiler)", "",
                      f"Sum of kernel time {p['kernel_us_per_step']:.0f} µs per step; wall time under the profiler "
                      f"{p['wall_ms_per_step_profiled'] * 1e3:.0f} µs per step.", "",
                      "| kernel | calls/step | µs/step |", "| --- | --- | --- |"]
            for k in p["kernels"][:20]:
                lines.append(f"| `{k['kernel']}` | {k['calls_per_step']:.0f} | {k['us_per_step']:.1f} |")
            lines.append("")
    if r.get("errors"):
        lines += ["## Errors", ""] + [f"- {e}" for e in r["errors"]] + [""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for triton_dev.{json,md}")
    parser.add_argument("--no-sweep", action="store_true", help="time only the chosen GEMV config per shape")
    parser.add_argument("--sections", default="gemv,gemv_all,profile")
    args = parser.parse_args(argv)

    import triton

    from reference import ModelConfig, random_weights
    from triton_kernels.tier import TritonTier

    steps = {"gemv": lambda: bench_gemv(results, sweep=not args.no_sweep),
             "gemv_all": lambda: bench_gemv_all(results, tier), "profile": lambda: bench_profile(results, tier)}
    sections = args.sections.split(",")
    unknown = [s for s in sections if s not in steps]
    if unknown:
        parser.error(f"--sections: unknown {unknown}; expected some of {list(steps)}")
    props = torch.cuda.get_device_properties(0)
    results = {"environment": {"device": props.name, "sm_count": props.multi_processor_count, "torch": torch.__version__,
                               "triton": triton.__version__, "cuda": torch.version.cuda,
                               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "commit": os.environ.get("WORKBENCH_COMMIT", "unknown")}, "errors": []}
    tier = None
    if {"gemv_all", "profile"} & set(sections):
        config = ModelConfig.qwen3_5_0_8b()
        tier = TritonTier(config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda",
                          dtype=torch.bfloat16)
    for name in sections:
        try:
            steps[name]()
        except Exception:
            results["errors"].append(f"{name}: {traceback.format_exc()[-1500:]}")
            print(results["errors"][-1], flush=True)
        write(results, args.out)
    print(markdown(results))


if __name__ == "__main__":
    main()
