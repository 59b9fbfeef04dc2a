"""The reference tier: `HybridModel` over `reference.ops`, in fp32 (the oracle) or bf16
(rounding where transformers' bf16 run rounds)."""

from __future__ import annotations

import torch

from . import ops
from .interface import Tier, TierInputError
from .model import HybridModel, ModelState, forward_rows, new_model_state, reset_row, row_view
from .weights import without_tied_head


class ReferenceTier(Tier):
    name = "reference"
    state_class = ModelState
    part_timing = "layer hooks"
    per_row_positions = True

    def __init__(self, config, weights, device="cpu", dtype=torch.float32):
        super().__init__(config, weights, device, dtype)
        self.weights = {k: v.to(device=self.device, dtype=dtype) for k, v in without_tied_head(config, weights).items()}
        self.model = HybridModel(config, self.weights, ops)

    def _new_state(self, batch_size, max_seq_len):
        return new_model_state(self.name, self.config, batch_size, max_seq_len, self.device, self.dtype)

    @torch.inference_mode()
    def _prefill(self, input_ids, state, trace):
        return self.model.forward(input_ids, state, trace)

    @torch.inference_mode()
    def _prefill_row(self, input_ids, state, row, trace):
        return self.model.forward(input_ids, row_view(state, row), trace)

    @torch.inference_mode()
    def _reset_row(self, state, row):
        reset_row(state, row)

    @torch.inference_mode()
    def _decode(self, token_ids, state, trace):
        if not state.uniform:  # each row at its own position: the meaning is each row run alone
            return forward_rows(self.model.forward, token_ids[:, None], state, trace)
        return self.model.forward(token_ids[:, None], state, trace)

    @torch.inference_mode()
    def _decode_timed(self, token_ids, state, marks):
        if not state.uniform:
            raise TierInputError("the reference tier times the parts of a step with every row at one position; "
                                 f"this state's rows are at {state.positions}")
        marks.mark("start")
        return self.model.forward(token_ids[:, None], state, None, layer_hook=marks.mark).argmax(-1)
