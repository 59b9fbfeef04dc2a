"""Choosing the next token from logits: greedy, or sampling with temperature, top-k and
top-p (nucleus), drawn from a seeded CPU generator so a seed gives the same text on any
device."""

from __future__ import annotations

import torch


def choose(logits: torch.Tensor, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
           generator: torch.Generator | None = None) -> int:
    """logits [vocab] → a token id. temperature 0 is greedy; top_k 0 and top_p 1 keep all."""
    if temperature == 0:
        return int(logits.argmax())
    scaled = logits.detach().float().cpu() / temperature                # [V]
    if 0 < top_k < scaled.numel():
        kth = torch.topk(scaled, top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p < 1.0:
        order = torch.argsort(scaled, descending=True)
        probs = torch.softmax(scaled[order], dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs                     # mass of the better tokens
        drop = order[before >= top_p]                                    # the best token always stays
        scaled[drop] = float("-inf")
    probs = torch.softmax(scaled, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))
