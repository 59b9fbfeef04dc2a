"""A short GPU run of the megakernel for compute-sanitizer (memcheck / synccheck / racecheck):

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck --kernel-name kns=mk_decode \
        python -m megakernel sanitize-run --steps 2 [--schedule ring|register] [--grid G] [--batch B]

Weights are drawn on the GPU (seeded, std 0.02, norms off their init values), the state
is filled with a random 5-token context (no prefill: see `random_context`), then `steps`
decode launches run (logits, trace and argmax paths,
and one with a split attention), then a step the kernel refuses (an id outside the vocabulary:
the device-side check's path); with the ring schedule, two many-token launches (decode_greedy:
4 steps, then the same 4 ending after the second at its stop ids, the producer left waiting). Prints one line per step and exits non-zero on NaN or when the
refused step is not reported. `--batch B` (the ring schedule): a state of B rows at different
positions (5, 6, ...; the split-K steps mix rows at 40 and 300 tokens), the refused id in the last row.

`--prefill N` instead runs the fast prefill (eagerly, no graph) of N tokens on a fresh
state, then of N more after them (the continuing path: cache prefix copy, masked
attention, conv ring), then one decode step: memcheck of every kernel it launches, synccheck of
the prefill's own (`--kernel-name kns=mkp`; unfiltered, the GEMMs' barriers overflow its tracking).
"""

from __future__ import annotations

import torch


def gpu_random_weights(config, seed=0, device="cuda"):
    from reference.weights import NORM_ZERO_CENTRED, expected_shapes

    gen = torch.Generator(device=device).manual_seed(seed)
    w = {}
    for name, shape in expected_shapes(config).items():
        if name.endswith(NORM_ZERO_CENTRED) or name == "model.norm.weight":
            t = torch.randn(shape, generator=gen, device=device) * 0.05
        elif name.endswith(("linear_attn.norm.weight", "dt_bias")):
            t = 1.0 + torch.randn(shape, generator=gen, device=device) * 0.05
        elif name.endswith("A_log"):
            t = torch.empty(shape, device=device).uniform_(0.01, 16, generator=gen).log_()
        else:
            t = torch.randn(shape, generator=gen, device=device) * config.initializer_range
        w[name] = t.to(torch.bfloat16)
    return w


def tool_model(config_name: str | None = None, seed: int = 0):
    """(config, weights) of the megakernel's tools (anatomy, phases, soak): the 0.8B with reference
    random weights (seeded, the norms perturbed: what their earlier runs used), or a built-in config
    the kernels build (`--config NAME`) with weights drawn on the GPU (a 9B's draw on the CPU takes
    a minute). An unknown or unbuildable name is a TierInputError naming why."""
    from reference import ModelConfig, TierInputError, perturb_norms, random_weights

    from .family import config_refusal

    if config_name is None:
        config = ModelConfig.qwen3_5_0_8b()
        return config, perturb_norms(random_weights(config, seed=seed, dtype=torch.bfloat16))
    try:
        config = ModelConfig.named(config_name)
    except ValueError as e:
        raise TierInputError(str(e)) from e
    if config_refusal(config):
        raise TierInputError(config_refusal(config))
    return config, gpu_random_weights(config, seed=seed)


def random_context(state, n, seed: int):
    """Fill `state` as if n tokens had been prefilled, with random values, on the GPU: the
    decode kernel reads the same memory as after a real prefill, but the instrumented
    process runs no cuBLAS (compute-sanitizer racecheck fails inside Hopper cuBLAS GEMMs
    with an internal error before the megakernel is ever reached)."""
    gen = torch.Generator(device=state.dn_state.device).manual_seed(seed)
    for t, scale in ((state.dn_state, 0.05), (state.conv_ring, 1.0), (state.k_cache, 1.0), (state.v_cache, 1.0)):
        t.copy_(torch.randn(t.shape, generator=gen, device=t.device) * scale)
    state.positions = list(n) if isinstance(n, (list, tuple)) else [n] * state.batch_size


