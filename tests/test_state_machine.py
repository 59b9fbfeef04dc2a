"""A stateful property machine across tiers (hypothesis.stateful), on the CPU: the reference, hf
and triton (interpreter) tiers at the tiny config, each against the fp32 reference run on the
same sequence of accepted calls. tests/test_state_machine_gpu.py runs the same machine for the
megakernel and triton tiers at the 0.8B shapes on a GPU.

The machine holds up to `max_seqs` sequences, each (the tier's state, the fp32 oracle's state,
the token ids both accepted); a new or cloned one beyond that takes a drawn one's place. Rules:
  start            a first sequence, prefilled
  new_state        batch 1 to 3 (within the tier's max_batch; one above it must be refused), a small
                   max_seq_len
  prefill          1, chunk-1, chunk, chunk+1 (fla's chunk is 64), a random length, or to the end;
                   ids contiguous or a strided view, on the CPU or (GPU) on the device; every row
                   (a state whose rows are at one position)
  prefill_row      (issue 19) one row of a batch state, from its own position: the rows then sit at
                   different positions; a tier without per_row_positions must refuse it
  reset_row        (issue 19) one row empty again, the others untouched (refused likewise)
  decode           a random id, or the greedy id of the last call fed back; every row at its own
                   position, each checked against the oracle (whose rows run as if alone)
  decode_argmax    1-3 steps queued without a host sync, each fed the previous step's ids, then
                   read back against the oracle and (or not) checked
  clone            tier.clone_state: bit-identical to the original; the copy may be stepped at
                   once (the original must stay bit-identical) and both go on independently
  bad_id           an id = vocab, vocab+5,000,000 or -1 through prefill, decode and decode_argmax
                   (raised at the call, or on a tier with device checks at the next tier.check),
                   or a bad decode_argmax followed by 1-3 queued steps before the check
  bad_call         an empty prompt; float32 / int32 / list ids; [B] to prefill, [B, 1] or 0-d to
                   decode; a batch mismatch; decode on an empty state; past max_seq_len; a state
                   of another tier or config or no state at all given to the tier, or this
                   tier's state given to another tier or config; bad new_state arguments
  bad_row_call     (issue 19) a bad row index to prefill / reset_row, [2, T] ids to a row prefill, a
                   row prefill past max_seq_len, a batch prefill of rows at different positions, a
                   decode with an empty row
Invariants: every accepted call's logits are fp32 [B, V], finite and within the tier's bound
(reference/tolerances.py) of the oracle's, row by row; decode_argmax's ids are int64 [B] on the
tier's device, in the vocabulary and greedy within that bound; a refused call raises
TierInputError naming the problem (anything else fails with its type and message), leaves the
device without an error and the state bit-identical (every tensor byte, every row's position, and
`fault` back at zeros; `unchecked` 0 or as it was); after every rule each sequence's row positions
equal the oracle's and each row's accepted ids' count, no refusal is pending in `fault`, and a
device position (`pos`: one, or one per row) equals the rows' positions.

Two bugs this machine found are fixed and pinned by the regression tests at the end: ids on
another device (meta) raised RuntimeError, and the triton tier read a strided [B] ids view as if
it were contiguous.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import re
import time

import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test

from compare import load_tier, unavailable_reason
from reference import ModelConfig, ReferenceTier, TierInputError, TierState, perturb_norms, random_weights
from reference.model import ROW_TENSORS, ModelState
from reference.tolerances import bound, rel_err

CHUNK = 64  # fla's chunked delta rule (triton_kernels/delta_rule.py, the megakernel's fast prefill)
ENTRIES = ("prefill", "decode", "decode_argmax")



# ---- what the machine records -------------------------------------------------------------------
@dataclasses.dataclass
class Stats:
    """What the runs of one tier's machine did (printed by the test, and in its junit properties)."""

    examples: int = 0
    steps: int = 0
    rules: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    refused: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    compared: int = 0  # accepted calls whose logits / ids were checked against the oracle
    worst: float = 0.0  # the largest relative logits error seen
    longest: int = 0  # the longest sequence reached
    apart: int = 0  # accepted decode steps of a batch whose rows were at different positions

    def summary(self, name, profile, seconds) -> str:
        rules = ", ".join(f"{k} {v}" for k, v in sorted(self.rules.items()))
        return (f"state machine [{name}]: {self.examples} examples, {self.steps} steps (settings: max_examples="
                f"{profile.max_examples} x stateful_step_count={profile.steps}) in {seconds:.1f} s; "
                f"{self.compared} accepted calls compared (worst logits error {self.worst:.2e}, bound "
                f"{profile.tolerance:.0e}; {self.apart} steps of rows at different positions), "
                f"{sum(self.refused.values())} refused calls; longest sequence "
                f"{self.longest}; rules: {rules}")


@dataclasses.dataclass(frozen=True)
class Profile:
    """How one tier's machine runs: what it may ask for, and how long."""

    batches: tuple = (1, 2, 3)  # batch sizes new_state accepts
    refused_batches: tuple = ()  # batch sizes new_state must refuse (above the tier's max_batch)
    max_seq_len: st.SearchStrategy = st.integers(8, 48)
    lengths: tuple = (1, CHUNK - 1, CHUNK, CHUNK + 1)  # prefill lengths offered wherever they fit
    random_len: int = 16  # and a random length 1..random_len
    fill_up_to: int = 48  # and a prefill to the end when at most this many tokens are left
    max_seqs: int = 3
    id_devices: tuple = ("cpu",)  # where accepted ids may live (the tier moves them)
    layouts: tuple = ("contiguous", "strided")  # strided: a view, as prompt[:, -1] is
    tolerance: float = bound(torch.float32)  # the logits' bound: reference.tolerances.bound(the tier's dtype)
    max_examples: int = 10
    steps: int = 20

    def settings(self):
        return settings(max_examples=self.max_examples, stateful_step_count=self.steps, deadline=None,
                        suppress_health_check=list(HealthCheck))


