"""`TritonTier`: the forward pass of `model.FusedModel` on our Triton kernels and fla's.

    TritonTier(config, weights, device="cuda", dtype=torch.bfloat16, cuda_graph=True,
               prefill_graph=True, gemv="triton")

Switches, also plain attributes that may change between calls (the tier's
`variant_attributes`, which `compare ab` sets to make its variants):
- `cuda_graph`: decode replays one captured step per (batch size, cache length, gemv)
  (built on first use, reused for every later state of that shape, whatever positions
  its rows sit at: they are read from the device) or runs eagerly.
- `prefill_graph`: the same for prefill, one graph per (prompt shape, start position),
  the 8 most recent kept. Eager prefill is host-bound (~400 launches), so this is on by
  default; a new prompt length costs one capture. A call with a trace always runs eagerly.
- `gemv`: "triton" (our GEMV kernel for one-row products) or "cublas" (torch F.linear).
Rows of a batch state sit at their own positions (`per_row_positions`): `state.pos` holds
row b's next position on the device, which the decode kernels index per row; a row prefill
runs the batch-1 forward on views of that row (eagerly), `reset_row` zeroes the row.
On a CPU the tier runs under TRITON_INTERPRET=1, fp32 only, at tiny shapes: a smoke layer.
"""

from __future__ import annotations

import collections
import dataclasses

import torch

from reference import Tier, TierInputError, new_model_state, reset_row, row_view, without_tied_head

from ._util import interpreting

MAX_PREFILL_GRAPHS = 8


