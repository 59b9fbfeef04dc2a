"""Choosing the next token from logits: greedy, or sampling with temperature, top-k and
top-p (nucleus), drawn from a seeded CPU generator so a seed gives the same text on any
device."""

from __future__ import annotations

import torch


def choose(logits: torch.Tensor, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
           generator: torch.Generator | None = None) -> int:
    """logits [vocab] → a token id. temperature 0 is greedy; top_k 0 and top_p 1 keep all.
    The top-k selection and the top-p sort run where the logits are (on the CPU they cost
    10–40 ms a token over a 248k vocabulary); only the draw, from the seeded CPU generator,
    runs on the CPU."""
    if temperature == 0:
        return int(logits.argmax())
    logits = logits.detach().float()
    if 0 < top_k < logits.numel():
        values, ids = (t.cpu() for t in torch.topk(logits, top_k))        # [k], best first
    elif top_p < 1.0:
        values, ids = (t.cpu() for t in torch.sort(logits, descending=True))
    else:
        values, ids = logits.cpu(), None
    scaled = values / temperature
    if top_p < 1.0:                                                      # values are sorted here
        probs = torch.softmax(scaled, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs                     # mass of the better tokens
        scaled = scaled.masked_fill(before >= top_p, float("-inf"))      # the best token always stays
    pick = int(torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=generator))
    return pick if ids is None else int(ids[pick])