# ---- snapshots: every byte of a state ------------------------------------------------------------
_PLAIN = (int, float, str, bool, type(None), torch.dtype, torch.device, ModelConfig)


def snapshot(obj) -> dict:
    """path → a copy of every tensor (dtype, shape, bytes) and plain value reachable from `obj`
    (dataclass fields, objects' attributes, dicts, lists: hf's cache object too)."""
    out, seen = {}, set()

    def walk(x, path):
        if isinstance(x, torch.Tensor):
            flat = x.detach().reshape(-1).clone()
            out[path] = (x.dtype, tuple(x.shape), x.device, flat.view(torch.uint8) if flat.numel() else flat)
        elif isinstance(x, _PLAIN):
            out[path] = x
        elif id(x) in seen:
            out[path] = "<seen>"
        elif isinstance(x, dict):
            seen.add(id(x))
            for k, v in x.items():
                walk(v, f"{path}[{k!r}]")
        elif isinstance(x, (list, tuple)):
            seen.add(id(x))
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif hasattr(x, "__dict__"):
            seen.add(id(x))
            for k, v in vars(x).items():
                walk(v, f"{path}.{k}")
        else:
            out[path] = f"<{type(x).__name__}>"

    walk(obj, "state")
    return out


def snapshot_diff(before: dict, after: dict) -> list[str]:
    """Where two snapshots differ (`state.unchecked` may drop to 0: a check ran and found nothing)."""
    problems = [f"{k}: missing after" for k in before if k not in after]
    problems += [f"{k}: new after" for k in after if k not in before]
    for k in before.keys() & after.keys():
        a, b = before[k], after[k]
        if k == "state.unchecked":
            if b not in (0, a):
                problems.append(f"{k}: {a} -> {b}")
        elif isinstance(a, tuple) and len(a) == 4 and isinstance(a[3], torch.Tensor):
            if not (isinstance(b, tuple) and a[:2] == b[:2] and a[2].type == b[2].type):
                problems.append(f"{k}: {a[:3]} -> {b[:3] if isinstance(b, tuple) else b}")
            elif not torch.equal(a[3], b[3]):
                n = int((a[3] != b[3]).sum())
                problems.append(f"{k}: {n} byte(s) changed")
        elif a != b:
            problems.append(f"{k}: {a!r} -> {b!r}")
    return sorted(problems)


def row_snapshot(state, row) -> dict:
    """Row `row` of every tensor field of a batch state, and its position. The batch axis: dim 1 of
    reference.ModelState's layer-major tensors (the reference's, triton's), else dim 0 where it has
    the batch's size (the megakernel's row-outermost tensors, a [B] device position); a tensor
    without one (the megakernel's rope table, the fault words) is no row's."""
    B, out = state.batch_size, {"position": state.positions[row]}
    for f in dataclasses.fields(state):
        x = getattr(state, f.name)
        if not isinstance(x, torch.Tensor):
            continue
        if isinstance(state, ModelState) and f.name in ROW_TENSORS:
            out[f.name] = x[:, row]
        elif x.dim() and x.shape[0] == B:
            out[f.name] = x[row]
    return snapshot(out)


# ---- one sequence: the tier's state and the oracle's, on the same accepted calls ----------------
class Seq:
    def __init__(self, label, state, ref):
        self.label, self.state, self.ref = label, state, ref
        self.tokens = [[] for _ in range(state.batch_size)]  # accepted ids, per row
        self.feed = None  # the greedy ids of the last call, on the tier's device, to feed back

    def __repr__(self):
        return self.label

    @property
    def batch(self):
        return self.state.batch_size

    @property
    def positions(self):
        return self.state.positions

    @property
    def space(self):
        """Room for one more token in every row (a step, or a prefill of every row)."""
        return self.state.max_seq_len - max(self.state.positions)

    def row_space(self, r):
        return self.state.max_seq_len - self.state.positions[r]

    @property
    def started(self):
        return max(self.state.positions) > 0

    @property
    def can_step(self):
        return min(self.state.positions) > 0 and self.space > 0

    @property
    def can_fill(self):
        """A prefill of every row: they must sit at one position."""
        return self.state.uniform and self.space > 0


def _call(tier, entry, ids, state):
    """One call through an entry point; decode_argmax is followed by check (its refusal may be
    raised only there, on a tier with device checks)."""
    if entry == "prefill":
        return tier.prefill(ids, state)
    if entry == "decode":
        return tier.decode(ids, state)
    if entry == "decode_argmax":
        out = tier.decode_argmax(ids, state)
        tier.check(state)
        return out
    if entry == "clone_state":
        return tier.clone_state(state)
    if entry == "check":
        return tier.check(state)
    raise AssertionError(entry)


