"""What one tree's fast prefill computes, to compare two trees bit for bit (session 27):

    PYTHONPATH=<tree> python prefill_bits.py snapshot OUT.pt
        prompts of 1, 2, 7, 63, 65, 520 and 4,097 tokens on a fresh state, and 200 tokens on top of a 300-token
        context: each one's logits and the state it leaves (DeltaNet state, conv ring, the K/V rows written)
    python prefill_bits.py compare A.pt B.pt
        every tensor bit for bit; exit 1 where any differs
"""

from __future__ import annotations

import sys

import torch

LENGTHS = (1, 2, 7, 63, 65, 520, 4097)


def snapshot(path: str) -> None:
    from compare import load_tier
    from reference import ModelConfig, perturb_norms, random_weights

    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)), device="cuda")
    gen = torch.Generator().manual_seed(3)
    snap = {}
    cases = [(n, 0) for n in LENGTHS] + [(200, 300)]
    for n, ctx in cases:
        prompt = torch.randint(0, config.vocab_size, (1, n), generator=gen)
        context = torch.randint(0, config.vocab_size, (1, ctx), generator=gen) if ctx else None
        for way in ("eager", "graph"):  # a shape's first prefill runs eagerly, the second captures and replays
            state = tier.new_state(max_seq_len=4608)
            if ctx:
                tier.prefill(context, state)
            logits = tier.prefill(prompt, state)
            end = ctx + n
            snap[f"{n}@{ctx} {way}"] = {"logits": logits.cpu(), "dn_state": state.dn_state.cpu(),
                                        "conv_ring": state.conv_ring.cpu(), "k": state.k_cache[..., :end, :].cpu(),
                                        "v": state.v_cache[..., :end, :].cpu()}
            print(f"{n}@{ctx} {way}: argmax {int(logits.argmax())}", flush=True)
    torch.save(snap, path)


def compare(a_path: str, b_path: str) -> int:
    a, b = torch.load(a_path), torch.load(b_path)
    bad = 0
    for case in a:
        for name, x in a[case].items():
            y = b[case][name]
            same = x.shape == y.shape and torch.equal(x.view(torch.uint8) if x.dtype != torch.uint8 else x,
                                                      y.view(torch.uint8) if y.dtype != torch.uint8 else y)
            if not same:
                bad += 1
                d = (x.float() - y.float()).abs().max().item() if x.shape == y.shape else float("nan")
                print(f"{case} {name}: DIFFERENT (max abs diff {d:.3g})")
    print("prefill bits: identical" if not bad else f"prefill bits: {bad} tensors differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "snapshot":
        snapshot(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