def sanitize_run(steps: int = 2, schedule: str | None = None, grid: int | None = None, batch: int = 1, config=None) -> int:
    """`schedule`: "ring" or "register" (None: the tier's). Even steps write the logits and the
    trace, odd ones take the fused argmax; then a step at a 40-token context (split-K with the
    out-proj's merge) and one at a 300-token context (split-K merged by the last unit). `grid`:
    fewer blocks (less instrumented work per launch). `config`: another buildable size (default the
    0.8B). Every stage prints a line first, so a crash in the instrumented process shows where it happened."""
    from reference import ModelConfig, TierInputError

    from .tier import MegakernelTier

    config = config or ModelConfig.qwen3_5_0_8b()
    tier = MegakernelTier(config, gpu_random_weights(config), device="cuda")
    if schedule is not None:
        tier.schedule = schedule
    if grid is not None:
        tier.grid = grid
    B = batch
    print(f"schedule {tier.schedule}, grid {tier.grid}, batch {B}; a random context of 5 tokens (row b: 5 + b)",
          flush=True)
    state = tier.new_state(batch_size=B, max_seq_len=64)
    gen = torch.Generator().manual_seed(0)
    random_context(state, [5 + b for b in range(B)], seed=1)
    torch.cuda.synchronize()
    ids = torch.randint(0, config.vocab_size, (B,), generator=gen)
    bad = 0
    for step in range(steps):  # even steps: logits + trace; odd: fused argmax
        print(f"step {step}: launching", flush=True)
        if step % 2 == 0:
            logits = tier.decode(ids, state, trace={})
            nxt = logits.argmax(-1)
        else:
            nxt = tier.decode_argmax(ids, state)
            logits = torch.zeros(1)
        torch.cuda.synchronize()
        ok = bool(torch.isfinite(logits).all())
        bad += not ok
        print(f"step {step}: positions {state.positions}, next {nxt.tolist()}, finite {ok}", flush=True)
        ids = nxt.view(B)
    print("refused step: launching (an id outside the vocabulary)", flush=True)
    bad_ids = ids.clone().to(tier.device)
    bad_ids[-1] = config.vocab_size + 7
    tier.decode_argmax(bad_ids, state)
    try:
        tier.check(state)
        print("refused step: NOT reported", flush=True)
        bad += 1
    except TierInputError as e:
        print(f"refused step: {e}", flush=True)
    # longer contexts: the attention's split-K partials merged by the out-proj (40 tokens: 2
    # splits) and by the last unit of a kv head (300 tokens: 10 splits)
    for n, seed in ((40, 2), (300, 3)):
        other = 340 - n  # with a batch, the odd rows take the other context: both merges in one launch
        ctx = [n if b % 2 == 0 else other for b in range(B)]
        print(f"split-K: a random context of {ctx} tokens", flush=True)
        state2 = tier.new_state(batch_size=B, max_seq_len=max(ctx) + 8)
        random_context(state2, ctx, seed=seed)
        torch.cuda.synchronize()
        print(f"split-K: launching (tokens {ids.tolist()})", flush=True)
        logits = tier.decode(ids, state2)
        torch.cuda.synchronize()
        ok = bool(torch.isfinite(logits).all())
        bad += not ok
        print(f"split-K step: positions {state2.positions}, finite {ok}", flush=True)
    if tier.schedule == "ring":  # many tokens per launch: to the end, and ended early at stop ids
        runs = []
        for stop in ((), None):
            many = tier.new_state(batch_size=B, max_seq_len=64)
            random_context(many, [5 + b for b in range(B)], seed=4)
            stop = stop if stop is not None else runs[0][1].tolist()
            print(f"many tokens: one launch of 4 steps, stop ids {list(stop)}", flush=True)
            runs.append(tier.decode_greedy(ids, many, 4, stop_ids=stop))
            print(f"many tokens: ids {runs[-1].tolist()}", flush=True)
        first = runs[0].tolist()  # it ends after the first step by which every row has produced a stop id
        n = next(i + 1 for i in range(4) if all(any(first[j][b] in first[1] for j in range(i + 1)) for b in range(B)))
        same = runs[1].shape[0] == n and torch.equal(runs[1], runs[0][:n])
        bad += not same
        print(f"many tokens: the launch with stop ids ended after step {n} with the same ids: {same}", flush=True)
    return 1 if bad else 0


def sanitize_prefill(n: int, config=None) -> int:
    """Fast prefill of n tokens, then n more, then one decode step; non-zero exit on NaN. The state
    holds at least 1,100 positions, so the second prefill runs padded to a multiple of 64 rows with
    its earlier keys in 3 pieces (prefill.context_pieces), two of them empty: attn_merge_gate too."""
    from reference import ModelConfig

    from .prefill import FastPrefill
    from .tier import MegakernelTier

    config = config or ModelConfig.qwen3_5_0_8b()
    tier = MegakernelTier(config, gpu_random_weights(config), device="cuda")
    if tier.fast_prefill is None:
        print(f"no fast prefill here: {tier.prefill_note}", flush=True)
        return 2
    tier.fast_prefill = FastPrefill(tier, use_graph=False)
    state = tier.new_state(max_seq_len=max(2 * n + 1, 1100))
    ids = torch.randint(0, config.vocab_size, (1, 2 * n + 1), generator=torch.Generator().manual_seed(0))
    bad = 0
    for what, run in (("prefill of the first half", lambda: tier.prefill(ids[:, :n], state)),
                      ("prefill of the second half", lambda: tier.prefill(ids[:, n:2 * n], state)),
                      ("decode", lambda: tier.decode(ids[0, 2 * n:], state))):
        print(f"{what}: launching", flush=True)
        logits = run()
        torch.cuda.synchronize()
        ok = bool(torch.isfinite(logits).all())
        bad += not ok
        print(f"{what}: seq_len {state.seq_len}, finite {ok}", flush=True)
    return 1 if bad else 0