class TierMachine(RuleBasedStateMachine):
    """The machine; `machine_class` makes one per tier with these set."""

    tier = None  # the tier under test
    oracle = None  # the fp32 ReferenceTier on the same device
    profile: Profile = Profile()
    stats: Stats = None
    foreign_states = None  # () → [(label, state, regex)]: states the tier must refuse (another tier, config, none)
    donee_tiers = None  # () → [(label, tier, regex)]: tiers that must refuse this tier's states

    def __init__(self):
        super().__init__()
        self.seqs = []
        self.made = 0
        self.stats.examples += 1

    # ---- helpers ----------------------------------------------------------------------------
    @property
    def V(self):
        return self.tier.config.vocab_size

    def count(self, rule_name):
        self.stats.steps += 1
        self.stats.rules[rule_name] += 1

    def sync(self):
        if self.tier.device.type == "cuda":
            torch.cuda.synchronize(self.tier.device)

    def pick(self, data, want=lambda s: True):
        choices = [s for s in self.seqs if want(s)]
        assert choices, "a rule ran without its precondition"
        return data.draw(st.sampled_from(choices), label="sequence")

    def make_ids(self, data, shape, label="ids"):
        """Valid ids of `shape` from a drawn seed, on a drawn device, contiguous or a strided view."""
        seed = data.draw(st.integers(0, 2**20), label=f"{label} seed")
        ids = torch.randint(0, self.V, shape, generator=torch.Generator().manual_seed(seed))
        device = data.draw(st.sampled_from(self.profile.id_devices), label=f"{label} device")
        layout = data.draw(st.sampled_from(self.profile.layouts), label=f"{label} layout")
        ids = ids.to(device)
        if layout == "strided":  # the same values in a non-contiguous view (as prompt[:, -1] is)
            wide = torch.zeros(*shape, 3, dtype=torch.int64, device=device)
            wide[..., 1] = ids
            ids = wide[..., 1]
        return ids

    def accepted(self, what, call):
        try:
            result = call()
            self.sync()
        except Exception as e:  # noqa: BLE001 - report any failure of an accepted call by its type
            raise AssertionError(f"{what}: an accepted call raised {type(e).__name__}: {e}") from e
        return result

    def refused(self, kind, call, match):
        """`call` must raise TierInputError matching `match` (nothing else, and no device error
        after it) → its message."""
        self.stats.refused[kind] += 1
        try:
            call()
        except TierInputError as e:
            message = str(e)
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"{kind}: expected a TierInputError, got {type(e).__name__}: {e}") from e
        else:
            raise AssertionError(f"{kind}: the call was accepted; expected a TierInputError matching {match!r}")
        try:
            self.sync()
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"{kind}: refused ({message}), but the device then failed: "
                                 f"{type(e).__name__}: {e}") from e
        assert re.search(match, message), f"{kind}: TierInputError {message!r} does not match {match!r}"
        return message

    def unchanged(self, what, state, before):
        problems = snapshot_diff(before, snapshot(state))
        assert not problems, f"{what} changed the state: " + "; ".join(problems[:8])

    def compare(self, got, want, seq, what, rows=None):
        """`got` [B, V] (or [len(rows), V] for those rows of the sequence) against the oracle's."""
        B = seq.batch if rows is None else len(rows)
        assert isinstance(got, torch.Tensor), f"{what}: logits are a {type(got).__name__}"
        assert got.dtype == torch.float32 and tuple(got.shape) == (B, self.V), \
            f"{what}: logits {got.dtype} {tuple(got.shape)}; expected torch.float32 {(B, self.V)}"
        assert torch.isfinite(want).all(), f"{what}: the oracle's logits are not finite"
        for r in range(B):
            err = rel_err(got[r], want[r])
            assert math.isfinite(err) and err <= self.profile.tolerance, (
                f"{what} (sequence {seq.label} at {seq.state.positions}, row {r}): logits relative error {err:.3g} > "
                f"{self.profile.tolerance:g}" + ("" if math.isfinite(err) else " (NaN or inf)"))
            self.stats.worst = max(self.stats.worst, err)
        self.stats.compared += 1

    def check_next_ids(self, out, want, seq, what):
        """decode_argmax's output: int64 [B] on the tier's device, in the vocabulary, and greedy on
        logits within the bound of the oracle's (so the oracle's logit there is within
        2·bound·‖row‖ of its max)."""
        B = seq.batch
        assert isinstance(out, torch.Tensor) and out.dtype == torch.int64 and tuple(out.shape) == (B,), \
            f"{what}: next ids {getattr(out, 'dtype', type(out))} {tuple(getattr(out, 'shape', ()))}; expected int64 {(B,)}"
        dev = self.tier.device
        assert out.device.type == dev.type and (dev.index is None or out.device.index == dev.index), \
            f"{what}: next ids on {out.device}; expected the tier's device {dev}"
        ids = out.cpu()
        assert ((ids >= 0) & (ids < self.V)).all(), f"{what}: next ids {ids.tolist()} outside [0, {self.V})"
        want = want.detach().double().cpu()
        for r in range(B):
            row = want[r]
            gap = float(row.max() - row[ids[r]])
            slack = 2 * self.profile.tolerance * float(row.norm()) + 1e-6
            assert gap <= slack, (f"{what} (sequence {seq.label}, row {r}): next id {int(ids[r])} is {gap:.3g} below the "
                                  f"oracle's max (id {int(row.argmax())}); allowed {slack:.3g}")
        self.stats.compared += 1

    def record_tokens(self, seq, ids, row=None):
        """ids [B] or [B, T] of every row, or with `row` [1, T] of that row."""
        rows = range(seq.batch) if row is None else [row]
        for r, got in zip(rows, ids.detach().cpu().reshape(len(rows), -1).tolist()):
            seq.tokens[r].extend(got)
            self.stats.longest = max(self.stats.longest, len(seq.tokens[r]))

    def new_seq(self, data, batch):
        n = data.draw(self.profile.max_seq_len, label="max_seq_len")
        state = self.accepted(f"new_state({batch}, {n})", lambda: self.tier.new_state(batch, n))
        assert isinstance(state, TierState) and state.tier == self.tier.name and state.config == self.tier.config
        assert (state.batch_size, state.max_seq_len, state.positions, state.unchecked) == (batch, n, [0] * batch, 0)
        if self.tier.device_checks:
            assert state.fault is not None and not state.fault.any(), "a new state's fault words are not zero"
        return self.add(data, Seq(f"s{self.made}", state, self.oracle.new_state(batch, n)))

    def add(self, data, seq):
        """Hold `seq`: in place of a drawn one when `max_seqs` are held already."""
        self.made += 1
        if len(self.seqs) < self.profile.max_seqs:
            self.seqs.append(seq)
        else:
            self.seqs[data.draw(st.integers(0, len(self.seqs) - 1), label="in place of")] = seq
        return seq

    def prompt_length(self, data, room):
        """A random length (half the time), one of the profile's lengths (1, chunk ± 1), or to the end."""
        p = self.profile
        kind = data.draw(st.sampled_from(("random", "random", "random", "listed", "to the end")), label="prompt length kind")
        listed = [n for n in p.lengths if n <= room]
        if kind == "listed" and listed:
            return data.draw(st.sampled_from(listed), label="prompt length")
        if kind == "to the end" and room <= p.fill_up_to:
            return room
        return data.draw(st.integers(1, min(room, p.random_len)), label="prompt length")

    def step(self, seq, data, what):
        """One accepted decode of `seq` (a random id or the fed-back one) against the oracle."""
        if seq.feed is not None and data.draw(st.booleans(), label="feed back"):
            ids = seq.feed
        else:
            ids = self.make_ids(data, (seq.batch,))
        self.stats.apart += not seq.state.uniform
        got = self.accepted(f"{what} on {seq.label}", lambda: self.tier.decode(ids, seq.state))
        want = self.oracle.decode(ids, seq.ref)
        self.compare(got, want, seq, what)
        self.record_tokens(seq, ids)
        seq.feed = got.argmax(-1)

    # ---- rules: accepted calls ---------------------------------------------------------------------
    @initialize(data=st.data())
    def start(self, data):
        """A first sequence, prefilled."""
        self.count("start")
        seq = self.new_seq(data, data.draw(st.sampled_from(self.profile.batches), label="batch"))
        if seq.batch > 1 and self.tier.per_row_positions and data.draw(st.booleans(), label="row by row"):
            for r in data.draw(st.permutations(range(seq.batch)), label="row order"):  # each its own prompt
                self.fill_row(seq, r, data)
        else:
            self.fill(seq, data)

    @rule(data=st.data())
    def new_state(self, data):
        self.count("new_state")
        batch = data.draw(st.sampled_from(self.profile.batches + self.profile.refused_batches), label="batch")
        if batch in self.profile.batches:
            self.new_seq(data, batch)
            return
        n = data.draw(self.profile.max_seq_len, label="max_seq_len")
        mb = self.tier.max_batch
        self.refused("new_state batch", lambda: self.tier.new_state(batch, n),
                     rf"batch_size={batch}: tier '{self.tier.name}' decodes 1 to {mb} sequences per state "
                     rf"\(expected 1 <= batch_size <= {mb}\)")

    @precondition(lambda self: any(s.can_fill for s in self.seqs))
    @rule(data=st.data())
    def prefill(self, data):
        self.count("prefill")
        self.fill(self.pick(data, lambda s: s.can_fill), data)

    def fill(self, seq, data):
        T = self.prompt_length(data, seq.space)
        ids = self.make_ids(data, (seq.batch, T))
        got = self.accepted(f"prefill T={T} on {seq.label}", lambda: self.tier.prefill(ids, seq.state))
        want = self.oracle.prefill(ids, seq.ref)
        self.compare(got, want, seq, f"prefill T={T} at {seq.ref.seq_len - T}")
        self.record_tokens(seq, ids)
        seq.feed = got.argmax(-1)

    # ---- rules: rows of a batch state (issue 19) ----------------------------------------------------
    def row_refused(self, what, call, state):
        """A tier without per-row positions refuses a row call; the state as it was."""
        before = snapshot(state)
        self.refused(what, call, rf"tier '{self.tier.name}' keeps one position for the whole batch: .* of one row is "
                                 r"not supported \(per_row_positions is False\)")
        self.unchanged(what, state, before)

    @precondition(lambda self: any(s.row_space(r) for s in self.seqs for r in range(s.batch)))
    @rule(data=st.data())
    def prefill_row(self, data):
        """Row r alone, from its own position, a length as `prefill` draws them (the others untouched)."""
        self.count("prefill_row")
        seq = self.pick(data, lambda s: any(s.row_space(r) for r in range(s.batch)))
        rows = [r for r in range(seq.batch) if seq.row_space(r)]
        empty = [r for r in rows if seq.positions[r] == 0]
        if empty and data.draw(st.booleans(), label="an empty row"):  # (a decode needs every row started)
            rows = empty
        self.fill_row(seq, data.draw(st.sampled_from(rows), label="row"), data)

    def fill_row(self, seq, r, data):
        T = self.prompt_length(data, seq.row_space(r))
        ids = self.make_ids(data, (1, T))
        if not self.tier.per_row_positions:
            return self.row_refused(f"prefill row {r}", lambda: self.tier.prefill(ids, seq.state, row=r), seq.state)
        at = seq.positions[r]
        others = {i: row_snapshot(seq.state, i) for i in range(seq.batch) if i != r}
        got = self.accepted(f"prefill row {r} T={T} on {seq.label}", lambda: self.tier.prefill(ids, seq.state, row=r))
        want = self.oracle.prefill(ids, seq.ref, row=r)
        self.compare(got, want, seq, f"prefill of row {r} T={T} at {at}", rows=[r])
        for i, before in others.items():  # the other rows: every byte and position as they were
            problems = [p.replace("state", f"row {i}", 1) for p in snapshot_diff(before, row_snapshot(seq.state, i))]
            assert not problems, f"a prefill of row {r} changed row {i}: " + "; ".join(problems[:8])
        self.record_tokens(seq, ids, row=r)
        if seq.feed is not None:  # that row's greedy id, the others' as they were
            seq.feed = seq.feed.clone()
            seq.feed[r] = got[0].argmax().to(seq.feed.device)

    @precondition(lambda self: self.seqs)
    @rule(data=st.data())
    def reset_row(self, data):
        """Row r empty again (position 0), the others' bytes untouched."""
        self.count("reset_row")
        seq = self.pick(data)
        r = data.draw(st.integers(0, seq.batch - 1), label="row")
        if not self.tier.per_row_positions:
            return self.row_refused(f"reset_row {r}", lambda: self.tier.reset_row(seq.state, r), seq.state)
        others = [i for i in range(seq.batch) if i != r]
        before = {i: row_snapshot(seq.state, i) for i in others}
        self.accepted(f"reset_row {r} of {seq.label}", lambda: self.tier.reset_row(seq.state, r))
        self.oracle.reset_row(seq.ref, r)
        seq.tokens[r] = []
        assert seq.positions[r] == 0
        for i in others:
            problems = snapshot_diff(before[i], row_snapshot(seq.state, i))
            problems = [p.replace("state", f"row {i}", 1) for p in problems]
            assert not problems, f"reset_row {r} changed row {i}: " + "; ".join(problems[:8])
        if data.draw(st.booleans(), label="refill it now"):
            self.fill_row(seq, r, data)

    @precondition(lambda self: any(s.can_step for s in self.seqs))
    @rule(data=st.data())
    def decode(self, data):
        self.count("decode")
        self.step(self.pick_step(data), data, "decode")

    def pick_step(self, data):
        """A sequence that can take a step: half the time one whose rows are apart, where there is one."""
        if any(s.can_step and not s.state.uniform for s in self.seqs) and data.draw(st.booleans(), label="rows apart"):
            return self.pick(data, lambda s: s.can_step and not s.state.uniform)
        return self.pick(data, lambda s: s.can_step)

    @precondition(lambda self: any(s.can_step for s in self.seqs))
    @rule(data=st.data())
    def decode_argmax(self, data):
        """1-3 greedy steps queued without a sync, each fed the previous one's ids; then read back
        and compared with the oracle run on the same ids; then checked, or left for the next call."""
        self.count("decode_argmax")
        seq = self.pick_step(data)
        n = data.draw(st.integers(1, min(3, seq.space)), label="queued steps")
        if seq.feed is not None and data.draw(st.booleans(), label="feed back"):
            ids = seq.feed
        else:
            ids = self.make_ids(data, (seq.batch,))
        inputs = []
        self.stats.apart += n * (not seq.state.uniform)
        for i in range(n):
            inputs.append(ids)
            ids = self.accepted(f"decode_argmax step {i + 1}/{n} on {seq.label}",
                                lambda ids=ids: self.tier.decode_argmax(ids, seq.state))
        outputs = inputs[1:] + [ids]
        for i, (fed, out) in enumerate(zip(inputs, outputs)):
            want = self.oracle.decode(fed, seq.ref)
            self.check_next_ids(out, want, seq, f"decode_argmax step {i + 1}/{n}")
            self.record_tokens(seq, fed)
        seq.feed = ids
        if data.draw(st.booleans(), label="check now"):
            self.accepted("check", lambda: self.tier.check(seq.state))
            assert seq.state.unchecked == 0

    @precondition(lambda self: any(s.started for s in self.seqs))
    @rule(data=st.data())
    def clone(self, data):
        self.count("clone")
        seq = self.pick(data, lambda s: s.started)
        state = self.accepted(f"clone_state of {seq.label}", lambda: self.tier.clone_state(seq.state))
        problems = snapshot_diff(snapshot(seq.state), snapshot(state))
        assert not problems, f"the clone of {seq.label} differs from it: " + "; ".join(problems[:8])
        copy = Seq(f"s{self.made}", state, self.oracle.clone_state(seq.ref))
        copy.tokens = [list(t) for t in seq.tokens]
        assert state.positions == seq.positions and state.positions is not seq.state.positions
        copy.feed = None if seq.feed is None else seq.feed.clone()
        self.add(data, copy)
        if copy.can_step and data.draw(st.booleans(), label="step the copy"):
            before = snapshot(seq.state)
            self.step(copy, data, f"decode of {copy.label}, the clone of {seq.label}")
            self.unchanged(f"a decode of the clone {copy.label}", seq.state, before)

    # ---- rules: refused calls ------------------------------------------------------------------
    @precondition(lambda self: any(s.space for s in self.seqs))
    @rule(data=st.data(), which=st.sampled_from(("vocab", "vocab+5000000", "-1")),
          entry=st.sampled_from(ENTRIES + ("decode_argmax, steps queued after it",)))
    def bad_id(self, data, which, entry):
        """An id outside the vocabulary through every entry point, anywhere in the ids (prefill
        where the entry cannot take a step on any sequence)."""
        self.count("bad_id")
        bad = {"vocab": self.V, "vocab+5000000": self.V + 5_000_000, "-1": -1}[which]
        if entry.startswith("decode_argmax,") and any(s.can_step and s.space >= 2 for s in self.seqs):
            return self.bad_then_queued(data, bad)
        entry = entry.split(",")[0] if any(s.can_step for s in self.seqs) else "prefill"
        seq = self.pick(data, (lambda s: s.space > 0) if entry == "prefill" else (lambda s: s.can_step))
        if entry == "prefill":
            T = data.draw(st.integers(1, min(seq.space, 8)), label="prompt length")
            ids = self.make_ids(data, (seq.batch, T))
            at = (data.draw(st.integers(0, seq.batch - 1), label="row"), data.draw(st.integers(0, T - 1), label="t"))
        else:
            ids = self.make_ids(data, (seq.batch,))
            at = (data.draw(st.integers(0, seq.batch - 1), label="row"),)
        ids[at] = bad
        pos, before = seq.positions[at[0]], snapshot(seq.state)
        message = self.refused(f"{entry} bad id", lambda: _call(self.tier, entry, ids, seq.state),
                               rf"token id {bad}\b.*outside the vocabulary \[0, {self.V}\)")
        if "fed to decode_argmax" in message:  # refused on the device, raised by check
            assert f"(batch row {at[0]}) fed to decode_argmax at position {pos}" in message, message
        self.unchanged(f"{entry} with id {bad}", seq.state, before)

    def bad_then_queued(self, data, bad):
        """A bad decode_argmax, then 1-3 steps queued after it before the check: all refused (on a
        tier with device checks) and the state back at the bad step's position; a tier without
        refuses the first at once."""
        seq = self.pick(data, lambda s: s.can_step and s.space >= 2)
        n = data.draw(st.integers(1, min(3, seq.space - 1)), label="queued after")
        feed_back = data.draw(st.booleans(), label="queue the refused step's output")
        ids = self.make_ids(data, (seq.batch,))
        row = data.draw(st.integers(0, seq.batch - 1), label="row")
        ids[row] = bad
        good = [self.make_ids(data, (seq.batch,), f"queued {i}") for i in range(n)]
        pos, positions, before = seq.positions[row], list(seq.positions), snapshot(seq.state)

        def call():
            out = self.tier.decode_argmax(ids, seq.state)
            for i in range(n):
                out = self.tier.decode_argmax(out if feed_back else good[i], seq.state)
            self.tier.check(seq.state)

        message = self.refused("decode_argmax bad id then queued", call,
                               rf"token id {bad}\b.*outside the vocabulary \[0, {self.V}\)")
        if self.tier.device_checks:
            back = f"back at position {pos}" if seq.state.uniform else f"back at positions {positions}"
            assert f"(batch row {row}) fed to decode_argmax at position {pos}" in message \
                and f"the {n} step(s) queued after it" in message and back in message, message
        self.unchanged(f"decode_argmax with id {bad} and {n} queued step(s)", seq.state, before)

    FORMS = ("empty prompt", "float32 ids", "int32 ids", "list ids", "wrong rank", "batch mismatch",
             "empty state", "past max_seq_len", "meta ids")

    @precondition(lambda self: self.seqs)
    @rule(data=st.data(), kind=st.sampled_from(FORMS + ("foreign state", "new_state arguments")))
    def bad_call(self, data, kind):
        """Ids of the wrong dtype, kind, rank, batch or length, a call the state cannot take, a
        state of another tier or config (or this tier's state given to one), bad new_state arguments."""
        self.count("bad_call")
        if kind == "new_state arguments":
            return self.bad_new_state(data)
        if kind == "foreign state":
            return self.foreign(data, data.draw(st.sampled_from(ENTRIES + ("clone_state", "check")), label="entry"))
        self.bad_form(data, kind)

    def bad_form(self, data, form):
        seq = self.pick(data)
        state, B = seq.state, seq.batch
        entries = ENTRIES
        if form == "empty prompt":
            entries, match = ("prefill",), "empty prompt"
        elif form == "empty state":
            if seq.started:  # a fresh state of the same shape, never prefilled
                state = self.accepted("new_state", lambda: self.tier.new_state(B, seq.state.max_seq_len))
            entries, match = ("decode", "decode_argmax"), "decode on an empty state"
        elif form == "past max_seq_len":
            # a decode step on a full state; a prefill past the end otherwise, and where a row is empty
            # (reset): a decode step there is refused for the empty row first (it cannot decode at all)
            entries = ENTRIES if seq.space == 0 and 0 not in state.positions else ("prefill",)
            match = rf"exceed the state's max_seq_len={state.max_seq_len}"
        elif form == "wrong rank":
            match = r"expected \[B, T\]|expected \[B\]"
        elif form == "batch mismatch":
            match = r"batch size \d+ of the ids does not match the state's batch size|batch 1 only"
        elif form == "list ids":
            match = r"must be a torch\.Tensor"
        elif form == "meta ids":
            match = r"device"
        else:
            match = rf"dtype {form.split()[0].replace('float32', 'torch.float32').replace('int32', 'torch.int32')}; " \
                    r"expected torch\.int64"
        entry = data.draw(st.sampled_from(entries), label="entry")
        T = {"prefill": 1 + data.draw(st.integers(0, 3), label="T - 1")}.get(entry)
        shape = (B, T) if entry == "prefill" else (B,)
        if form == "past max_seq_len" and entry == "prefill":
            shape = (B, seq.space + data.draw(st.integers(1, 3), label="over"))
        if form == "empty prompt":
            ids = torch.zeros(B, 0, dtype=torch.int64)
        elif form == "wrong rank":
            ids = self.make_ids(data, (B,) if entry == "prefill" else data.draw(st.sampled_from([(B, 1), ()])))
        elif form == "batch mismatch":
            other = data.draw(st.sampled_from([b for b in (1, 2, 3) if b != B]), label="ids batch")
            ids = self.make_ids(data, (other,) + shape[1:])
        elif form == "float32 ids":
            ids = self.make_ids(data, shape).float()
        elif form == "int32 ids":
            ids = self.make_ids(data, shape).int()
        elif form == "list ids":
            ids = self.make_ids(data, shape).tolist()
        elif form == "meta ids":
            ids = torch.zeros(shape, dtype=torch.int64, device="meta")
        else:
            ids = self.make_ids(data, shape)
        before = snapshot(state)
        self.refused(f"{entry} {form}", lambda: _call(self.tier, entry, ids, state), match)
        self.unchanged(f"{entry} with {form}", state, before)

    def foreign(self, data, entry):
        """A state of another tier or config, or no state at all, given to this tier; or this
        tier's state given to a tier of another kind or config. Refused; both states as they were."""
        donees = self.donee_tiers() if self.seqs else []
        if donees and data.draw(st.booleans(), label="give this tier's state away"):
            seq = self.pick(data)
            label, tier, match = data.draw(st.sampled_from(donees), label="other tier")
            state, label = seq.state, f"{seq.label} on {label}"
        else:
            tier = self.tier
            label, state, match = data.draw(st.sampled_from(self.foreign_states()), label="foreign state")
        B = getattr(state, "batch_size", 1)
        ids = self.make_ids(data, (B, 1) if entry == "prefill" else (B,))
        before = snapshot(state)
        self.refused(f"{entry} {label}", lambda: _call(tier, entry, ids, state), match)
        assert not snapshot_diff(before, snapshot(state)), f"{entry} with {label} changed the state"

    ROW_FORMS = ("bad row", "two rows to a row prefill", "row prefill past max_seq_len", "batch prefill of rows apart",
                 "decode with an empty row")

    @precondition(lambda self: self.seqs)
    @rule(data=st.data(), form=st.sampled_from(ROW_FORMS))
    def bad_row_call(self, data, form):
        """(issue 19) A row call the state cannot take: refused, every row as it was. A tier without
        per-row positions refuses every row call for that reason first."""
        self.count("bad_row_call")
        if form == "batch prefill of rows apart" and not any(not s.state.uniform and s.space for s in self.seqs):
            form = "bad row"
        if form == "decode with an empty row" and not any(min(s.positions) == 0 and s.space for s in self.seqs):
            form = "row prefill past max_seq_len"  # (a full row is refused first for that)
        seq = self.pick(data, {"batch prefill of rows apart": lambda s: not s.state.uniform and s.space > 0,
                               "decode with an empty row": lambda s: min(s.positions) == 0 and s.space > 0,
                               }.get(form, lambda s: True))
        state, B, V = seq.state, seq.batch, self.V
        r = data.draw(st.integers(0, B - 1), label="row")
        per_row = self.tier.per_row_positions
        not_per_row = rf"tier '{self.tier.name}' keeps one position for the whole batch"
        if form == "bad row":
            row = data.draw(st.sampled_from([-1, B, B + 3, True, 1.0, "0"]), label="bad row")
            entry = data.draw(st.sampled_from(["prefill", "reset_row"]), label="entry")
            ids = self.make_ids(data, (1, 1))
            call = (lambda: self.tier.prefill(ids, state, row=row)) if entry == "prefill" else \
                (lambda: self.tier.reset_row(state, row))
            what = f"{entry} of row {row!r}"
            match = rf"row {re.escape(repr(row))} is not a row of this state; expected an int in \[0, {B}\)"
        elif form == "two rows to a row prefill":
            ids = self.make_ids(data, (2, 1))
            call, what = lambda: self.tier.prefill(ids, state, row=r), "[2, T] ids to a row prefill"
            match = r"a row prefill takes one row: expected \[1, T\]"
        elif form == "row prefill past max_seq_len":
            over = seq.row_space(r) + data.draw(st.integers(1, 3), label="over")
            ids = self.make_ids(data, (1, over))
            call, what = lambda: self.tier.prefill(ids, state, row=r), f"a row prefill of {over} past max_seq_len"
            match = rf"{over} more token\(s\) after {seq.positions[r]} in row {r} exceed the state's " \
                    rf"max_seq_len={state.max_seq_len}"
        elif form == "batch prefill of rows apart":
            ids = self.make_ids(data, (B, 1))
            call, what = lambda: self.tier.prefill(ids, state), "a prefill of every row at different positions"
            match = re.escape(f"the rows of this state are at different positions {seq.positions}")
            per_row = True  # (a state whose rows differ: not made by a tier without per-row positions)
        else:
            entry = data.draw(st.sampled_from(["decode", "decode_argmax"]), label="entry")
            ids = self.make_ids(data, (B,))
            empty = [i for i, p in enumerate(seq.positions) if p == 0]
            call = lambda: _call(self.tier, entry, ids, state)  # noqa: E731
            what = f"{entry} with empty row(s) {empty}"
            match = re.escape("decode on " + ("an empty state" if len(empty) == B else f"empty row(s) {empty}"))
            per_row = True
        before = snapshot(state)
        self.refused(what, call, match if per_row else not_per_row)
        self.unchanged(what, state, before)

    NEW_STATE_ARGUMENTS = ("batch 0", "batch -1", "batch True", "batch 1.0", "max_seq_len 0", "max_seq_len '8'",
                           "max_seq_len past max_position_embeddings")

    def bad_new_state(self, data):
        case = data.draw(st.sampled_from(self.NEW_STATE_ARGUMENTS), label="new_state arguments")
        what, value = case.split(" ", 1)
        kwargs = dict(batch_size=1, max_seq_len=8)
        if value == "past max_position_embeddings":
            kwargs[what] = self.tier.config.max_position_embeddings + 1
            match = r"exceeds the model's max_position_embeddings"
        else:
            kwargs["batch_size" if what == "batch" else what] = eval(value)  # noqa: S307 - the literals above
            match = r"must be a positive int"
        self.refused(f"new_state {case}", lambda: self.tier.new_state(**kwargs), match)

    # ---- invariants --------------------------------------------------------------------------------
    @invariant()
    def sequences_agree(self):
        for seq in self.seqs:
            s = seq.state
            counts = [len(t) for t in seq.tokens]
            assert s.positions == seq.ref.positions == counts, \
                f"{seq.label}: positions {s.positions}, oracle {seq.ref.positions}, accepted ids per row {counts}"
            assert s.tier == self.tier.name and s.config == self.tier.config
            if self.tier.device_checks:
                assert s.fault is not None and not s.fault.any(), f"{seq.label}: a refusal is pending: {s.fault.tolist()}"
            pos = getattr(s, "pos", None)
            if isinstance(pos, torch.Tensor):  # one per row, or one for a batch at one position
                device = pos.reshape(-1).tolist()
                assert device == s.positions or (len(device) == 1 and s.uniform and device[0] == s.positions[0]), \
                    f"{seq.label}: device position(s) {device} != positions {s.positions}"


