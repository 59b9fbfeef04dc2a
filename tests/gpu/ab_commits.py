"""The megakernel of two commits, side by side (`tests/gpu/run_all.sh ab`; the base commit's tree
is a `git archive` copy carried to the GPU machine):

    PYTHONPATH=<tree> python tests/gpu/ab_commits.py snapshot OUT.pt
        what one build computes, through the public tier interface only (so it runs against any
        commit's tree): one decode step's logits and per-layer trace after a 40-token prompt, and
        128 greedy tokens fed back on the device; where the tree decodes a batch, the same for
        8 rows at different positions (one traced step, 32 greedy steps)
    python tests/gpu/ab_commits.py compare BASE.pt NEW.pt
        bit for bit: the tokens, the logits, every traced part (relative difference where they differ)
    python tests/gpu/ab_commits.py summary OUT.json BASE1.json NEW1.json BASE2.json NEW2.json ...
        `compare bench --json` files of alternating runs (base, new, base, new, ...) → one table:
        every workload's median per run, the mean over runs, new against base
"""

from __future__ import annotations

import sys

import torch

BATCH = 8  # the snapshot's batch: rows prefilled to different lengths, decoded together


def snapshot(path: str) -> None:
    from compare import load_tier
    from reference import ModelConfig, perturb_norms, random_weights

    config = ModelConfig.qwen3_5_0_8b()
    weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
    tier = load_tier("megakernel", config, weights, device="cuda")
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (1, 40), generator=gen)
    state = tier.new_state(max_seq_len=256)
    logits0 = tier.prefill(prompt, state)
    trace = {}
    logits = tier.decode(logits0.argmax(-1), state, trace=trace)
    ids, tokens = logits.argmax(-1).to(tier.device), []
    for _ in range(128):
        ids = tier.decode_argmax(ids, state)
        tokens.append(ids)
    snap = {"logits": logits.cpu(), "trace": trace, "tokens": torch.cat(tokens).cpu(), "device": torch.cuda.get_device_name()}
    if getattr(tier, "max_batch", 1) >= BATCH:  # a batch of rows at different positions, where the tree decodes one
        state = tier.new_state(BATCH, max_seq_len=256)
        for r in range(BATCH):
            tier.prefill(torch.randint(0, config.vocab_size, (1, 16 + 5 * r), generator=gen), state, row=r)
        btrace = {}
        blogits = tier.decode(torch.randint(0, config.vocab_size, (BATCH,), generator=gen), state, trace=btrace)
        ids, btokens = blogits.argmax(-1).to(tier.device), []
        for _ in range(32):
            ids = tier.decode_argmax(ids, state)
            btokens.append(ids)
        snap.update(batch_logits=blogits.cpu(), batch_trace=btrace, batch_tokens=torch.stack(btokens).cpu())
    torch.save(snap, path)
    print(f"{path}: first tokens {torch.cat(tokens)[:8].tolist()}")


def compare(a_path: str, b_path: str) -> int:
    a, b = torch.load(a_path), torch.load(b_path)
    same_tokens = torch.equal(a["tokens"], b["tokens"])
    first_diff = next((i for i, (x, y) in enumerate(zip(a["tokens"].tolist(), b["tokens"].tolist())) if x != y), None)
    print(f"128 greedy tokens: {'identical' if same_tokens else f'differ from step {first_diff}'}")
    print(f"one step's logits: {'bit-identical' if torch.equal(a['logits'], b['logits']) else 'differ'} "
          f"(max |diff| {float((a['logits'] - b['logits']).abs().max()):.3e})")
    differing = [k for k in a["trace"] if not torch.equal(a["trace"][k], b["trace"][k])]
    print(f"trace: {len(a['trace']) - len(differing)} of {len(a['trace'])} parts bit-identical"
          + (f"; differing: {', '.join(differing[:8])}" if differing else ""))
    for k in differing[:8]:
        ref = a["trace"][k].float()
        rel = float((b["trace"][k].float() - ref).norm() / ref.norm().clamp_min(1e-30))
        print(f"  {k}: relative L2 difference {rel:.3e}")
    if "batch_logits" in a and "batch_logits" in b:
        bt = torch.equal(a["batch_tokens"], b["batch_tokens"])
        print(f"batch of {BATCH}: 32 greedy steps {'identical' if bt else 'differ'}; one step's logits "
              f"{'bit-identical' if torch.equal(a['batch_logits'], b['batch_logits']) else 'differ'} (max |diff| "
              f"{float((a['batch_logits'] - b['batch_logits']).abs().max()):.3e}); trace "
              f"{sum(torch.equal(a['batch_trace'][k], b['batch_trace'][k]) for k in a['batch_trace'])} of "
              f"{len(a['batch_trace'])} parts bit-identical")
        same_tokens &= bt
    else:
        print(f"batch of {BATCH}: not in both snapshots (a tree that decodes batch 1 only)")
    return 0 if same_tokens else 1


def summary(out_path: str, paths: list[str]) -> int:
    import json
    import statistics

    runs = []
    for i, path in enumerate(paths):
        doc = json.load(open(path))
        side = "base" if i % 2 == 0 else "new"
        runs.append({"side": side, "file": path, "commit": doc["environment"]["commit"],
                     "copy_bandwidth_Bps": doc["copy_bandwidth_Bps"],
                     "tok_s": {r["test"]: r["tok_s"]["median"] for r in doc["results"] if r["tier"] == "megakernel"}})
    tests = list(dict.fromkeys(t for r in runs for t in r["tok_s"]))
    print(f"{'test':18s} " + " ".join(f"{r['side'] + str(i // 2 + 1):>10s}" for i, r in enumerate(runs))
          + f" {'base mean':>10s} {'new mean':>10s} {'new/base':>9s}")
    table = {}
    for t in tests:
        base = [r["tok_s"][t] for r in runs if r["side"] == "base" and t in r["tok_s"]]
        new = [r["tok_s"][t] for r in runs if r["side"] == "new" and t in r["tok_s"]]
        b, n = statistics.mean(base), statistics.mean(new)
        table[t] = {"base": base, "new": new, "base_mean": b, "new_mean": n, "change": n / b - 1}
        print(f"{t:18s} " + " ".join(f"{r['tok_s'].get(t, float('nan')):10,.1f}" for r in runs)
              + f" {b:10,.1f} {n:10,.1f} {100 * (n / b - 1):+8.2f}%")
    with open(out_path, "w") as f:
        json.dump({"runs": runs, "tests": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "snapshot":
        snapshot(rest[0])
    elif mode == "compare":
        sys.exit(compare(*rest))
    elif mode == "summary":
        sys.exit(summary(rest[0], rest[1:]))
    else:
        sys.exit(f"unknown mode {mode!r}; expected snapshot, compare or summary")
