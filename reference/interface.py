"""The one interface every tier implements, and the state it carries between calls.

A tier is built from (config, weights, device, dtype) and offers
    new_state(batch_size=1, max_seq_len=4096) → state
    prefill(input_ids [B, T] int64, state, trace=None) → fp32 logits [B, vocab] of the last position
    prefill(input_ids [1, T] int64, state, row=r)      → fp32 logits [1, vocab]: row r of a batch state alone
    decode(token_ids [B] int64, state, trace=None)    → fp32 logits [B, vocab]
    decode_argmax(token_ids [B] int64, state)         → next ids [B] int64 on the device (no host sync)
    decode_greedy(token_ids [B] int64, state, steps, stop_ids=(), on_step=None)
                                                      → ids [n, B] int64 on the CPU: up to `steps` greedy
                                                        steps, each fed the last one's ids, handed to
                                                        on_step(i, ids) as they arrive
    decode_sample(token_ids [B] int64, state, steps, temperature, seed=0, stop_ids=(), on_step=None)
                                                      → the same with each id drawn at `temperature`
                                                        (reference/sampling.py: the draw every tier makes)
    reset_row(state, r)                               → row r empty again (position 0), the others untouched
    check(state)                                      → raises what the device refused since the last check

Rows of a batch state are sequences, each at its own position (`state.positions`, one int per
row): prefilled together (every row at the same position) or one by one (`row=`), a row reset
and refilled while the others go on. `decode` advances every row by one token, each at its own
position: row b's token sits at `state.positions[b]` and sees its own row's context only.
`state.seq_len` is the common position where every row agrees (it raises where they differ).
A tier whose kernels take one position for the whole batch says so (`per_row_positions` False):
then a row prefill, a reset or rows at different positions are a TierInputError.
When `trace` is a dict the call fills it with fp32 CPU tensors: "embed" and "layers.{i}"
(hidden state after layer i) and "norm" as [B, T, D], and "logits" as [B, vocab].

This base class checks every input before any work, so a bad call raises TierInputError
naming what was wrong and what was expected, and leaves the state as it was. The one
exception is the id range of `decode_argmax` on a tier with `device_checks`: checking a
device tensor on the host would sync, so the tier's kernels check it instead. A refused step
writes nothing but the state's fault words (FAULT_*), every step queued after it on that
state is refused too, and the next `check(state)` (which `prefill`, `decode` and
`clone_state` call first, and which a caller calls where it reads tokens back anyway)
raises the TierInputError and rolls the state back to the refused step's position, so
the same state then decodes normally. A tier without device checks checks the range on
the host in `decode_argmax` as everywhere else.

What `compare` may use besides, declared here with defaults (a tier overrides what it offers;
nothing is probed with getattr or by the tier's name):
    prefill_note        a note for this tier's prefill rows (e.g. "slow prefill: fla missing")
    slow                too slow for full benchmark runs: `compare bench` caps its repeats and steps
    part_timing         how `decode_timed` measures the parts of a step (None: it cannot)
    decode_timed(ids, state, marks)   one greedy step, like decode_argmax, timing its parts
    variant_attributes  the attributes `compare ab` may set to make a variant of the tier
    variant_notes(B)    what the tier runs differently from those attributes at batch size B
    clone_state(state)  an independent copy of a state
"""

from __future__ import annotations

import abc
import dataclasses
import operator
from dataclasses import dataclass

import torch

from .config import ModelConfig
from .weights import validate_weights


class TierInputError(ValueError):
    """A call on a tier with inputs it cannot accept."""


class TierUnavailable(RuntimeError):
    """A tier that this machine cannot run (no GPU, missing package, …)."""


# A state's fault words (int64, on the device; tiers with device_checks): what the first refused
# step of the state found, written by the kernel that refused it, cleared by Tier.check().
FAULT_WORDS = 4            # [kind, offending value, position of the refused step, batch row]
FAULT_NONE, FAULT_TOKEN, FAULT_POSITION = 0, 1, 2