def machine_class(tier, oracle, profile, foreign, donees, stats):
    """The machine for one tier; `foreign` and `donees` are called when first needed (once)."""
    return type(f"{tier.name.capitalize()}Machine", (TierMachine,), dict(
        tier=tier, oracle=oracle, profile=profile, stats=stats,
        foreign_states=staticmethod(functools.lru_cache(None)(foreign)),
        donee_tiers=staticmethod(functools.lru_cache(None)(donees))))


def run_machine(name, machine, capsys, record_property):
    """Run `machine` under its profile's settings; print and record how much it ran."""
    start = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=machine.profile.settings())
    finally:
        seconds = time.perf_counter() - start
        line = machine.stats.summary(name, machine.profile, seconds)
        record_property("state_machine", line)
        with capsys.disabled():
            print("\n" + line)
    return machine.stats


# ---- the CPU tiers at the tiny config -------------------------------------------------------------
CPU_TIERS = ("reference", "hf", "triton")
OTHER_CONFIG = dict(name="tiny-eps", rms_norm_eps=1e-5)  # a config that differs from tiny in one field


@functools.lru_cache(None)
def cpu_model():
    config = ModelConfig.tiny()
    return config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))


@functools.lru_cache(None)
def cpu_tier(name, other_config=False):
    config, weights = cpu_model()
    if other_config:
        config = config.replace(**OTHER_CONFIG)
    return load_tier(name, config, weights, dtype=torch.float32, device="cpu")


