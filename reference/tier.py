"""The reference tier: `HybridModel` over `reference.ops`, in fp32 (the oracle) or bf16
(rounding where transformers' bf16 run rounds)."""

from __future__ import annotations

import torch

from . import ops
from .interface import Tier
from .model import HybridModel, ModelState, new_model_state


class ReferenceTier(Tier):
    name = "reference"
    state_class = ModelState
    part_timing = "layer hooks"

    def __init__(self, config, weights, device="cpu", dtype=torch.float32):
        super().__init__(config, weights, device, dtype)
        self.weights = {k: v.to(device=self.device, dtype=dtype) for k, v in weights.items() if k != "lm_head.weight"}
        self.model = HybridModel(config, self.weights, ops)

    def _new_state(self, batch_size, max_seq_len):
        return new_model_state(self.name, self.config, batch_size, max_seq_len, self.device, self.dtype)

    @torch.inference_mode()
    def _prefill(self, input_ids, state, trace):
        return self.model.forward(input_ids, state, trace)

    @torch.inference_mode()
    def _decode(self, token_ids, state, trace):
        return self.model.forward(token_ids[:, None], state, trace)

    @torch.inference_mode()
    def _decode_timed(self, token_ids, state, marks):
        marks.mark("start")
        return self.model.forward(token_ids[:, None], state, None, layer_hook=marks.mark).argmax(-1)