@dataclass(eq=False)
class TierState:
    """What every tier's state holds besides its own tensors."""

    tier: str
    config: ModelConfig
    batch_size: int
    max_seq_len: int
    positions: list | None = None  # per row: tokens already consumed (the row's next position); None: all 0
    fault: torch.Tensor | None = None  # int64 [FAULT_WORDS] on the device (tiers with device_checks), else None
    unchecked: int = 0  # decode_argmax steps since the last check(): only then can a fault be pending

    def __post_init__(self):
        if self.positions is None:
            self.positions = [0] * self.batch_size
        self.positions = [int(p) for p in self.positions]
        if len(self.positions) != self.batch_size:
            raise ValueError(f"positions has {len(self.positions)} entries; expected batch_size={self.batch_size}")

    @property
    def seq_len(self) -> int:
        """The position every row is at (tokens consumed); a TierInputError where rows differ."""
        if not self.uniform:
            raise TierInputError(f"the rows of this state are at different positions {self.positions}; "
                                 "state.seq_len is defined only where they agree (read state.positions)")
        return self.positions[0]

    @seq_len.setter
    def seq_len(self, value: int):
        self.positions = [int(value)] * self.batch_size

    @property
    def uniform(self) -> bool:
        """Every row at the same position."""
        return self.positions.count(self.positions[0]) == len(self.positions)


def id_range(ids: torch.Tensor) -> tuple[int, int]:
    """The smallest and largest of (non-empty) token ids (ids on a GPU: one sync, not two)."""
    lo, hi = torch.stack(torch.aminmax(ids)).tolist()
    return lo, hi


def check_id_range(lo: int, hi: int, vocab_size: int, what: str) -> None:
    """Token ids whose smallest is `lo` and largest `hi` must lie in [0, vocab_size) (a
    TierInputError naming the first one outside and the vocabulary)."""
    if lo < 0 or hi >= vocab_size:
        raise TierInputError(f"{what} holds token id {lo if lo < 0 else hi}, outside the vocabulary [0, {vocab_size})")