class TritonTier(Tier):
    name = "triton"
    part_timing = ("with CUDA graphs: one replay's kernel timestamps (torch.profiler), each kernel's part from an "
                   "eager step; without: layer hooks on the eager step")
    variant_attributes = ("cuda_graph", "prefill_graph", "gemv")
    device_checks = True  # decode_argmax's ids are checked by a kernel of the step (step_check.py)
    per_row_positions = True  # state.pos holds each row's position; the decode kernels index it per row

    @classmethod
    def unavailable_reason(cls, device):
        device = torch.device(device)
        try:
            import triton  # noqa: F401
        except ImportError as e:
            return f"triton is not installed ({e})"
        try:
            import fla.ops.gated_delta_rule  # noqa: F401
        except ImportError as e:
            return f"fla (flash-linear-attention) is not installed ({e})"
        if device.type == "cuda":
            return None if torch.cuda.is_available() else "no CUDA GPU is visible"
        if device.type == "cpu":
            if not interpreting():
                return ("on a CPU the Triton kernels run only in the interpreter: set TRITON_INTERPRET=1 "
                        "before Python starts (fp32, tiny shapes)")
            return None
        return f"device type {device.type!r} is not supported (expected cuda, or cpu with TRITON_INTERPRET=1)"

    def __init__(self, config, weights, device="cuda", dtype=torch.bfloat16, cuda_graph=True, prefill_graph=True,
                 gemv="triton"):
        super().__init__(config, weights, device, dtype)
        if self.device.type == "cpu" and dtype != torch.float32:
            raise TierInputError("the triton tier on a CPU runs in the interpreter, which supports fp32 only; "
                                 "pass dtype=torch.float32 (or run on a CUDA device)")
        from .model import FusedModel, TritonState

        self.state_class = TritonState
        converted = {k: v.to(device=self.device, dtype=dtype) for k, v in without_tied_head(config, weights).items()}
        self.model = FusedModel(config, converted, gemv)
        self.cuda_graph = cuda_graph
        self.prefill_graph = prefill_graph
        self._graphs = collections.OrderedDict()   # captured steps by (kind, state shape, ids shape, start, gemv)
        self._static = {}        # StaticState by state shape, shared by its graphs

    @property
    def gemv(self) -> str:
        return self.model.gemv

    @gemv.setter
    def gemv(self, backend: str):
        self.model.gemv = backend

    # ---- state ---------------------------------------------------------------------
    def _new_state(self, batch_size, max_seq_len):
        base = new_model_state(self.name, self.config, batch_size, max_seq_len, self.device, self.dtype)
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        fields["fault"] = self.new_fault_words()
        return self.state_class(**fields, pos=torch.zeros(batch_size, dtype=torch.int64, device=self.device))

    @torch.inference_mode()
    def _reset_row(self, state, row):
        reset_row(state, row)            # conv inputs, recurrent state, K/V cache
        state.pos[row:row + 1].zero_()   # (a slice: no host sync)

    # ---- forward -------------------------------------------------------------------
    def _prefill_step(self, input_ids, state, trace=None):
        """Every row of `state` from its common position: → (logits [B, V] fp32,)."""
        logits = self.model.forward(input_ids, state, trace)
        state.pos.fill_(state.seq_len + input_ids.shape[1])
        return (logits,)

    def _decode_step(self, token_ids, state, trace=None, layer_hook=None):
        """One decode step, sync-free: → (logits [B, V] fp32, greedy next ids [B]);
        `layer_hook(name)` is called as each part ends (eager only: a graph fires no hooks).
        The ids are checked on the device first (step_check.py): a refused step writes nothing
        but state.fault, and its "next ids" are its input ids."""
        from .lm_head import argmax
        from .step_check import step_check

        ids, valid = step_check(ids=token_ids, fault=state.fault, pos=state.pos, vocab_size=self.config.vocab_size,
                                max_seq_len=state.max_seq_len)
        self.model.step_valid = valid
        try:
            logits = self.model.forward(ids[:, None], state, trace, layer_hook=layer_hook)
        finally:
            self.model.step_valid = None
        state.pos += valid
        return logits, argmax(logits, valid=valid, fallback=token_ids)

    def _captured(self, kind, ids, state):
        """The graph of `kind` ("prefill" or "decode") for this input and state shape."""
        from .graph import CapturedStep, StaticState

        shape = (state.batch_size, state.max_seq_len)
        start = state.seq_len if kind == "prefill" else None         # a prefill graph bakes in its start
        key = (kind, shape, tuple(ids.shape), start, self.gemv)
        if key not in self._graphs:
            if shape not in self._static:
                self._static[shape] = StaticState(state)
            scratch = self._new_state(*shape)
            scratch.positions = list(state.positions)
            step = self._prefill_step if kind == "prefill" else self._decode_step
            self._graphs[key] = CapturedStep(step, self._static[shape], state, scratch, ids)
            prefills = [k for k in self._graphs if k[0] == "prefill"]
            if len(prefills) > MAX_PREFILL_GRAPHS:              # each holds a memory pool: drop the oldest
                del self._graphs[prefills[0]]
        self._graphs.move_to_end(key)
        return self._graphs[key]

    def _use_graph(self, kind) -> bool:
        wanted = self.cuda_graph if kind == "decode" else self.prefill_graph
        return wanted and self.device.type == "cuda"

    @torch.inference_mode()
    def _prefill(self, input_ids, state, trace):
        if trace is None and self._use_graph("prefill"):
            return self._captured("prefill", input_ids, state).run(input_ids, state)[0].clone()
        return self._prefill_step(input_ids, state, trace)[0]

    @torch.inference_mode()
    def _prefill_row(self, input_ids, state, row, trace):
        # Eagerly, whatever `prefill_graph` says: a graph is captured on a StaticState's own
        # tensors (graph.py), and the row's tensors are views into the batch state's, which
        # a replay could reach only by copying the row's caches in and back out.
        view = row_view(state, row, pos=state.pos[row:row + 1])
        return self._prefill_step(input_ids, view, trace)[0]

    @torch.inference_mode()
    def _decode(self, token_ids, state, trace):
        if trace is None and self._use_graph("decode"):
            return self._captured("decode", token_ids, state).run(token_ids, state)[0].clone()
        return self._decode_step(token_ids, state, trace)[0]

    @torch.inference_mode()
    def _decode_argmax(self, token_ids, state):
        if self._use_graph("decode"):
            return self._captured("decode", token_ids, state).run(token_ids, state)[1].clone()
        return self._decode_step(token_ids, state)[1]

    @torch.inference_mode()
    def _decode_timed(self, token_ids, state, marks):
        """Without CUDA graphs: the step eagerly, a mark as each part ends. With them: one replay
        of the step's graph (what decode_argmax runs) under torch.profiler, each replayed kernel's
        part known from an eager step of a copy of the state (graph_timing.py; once per graph)."""
        if not self._use_graph("decode"):
            marks.mark("start")
            return self._decode_step(token_ids, state, layer_hook=marks.mark)[1]
        from torch.profiler import ProfilerActivity, profile

        from .graph_timing import kernel_events, part_times, prepare_profiler, split_by_markers

        if prepare_profiler():  # graphs captured before the profiler started would not profile: capture them again
            self._graphs.clear()
        step = self._captured("decode", token_ids, state)
        if step.parts is None:
            names = []

            def marker(name):
                torch.cuda._sleep(1)
                names.append(name)

            copy = self.clone_state(state)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                marker("start")
                self._decode_step(token_ids, copy, layer_hook=marker)
                torch.cuda.synchronize()
            step.parts = split_by_markers([e[0] for e in kernel_events(prof)], names)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            next_ids = step.run(token_ids, state)[1].clone()
            torch.cuda.synchronize()
        for name, us in part_times(*step.parts, kernel_events(prof)).items():
            marks.put(name, us)
        return next_ids
