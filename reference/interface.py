"""The one interface every tier implements, and the state it carries between calls.

A tier is built from (config, weights, device, dtype) and offers
    new_state(batch_size=1, max_seq_len=4096) → state
    prefill(input_ids [B, T] int64, state, trace=None) → fp32 logits [B, vocab] of the last position
    decode(token_ids [B] int64, state, trace=None)    → fp32 logits [B, vocab]
When `trace` is a dict the call fills it with fp32 CPU tensors: "embed" and "layers.{i}"
(hidden state after layer i) and "norm" as [B, T, D], and "logits" as [B, vocab].

This base class checks every input before any work, so a bad call raises TierInputError
naming what was wrong and what was expected, and leaves the state as it was.

What `compare` may use besides, declared here with defaults (a tier overrides what it offers;
nothing is probed with getattr or by the tier's name):
    prefill_note        a note for this tier's prefill rows (e.g. "slow prefill: fla missing")
    slow                too slow for full benchmark runs: `compare bench` caps its repeats and steps
    part_timing         how `decode_timed` measures the parts of a step (None: it cannot)
    decode_timed(ids, state, marks)   one greedy step, like decode_argmax, timing its parts
    variant_attributes  the attributes `compare ab` may set to make a variant of the tier
    clone_state(state)  an independent copy of a state
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass

import torch

from .config import ModelConfig
from .weights import validate_weights


class TierInputError(ValueError):
    """A call on a tier with inputs it cannot accept."""


class TierUnavailable(RuntimeError):
    """A tier that this machine cannot run (no GPU, missing package, …)."""


@dataclass(eq=False)
class TierState:
    """What every tier's state holds besides its own tensors."""

    tier: str
    config: ModelConfig
    batch_size: int
    max_seq_len: int
    seq_len: int = 0  # tokens already consumed (the next token's position)


def record(trace, name, tensor):
    """Store an fp32 CPU copy of `tensor` in `trace` (no-op when trace is None)."""
    if trace is not None:
        trace[name] = tensor.detach().float().cpu()