@functools.lru_cache(None)
def cpu_oracle():
    return ReferenceTier(*cpu_model(), device="cpu", dtype=torch.float32)


def cpu_profile(name):
    if name == "triton":  # the interpreter: ~0.7 s a decode step, seconds a prefill
        return Profile(max_seq_len=st.integers(8, 24), lengths=(1,), random_len=6, fill_up_to=8, max_seqs=2,
                       layouts=("contiguous", "strided"),
                       max_examples=6, steps=12)
    examples = 60 if name == "reference" else 40  # ~4 s and ~3 s on one core
    return Profile(max_seq_len=st.one_of(st.integers(8, 48), st.sampled_from([70, 80])), max_examples=examples, steps=30)


def _other_tier_name(name):
    for other in CPU_TIERS:
        if other != name and unavailable_reason(other, "cpu") is None:
            return other
    return None


def cpu_foreign(name):
    """States the tier `name` must refuse: one of another tier (prefilled), one of another config, none."""
    config = cpu_model()[0]
    expected = rf"state belongs to tier '{{}}'; expected a state of tier '{name}'"
    out = []
    other = _other_tier_name(name)
    if other is not None:
        tier = cpu_tier(other)
        state = tier.new_state(1, 16)
        if other != "triton":  # (an interpreted prefill is slow; its empty state serves as well)
            tier.prefill(torch.tensor([[5, 6, 7]]), state)
        out.append((f"a state of tier {other!r}", state, expected.format(other)))
    else:
        out.append(("a state of another tier", TierState(tier="elsewhere", config=config, batch_size=1, max_seq_len=8),
                    expected.format("elsewhere")))
    mine = cpu_tier(name, other_config=True)
    out.append((f"a state of config {OTHER_CONFIG['name']!r}", mine.new_state(1, 16),
                rf"state was made for config '{OTHER_CONFIG['name']}'; this tier runs config 'tiny'"))
    out.append(("a dict", {"seq_len": 0, "batch_size": 1}, r"state must come from"))
    out.append(("None", None, r"state must come from"))
    return out