def same_device(a: torch.device, b: torch.device) -> bool:
    """Whether two devices are one (an index left out means the current device of that type)."""
    if a.type != b.type:
        return False
    if a.type != "cuda" or a.index == b.index:
        return True
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


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
    max_batch: int | None = None
    """The most rows a state of this tier may have (None: no limit but memory); new_state refuses more."""
    per_row_positions: bool = False
    """Rows of a batch state may sit at different positions: `prefill(..., row=r)`, `reset_row`,
    and `decode` with each row at its own position. False: a TierInputError for any of them."""
    device_checks: bool = False
    """`decode_argmax` checks the ids' range in the tier's kernels (no host sync): a refused step
    writes nothing but `state.fault`, and `check(state)` raises it. False: checked on the host."""
    many_tokens_per_launch: bool = False
    """`decode_greedy` runs its steps in one device launch, each step's ids handed to the host as
    the step ends (no launch or sync per token). False: one `decode_argmax` per step, each read back."""

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

    @classmethod
    def config_unsupported_reason(cls, config) -> str | None:
        """Why this tier cannot run the model `config` describes, or None if it can."""
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
        if self.max_batch is not None and batch_size > self.max_batch:
            raise TierInputError(f"batch_size={batch_size}: tier {self.name!r} decodes 1 to {self.max_batch} "
                                 f"sequences per state (expected 1 <= batch_size <= {self.max_batch})")
        limit = self.config.max_position_embeddings
        if max_seq_len > limit:
            raise TierInputError(f"max_seq_len={max_seq_len} exceeds the model's max_position_embeddings={limit}")
        state = self._new_state(batch_size, max_seq_len)
        if self.device_checks and (state.fault is None or state.fault.shape != (FAULT_WORDS,)):
            raise RuntimeError(f"tier {self.name!r} has device_checks but its _new_state made no fault words "
                               "(Tier.new_fault_words)")
        return state

    def new_fault_words(self) -> torch.Tensor:
        """A state's fault words, zeroed, on this tier's device (for `_new_state` of a tier with device_checks)."""
        return torch.zeros(FAULT_WORDS, dtype=torch.int64, device=self.device)

    def prefill(self, input_ids, state, trace=None, row=None):
        """Every row's prompt (input_ids [B, T], all rows at one position), or with `row=r` row r's
        alone (input_ids [1, T], from that row's position; the other rows are not touched)."""
        own = self._prefill_checks_ids(input_ids)
        ids = self._check_ids(input_ids, dims=2, what="input_ids", shape_hint="[B, T]" if row is None else "[1, T]",
                              check_range=not own, to_device=not own)
        if ids.shape[1] == 0:
            raise TierInputError("input_ids is an empty prompt (T = 0); expected at least one token")
        self.check(state)
        if row is None:
            self._check_state(state, ids.shape[0], ids.shape[1])
            if not state.uniform:
                raise TierInputError(f"the rows of this state are at different positions {state.positions}; "
                                     "prefill them one row at a time (prefill(ids, state, row=r))")
            logits = self._prefill(ids, state, trace)
            state.seq_len += ids.shape[1]
        else:
            r = self._check_row(state, row, "prefill")
            if ids.shape[0] != 1:
                raise TierInputError(f"input_ids has shape {tuple(ids.shape)}; a row prefill takes one row: expected [1, T]")
            if state.positions[r] + ids.shape[1] > state.max_seq_len:
                raise TierInputError(f"{ids.shape[1]} more token(s) after {state.positions[r]} in row {r} exceed the "
                                     f"state's max_seq_len={state.max_seq_len}")
            logits = self._prefill_row(ids, state, r, trace)
            state.positions[r] += ids.shape[1]
        record(trace, "logits", logits)
        return logits

    def reset_row(self, state, row) -> None:
        """Row `row` of a batch state empty again (position 0, as new), ready for a new prompt;
        the other rows are not touched."""
        self.check(state)
        r = self._check_row(state, row, "reset_row")
        self._reset_row(state, r)
        state.positions[r] = 0

    def _check_row(self, state, row, what) -> int:
        self._check_state_kind(state)
        if not self.per_row_positions:
            raise TierInputError(f"tier {self.name!r} keeps one position for the whole batch: {what} of one row is "
                                 "not supported (per_row_positions is False); use the reference, triton or megakernel tier")
        if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < state.batch_size:
            raise TierInputError(f"row {row!r} is not a row of this state; expected an int in [0, {state.batch_size})")
        return row

    def _prefill_row(self, input_ids, state, row, trace):
        raise NotImplementedError  # tiers with per_row_positions implement it

    def _prefill_checks_ids(self, input_ids) -> bool:
        """Whether this tier's `_prefill` checks these prompt ids' range itself (with `check_id_range`,
        before it changes anything) and takes them where they are, on the CPU or this tier's device:
        prefill() then checks their type, shape and device only. Default: no."""
        return False

    def _reset_row(self, state, row):
        raise NotImplementedError  # tiers with per_row_positions implement it

    def decode(self, token_ids, state, trace=None):
        ids = self._check_step_ids(token_ids, state, synced=True)
        logits = self._decode(ids, state, trace)
        state.positions = [p + 1 for p in state.positions]
        record(trace, "logits", logits)
        return logits

    def decode_argmax(self, token_ids, state):
        """One greedy decode step → next token ids [B] int64, left on the device. Meant to
        be fed its own output: on a tier with `device_checks` the ids' range is checked by
        the kernels, so nothing syncs with the host (an id out of range is raised by the next
        `check(state)`). Tiers with a fused argmax override `_decode_argmax`; benchmarks time this."""
        ids = self._check_step_ids(token_ids, state)
        next_ids = self._decode_argmax(ids, state)
        self._advance_unchecked(state)
        return next_ids

    def decode_sample(self, token_ids, state, steps, temperature, seed=0, stop_ids=(), on_step=None) -> torch.Tensor:
        """`decode_greedy`'s steps with each step's ids drawn at `temperature` (> 0) instead of the
        argmax: reference/sampling.py's draw (the Gumbel-max trick, its noise keyed by `seed`, the
        row and the position decoded), so every tier draws the same ids from the same logits and a
        seed repeats a run. → the ids [n, B] int64 on the CPU; the same stop ids, on_step and state
        rules as decode_greedy."""
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 < temperature < float("inf"):
            raise TierInputError(f"temperature={temperature!r}; expected a finite number > 0 (greedy: decode_greedy)")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
            raise TierInputError(f"seed={seed!r}; expected an int in [0, 2**32)")
        ids, stops = self._check_steps(token_ids, state, steps, stop_ids, on_step)
        return self._decode_sample(ids, state, steps, float(temperature), seed, stops, on_step)

    def _decode_sample(self, token_ids, state, steps, temperature, seed, stop_ids, on_step):
        """One `decode` a step, each step's logits drawn from on the host (reference/sampling.py)."""
        from .sampling import sample

        def step(cur):
            positions = list(state.positions)  # (the positions this step's tokens are decoded at)
            return sample(self.decode(cur, state), temperature, seed, positions)

        return self._steps(token_ids, state, steps, stop_ids, on_step, step)

    def decode_greedy(self, token_ids, state, steps, stop_ids=(), on_step=None) -> torch.Tensor:
        """Up to `steps` greedy decode steps: the first fed `token_ids` [B], each later one the last
        one's ids. → the ids [n, B] int64 on the CPU (row i: step i's argmax), n <= steps: it ends
        early after the step where every row has produced an id in `stop_ids` (a row that did so
        earlier decodes on with the batch; its later ids are in the result). `on_step(i, ids)` (ids:
        a list of B ints) is called on the host as each step's ids arrive. The state advances n
        steps, exactly as n `decode_argmax` calls would leave it (the last ids are not consumed);
        if on_step raises, the state still counts every step that ran, and the exception carries
        their ids as `e.decoded_ids` ([n, B]: the last row is the input to go on from). A row whose
        logits hold no maximum (all NaN) ends the steps there (its id is outside the vocabulary; a
        step fed it is refused)."""
        ids, stops = self._check_steps(token_ids, state, steps, stop_ids, on_step)
        return self._decode_greedy(ids, state, steps, stops, on_step)

    def _check_steps(self, token_ids, state, steps, stop_ids, on_step):
        """decode_greedy's and decode_sample's checks → (the ids on this tier's device, the stop ids once each)."""
        ids = self._check_step_ids(token_ids, state)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise TierInputError(f"steps={steps!r}; expected an int >= 1")
        V = self.config.vocab_size
        try:
            given = list(stop_ids)  # (once: an iterator is read one time)
            ints = [operator.index(s) for s in given]
        except TypeError:
            raise TierInputError(f"stop_ids={stop_ids!r}; expected a sequence of token ids (ints in [0, {V}))") from None
        bad = [s for s, i in zip(given, ints) if isinstance(s, bool) or not 0 <= i < V]
        if bad:
            raise TierInputError(f"stop_ids holds {bad[0]!r}; expected token ids (ints in [0, {V}))")
        stops = tuple(dict.fromkeys(ints))  # (each once, in order)
        if on_step is not None and not callable(on_step):
            raise TierInputError(f"on_step must be callable (on_step(i, ids)) or None; got {type(on_step).__name__}")
        self.check(state)
        self._check_state(state, ids.shape[0], steps, step=True)
        return ids, stops

    def _decode_greedy(self, token_ids, state, steps, stop_ids, on_step):
        """One decode_argmax per step, each step's ids read on the host before the next step."""
        return self._steps(token_ids, state, steps, stop_ids, on_step, lambda cur: self.decode_argmax(cur, state))

    def _steps(self, token_ids, state, steps, stop_ids, on_step, step):
        """`steps` calls of step(ids) -> next ids, each read on the host, until every row has produced a stop id."""
        stops, stopped, rows, cur = set(stop_ids), [False] * state.batch_size, [], token_ids
        V = self.config.vocab_size
        for i in range(steps):
            cur = step(cur)
            ids = cur.tolist()
            self.check(state)  # (a refused step raises here, the state back where that step started)
            cur = cur.to(self.device)
            rows.append(ids)
            stopped = [s or t in stops or not 0 <= t < V for s, t in zip(stopped, ids)]
            if on_step is not None:
                try:
                    on_step(i, ids)
                except BaseException as e:
                    e.decoded_ids = torch.tensor(rows, dtype=torch.int64)
                    raise
            if all(stopped):
                break
        return torch.tensor(rows, dtype=torch.int64)

    def _check_step_ids(self, token_ids, state, synced=False):
        """The checks of one decode step. `synced` (decode): the range on the host and a refusal
        still pending raised first; else (decode_argmax, decode_timed: no sync) the range on the
        host only where the tier has no device checks."""
        ids = self._check_ids(token_ids, dims=1, what="token_ids", shape_hint="[B]",
                              check_range=synced or not self.device_checks)
        if synced:
            self.check(state)
        self._check_state(state, ids.shape[0], 1, step=True)
        return ids

    def _advance_unchecked(self, state):
        state.positions = [p + 1 for p in state.positions]
        if self.device_checks:
            state.unchecked += 1

    def check(self, state) -> None:
        """Raise, as a TierInputError, the first step of `state` that the device refused since
        the last check (an id outside the vocabulary fed to `decode_argmax`), after rolling the
        state back to that step's position: nothing the refused step or the steps queued after
        it would have written was written, so the same state then decodes normally. Syncs with
        the device only when such steps ran; a no-op on a tier without device checks."""
        self._check_state_kind(state)
        if not state.unchecked:
            return
        steps, state.unchecked = state.unchecked, 0
        kind, value, pos, row = (int(x) for x in state.fault.tolist())
        if kind == FAULT_NONE:
            return
        state.fault.zero_()
        back = state.positions[row] - pos  # every row advanced together since the refused step
        skipped = back - 1
        state.positions = [p - back for p in state.positions]
        after = f" and the {skipped} step(s) queued after it" if skipped else ""
        if kind == FAULT_TOKEN:
            what = (f"token id {value} (batch row {row}) fed to decode_argmax at position {pos} is outside the "
                    f"vocabulary [0, {self.config.vocab_size})")
        else:
            what = f"a decode step at position {value} (batch row {row}) is past the state's max_seq_len={state.max_seq_len}"
        where = f"position {pos}" if state.uniform else f"positions {state.positions}"
        raise TierInputError(f"{what}; that step{after} did not run: the state is back at {where}, as it was")

    def _decode_argmax(self, token_ids, state):
        return self._decode(token_ids, state, None).argmax(-1)

    def decode_timed(self, token_ids, state, marks):
        """One greedy decode step, exactly like `decode_argmax` (the next ids [B] stay on the
        device, the state advances), that times its parts into `marks`: either
        `marks.mark(name)` as each part ends, after a `marks.mark("start")` (host-enqueued
        events), or `marks.put(name, microseconds)` for a tier that measures inside a kernel.
        Parts: "embed", "layers.{i}", "norm", "lm_head". Tiers say how in `part_timing`."""
        ids = self._check_step_ids(token_ids, state)
        next_ids = self._decode_timed(ids, state, marks)
        self._advance_unchecked(state)
        self.check(state)  # timing syncs anyway: a refused step raises here, before its marks are used
        return next_ids

    def _decode_timed(self, token_ids, state, marks):
        raise TierInputError(f"tier {self.name!r} cannot time the parts of a decode step (part_timing is None)")

    def variant_notes(self, batch_size: int) -> list[str]:
        """What this tier runs differently from its variant attributes at this batch size (e.g. fewer ring
        slots than asked where they do not fit), one line each; `compare ab` prints them. None here."""
        return []

    def clone_state(self, state: TierState) -> TierState:
        """An independent copy of `state` (decoding one leaves the other as it was). Default: a
        new state of the same dataclass with every tensor field cloned and the other fields
        copied; a tier whose state holds anything else (an object, shared buffers) overrides it."""
        self.check(state)
        fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
        return type(state)(**{k: v.clone() if isinstance(v, torch.Tensor) else list(v) if isinstance(v, list) else v
                              for k, v in fields.items()})

    # ---- checks -------------------------------------------------------------------
    def _check_ids(self, ids, dims, what, shape_hint, check_range=True, to_device=True):
        if not isinstance(ids, torch.Tensor):
            raise TierInputError(f"{what} must be a torch.Tensor {shape_hint} of int64, got {type(ids).__name__}")
        if ids.dtype != torch.int64:
            raise TierInputError(f"{what} has dtype {ids.dtype}; expected torch.int64")
        if ids.dim() != dims:
            raise TierInputError(f"{what} has shape {tuple(ids.shape)}; expected {shape_hint}")
        if ids.device.type != "cpu" and not same_device(ids.device, self.device):
            raise TierInputError(f"{what} is on {ids.device}; expected the CPU or this tier's device ({self.device})")
        if check_range and ids.numel():
            check_id_range(*id_range(ids), self.config.vocab_size, what)
        return ids.to(self.device) if to_device else ids

    def _check_state(self, state, batch_size, n_new, step=False):
        """The state takes `n_new` more tokens in each of its `batch_size` rows; `step` (a decode
        step): no row is empty (checked before the length: an empty row cannot decode at all)."""
        self._check_state_kind(state)
        if batch_size != state.batch_size:
            raise TierInputError(f"batch size {batch_size} of the ids does not match the state's batch size {state.batch_size}")
        if not self.per_row_positions and not state.uniform:  # (a state set by hand: no call of this tier makes one)
            raise TierInputError(f"the rows of this state are at different positions {state.positions}; tier "
                                 f"{self.name!r} keeps one position for the whole batch (per_row_positions is False)")
        empty = [r for r, p in enumerate(state.positions) if p == 0] if step else []
        if empty:
            what = "an empty state" if len(empty) == state.batch_size else f"empty row(s) {empty}"
            raise TierInputError(f"decode on {what}; expected prefill of at least one token first")
        longest = max(state.positions)
        if longest + n_new > state.max_seq_len:
            row = state.positions.index(longest)
            where = "" if state.uniform else f" in row {row}"
            raise TierInputError(
                f"{n_new} more token(s) after {longest}{where} exceed the state's max_seq_len={state.max_seq_len}"
            )

    def _check_state_kind(self, state):
        """A state of this tier and config (whatever its length)."""
        if not isinstance(state, TierState):
            raise TierInputError(f"state must come from {self.name}.new_state(), got {type(state).__name__}")
        if state.tier != self.name or not isinstance(state, self.state_class):
            raise TierInputError(f"state belongs to tier {state.tier!r}; expected a state of tier {self.name!r}")
        if state.config is not self.config and state.config != self.config:
            raise TierInputError(
                f"state was made for config {state.config.name!r}; this tier runs config {self.config.name!r}"
            )