class Tier(abc.ABC):
    name: str = "?"
    state_class: type = TierState

    # ---- capabilities `compare` reads; a tier overrides what it offers ---------------
    prefill_note: str | None = None
    """A note shown beside this tier's prefill rows (e.g. "slow prefill: fla missing"); None: none."""
    slow: bool = False
    """Too slow for full benchmark runs: `compare bench` caps its repeats and tg steps (--slow-*)."""
    part_timing: str | None = None
    """How `decode_timed` measures the parts of a step ("kernel timer", "layer hooks",
    "module hooks", ...), shown beside the per-part times; None: the tier cannot time parts."""
    variant_attributes: tuple[str, ...] = ()
    """The attributes `compare ab` may set on this tier to make a variant of it (a value the
    tier cannot take raises TierInputError when set or at the next call)."""

    def __init__(self, config: ModelConfig, weights: dict, device="cpu", dtype=torch.bfloat16):
        if not isinstance(config, ModelConfig):
            raise TypeError(f"config must be a ModelConfig, got {type(config).__name__}")
        if dtype not in (torch.float32, torch.bfloat16):
            raise TierInputError(f"dtype {dtype} is not supported; expected torch.float32 or torch.bfloat16")
        validate_weights(config, weights)
        self.config = config
        self.device = torch.device(device)
        self.dtype = dtype

    # ---- what each tier provides ----------------------------------------------
    @classmethod
    def unavailable_reason(cls, device) -> str | None:
        """Why this tier cannot run on `device` here, or None if it can."""
        return None

    @abc.abstractmethod
    def _new_state(self, batch_size: int, max_seq_len: int) -> TierState: ...

    @abc.abstractmethod
    def _prefill(self, input_ids, state, trace): ...

    @abc.abstractmethod
    def _decode(self, token_ids, state, trace): ...

    # ---- the checked public interface ------------------------------------------
    def new_state(self, batch_size: int = 1, max_seq_len: int = 4096) -> TierState:
        for what, value in (("batch_size", batch_size), ("max_seq_len", max_seq_len)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TierInputError(f"{what} must be a positive int, got {value!r}")
        limit = self.config.max_position_embeddings
        if max_seq_len > limit:
            raise TierInputError(f"max_seq_len={max_seq_len} exceeds the model's max_position_embeddings={limit}")
        return self._new_state(batch_size, max_seq_len)

    def prefill(self, input_ids, state, trace=None):
        ids = self._check_ids(input_ids, dims=2, what="input_ids", shape_hint="[B, T]")
        if ids.shape[1] == 0:
            raise TierInputError("input_ids is an empty prompt (T = 0); expected at least one token")
        self._check_state(state, ids.shape[0], ids.shape[1])
        logits = self._prefill(ids, state, trace)
        state.seq_len += ids.shape[1]
        record(trace, "logits", logits)
        return logits

    def decode(self, token_ids, state, trace=None):
        ids = self._check_ids(token_ids, dims=1, what="token_ids", shape_hint="[B]")
        self._check_state(state, ids.shape[0], 1)
        if state.seq_len == 0:
            raise TierInputError("decode on an empty state; expected prefill of at least one token first")
        logits = self._decode(ids, state, trace)
        state.seq_len += 1
        record(trace, "logits", logits)
        return logits

    def decode_argmax(self, token_ids, state):
        """One greedy decode step → next token ids [B] int64, left on the device. Meant to
        be fed its own output: the ids' range is not checked, so nothing syncs with the
        host. Tiers with a fused argmax override `_decode_argmax`; benchmarks time this."""
        ids = self._check_ids(token_ids, dims=1, what="token_ids", shape_hint="[B]", check_range=False)
        self._check_state(state, ids.shape[0], 1)
        if state.seq_len == 0:
            raise TierInputError("decode on an empty state; expected prefill of at least one token first")
        next_ids = self._decode_argmax(ids, state)
        state.seq_len += 1
        return next_ids

    def _decode_argmax(self, token_ids, state):
        return self._decode(token_ids, state, None).argmax(-1)

    def decode_timed(self, token_ids, state, marks):
        """One greedy decode step, exactly like `decode_argmax` (the next ids [B] stay on the
        device, the state advances), that times its parts into `marks`: either
        `marks.mark(name)` as each part ends, after a `marks.mark("start")` (host-enqueued
        events), or `marks.put(name, microseconds)` for a tier that measures inside a kernel.
        Parts: "embed", "layers.{i}", "norm", "lm_head". Tiers say how in `part_timing`."""
        ids = self._check_ids(token_ids, dims=1, what="token_ids", shape_hint="[B]", check_range=False)
        self._check_state(state, ids.shape[0], 1)
        if state.seq_len == 0:
            raise TierInputError("decode on an empty state; expected prefill of at least one token first")
        next_ids = self._decode_timed(ids, state, marks)
        state.seq_len += 1
        return next_ids

    def _decode_timed(self, token_ids, state, marks):
        raise TierInputError(f"tier {self.name!r} cannot time the parts of a decode step (part_timing is None)")

    def clone_state(self, state: TierState) -> TierState:
        """An independent copy of `state` (decoding one leaves the other as it was). Default: a
        new state of the same dataclass with every tensor field cloned and the other fields
        copied; a tier whose state holds anything else (an object, shared buffers) overrides it."""
        self._check_state(state, state.batch_size, 0)
        fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
        return type(state)(**{k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in fields.items()})

    # ---- checks -------------------------------------------------------------------
    def _check_ids(self, ids, dims, what, shape_hint, check_range=True):
        if not isinstance(ids, torch.Tensor):
            raise TierInputError(f"{what} must be a torch.Tensor {shape_hint} of int64, got {type(ids).__name__}")
        if ids.dtype != torch.int64:
            raise TierInputError(f"{what} has dtype {ids.dtype}; expected torch.int64")
        if ids.dim() != dims:
            raise TierInputError(f"{what} has shape {tuple(ids.shape)}; expected {shape_hint}")
        if check_range and ids.numel():
            lo, hi = int(ids.min()), int(ids.max())
            V = self.config.vocab_size
            if lo < 0 or hi >= V:
                bad = lo if lo < 0 else hi
                raise TierInputError(f"{what} holds token id {bad}, outside the vocabulary [0, {V})")
        return ids.to(self.device)

    def _check_state(self, state, batch_size, n_new):
        if not isinstance(state, TierState):
            raise TierInputError(f"state must come from {self.name}.new_state(), got {type(state).__name__}")
        if state.tier != self.name or not isinstance(state, self.state_class):
            raise TierInputError(f"state belongs to tier {state.tier!r}; expected a state of tier {self.name!r}")
        if state.config != self.config:
            raise TierInputError(
                f"state was made for config {state.config.name!r}; this tier runs config {self.config.name!r}"
            )
        if batch_size != state.batch_size:
            raise TierInputError(f"batch size {batch_size} of the ids does not match the state's batch size {state.batch_size}")
        if state.seq_len + n_new > state.max_seq_len:
            raise TierInputError(
                f"{n_new} more token(s) after {state.seq_len} exceed the state's max_seq_len={state.max_seq_len}"
            )