def cpu_donees(name):
    """Tiers that must refuse a state of `name`: the oracle (another tier) and `name` at another config."""
    out = []
    if name != "reference":
        out.append(("the reference oracle", cpu_oracle(), rf"state belongs to tier '{name}'; expected a state of tier 'reference'"))
    out.append((f"{name} at config {OTHER_CONFIG['name']!r}", cpu_tier(name, other_config=True),
                rf"state was made for config 'tiny'; this tier runs config '{OTHER_CONFIG['name']}'"))
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy, on values the interpreter masks away
@pytest.mark.parametrize("name", CPU_TIERS)
def test_state_machine(name, capsys, record_property):
    reason = unavailable_reason(name, "cpu")
    if reason is not None:
        pytest.skip(f"tier {name!r} cannot run on this CPU: {reason}")
    machine = machine_class(cpu_tier(name), cpu_oracle(), cpu_profile(name), lambda: cpu_foreign(name),
                            lambda: cpu_donees(name), Stats())
    stats = run_machine(name, machine, capsys, record_property)
    assert stats.examples >= 1 and stats.steps >= stats.examples


# ---- the machine's own parts ---------------------------------------------------------------------
def test_snapshot_sees_every_byte_and_hf_cache():
    config, weights = cpu_model()
    tier = cpu_oracle()
    state = tier.new_state(1, 8)
    tier.prefill(torch.tensor([[1, 2]]), state)
    before = snapshot(state)
    assert not snapshot_diff(before, snapshot(state))
    flat = state.k_cache.view(-1)
    flat[5] = torch.nextafter(flat[5], torch.tensor(float("inf")))  # one value, by one ulp
    state.seq_len += 1
    assert any("k_cache" in p for p in snapshot_diff(before, snapshot(state)))
    assert any("positions" in p for p in snapshot_diff(before, snapshot(state)))
    if unavailable_reason("hf", "cpu") is None:
        hf = cpu_tier("hf")
        hs = hf.new_state(1, 8)
        hf.prefill(torch.tensor([[1, 2]]), hs)
        snap = snapshot(hs)
        cached = [k for k, v in snap.items() if k.startswith("state.cache") and isinstance(v, tuple)]
        assert cached, "the snapshot sees no tensor of transformers' cache"
        hf.decode(torch.tensor([3]), hs)
        assert snapshot_diff(snap, snapshot(hs))


# ---- the bugs this machine found, fixed: their regression tests -------------------------------------
@pytest.mark.parametrize("entry", ENTRIES)
def test_ids_on_another_device_are_refused(entry):
    tier = cpu_oracle()
    state = tier.new_state(1, 8)
    tier.prefill(torch.tensor([[1, 2]]), state)
    ids = torch.zeros((1, 1) if entry == "prefill" else (1,), dtype=torch.int64, device="meta")
    try:
        _call(tier, entry, ids, state)
    except TierInputError:
        pass
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{type(e).__name__}: {e}") from e
    assert state.seq_len == 2


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_triton_decode_of_a_strided_ids_view():
    reason = unavailable_reason("triton", "cpu")
    if reason is not None:
        pytest.skip(reason)
    prompt = torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]])
    logits = {}
    for name, tier in (("triton", cpu_tier("triton")), ("reference", cpu_oracle())):
        state = tier.new_state(2, 8)
        tier.prefill(prompt[:, :3], state)
        logits[name] = tier.decode(prompt[:, 3], state)  # a view with stride 4
    err = max(rel_err(logits["triton"][r], logits["reference"][r]) for r in range(2))
    assert err <= 1e-4, f"row error {err:.3g}"
