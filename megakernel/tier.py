"""The megakernel tier: every decode step is ONE persistent CUDA launch (csrc/megakernel.cu,
the torch op `qwen35_megakernel.decode`, megakernel/ops.py) that runs the embedding row, the
Gated DeltaNet and gated attention layers, the final norm, the lm_head and the greedy argmax.
Built per model shape (megakernel/family.py): the 0.8B (the sources' defaults), and any config
within the kernels' constraints (of the family also 2B and 9B; a config outside them is refused,
naming the field). Batch 1 to MAX_BATCH (8 at the 0.8B widths, else 1) sequences per launch, each
at its own position (every weight read once per step and applied to every row), bf16 (the tier
reads every shape and buffer size from the built extension). How it works: megakernel/DESIGN.md.

Schedules (`tier.schedule`): "ring" (the weights streamed through shared memory by a producer
warp; the default wherever it fits), "register" (each warp loads its weights into registers:
GPUs whose shared memory cannot hold the ring) and "stream-only" (a measurement: the ring's
weight stream alone, nothing computed; the output is the input id).

Prefill (`prefill="fast"`, the default) runs the prompt through tensor-core GEMMs, a chunked
delta rule (`tier.prefill_delta_rule`: FlashQLA's where it runs, else fla's), flash attention and this tier's fused CUDA kernels, replayed from a CUDA
graph per prompt shape (megakernel/prefill.py); it reads and writes the state below in place,
so prefill → decode continues exactly where the prompt left off. `prefill="reference"` (or a
machine without flash-linear-attention) runs `reference.HybridModel` on the GPU instead, on
views of the same state. A one-token prompt is one decode launch on either path.
State layout (MegakernelState; csrc/shapes.cuh), B rows, the row outermost so that row r alone
is a batch-1 state (`row_state`: what a prefill into one row works on); the 0.8B's sizes:
    dn_state  [B, 18, 16, 128 v, 128 k] fp32   (NDN, DN_HV; K contiguous: the transpose of ModelState's S)
    conv_ring [B, 18, 4, 6144] bf16            pre-conv inputs, column = position % 4
    k_cache, v_cache [B, 6, 2, max_seq, 256] bf16
    rope      [max_seq, 2, 32] bf16            cos | sin per position (torch computes them; shared)
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass

import torch

from reference import ModelConfig, Tier, TierInputError, TierState, TierUnavailable, record
from reference import ops as reference_ops
from reference.model import HybridModel, ModelState, forward_rows

from . import family, lm_bound
from .prefill import FastPrefill, layer_weights, unavailable_reason as prefill_unavailable_reason
from .prefill_delta_rule import unavailable_reason as prefill_delta_rule_unavailable

SUPPORTED = ModelConfig.qwen3_5_0_8b()  # the config csrc/shapes.cuh defaults to (other sizes: a build per shape, family.py)
PREFILL_PATHS = ("fast", "reference")
SCHEDULES = ("ring", "register", "stream-only")  # csrc/shapes.cuh Schedule, in its order
ARENA_ALIGN = 256  # elements (bf16: 512 bytes, the CUDA caching allocator's own alignment): where the arena's views start (_pack_weights)
ATT_POSITIONS_PER_SPLIT = 32  # attention split-K: one unit per 32 positions of a kv head (NOTES.md v9)
# the most ring slots a batch of BATCH_RING_SLOTS_FROM+ rows runs with by default (tier.batch_ring_slots; a knob of its own,
# from the same batch size as the kernel's DN_STATE_RING_MIN_BATCH, whose state chunks it was measured with): fewer copies in
# flight when a block arrives at a grid barrier. Measured (NOTES v34, s36 calls 3-4, one process, every round): B = 8
# 10 slots +1.0 / +1.2% over 11 (9: +1.2%), B = 4 +1.1% over 12, B = 6 equal; batch 1 keeps 12 (its best)
BATCH_RING_SLOTS, BATCH_RING_SLOTS_FROM = 10, 4
# what the greedy argmax (any batch) reads of the lm_head: "int8", its int8 copy and the few rows that copy cannot rule
# out (megakernel/lm_bound.py: the same argmax from half the bytes; where the build has it, LM_I8), or "bf16", every row
LM_ARGMAX = ("int8", "bf16")


def config_refusal(config: ModelConfig) -> str | None:
    """Why the kernel cannot be built for `config` (every field that breaks a constraint,
    megakernel/family.py), or None."""
    return family.config_refusal(config)


def check_config(config: ModelConfig) -> None:
    why = config_refusal(config)
    if why:
        raise TierInputError(why)


def kernel_shape_mismatch(config: ModelConfig, k) -> list[str]:
    """Where the built kernel's shapes (csrc/shapes.cuh, as the extension reports them) differ
    from `config`: they must agree before the tier allocates a byte."""
    pairs = {
        "vocab_size": k.VOCAB, "hidden_size": k.D, "intermediate_size": k.INTER, "layer_types": tuple(k.LAYER_TYPES),
        "num_attention_heads": k.FA_HQ, "num_key_value_heads": k.FA_HKV, "head_dim": k.FA_HD,
        "rotary_dim": k.FA_ROT, "linear_num_key_heads": k.DN_HK, "linear_num_value_heads": k.DN_HV,
        "linear_key_head_dim": k.DN_DK, "linear_value_head_dim": k.DN_DV, "linear_conv_kernel_dim": k.CONV_K,
        "tie_word_embeddings": bool(k.TIED),
    }
    bad = [f"{f}: config {getattr(config, f)!r}, kernel {v!r}" for f, v in pairs.items() if getattr(config, f) != v]
    if abs(config.rms_norm_eps - k.RMS_EPS) > 1e-12:
        bad.append(f"rms_norm_eps: config {config.rms_norm_eps}, kernel {k.RMS_EPS}")
    return bad


def fault_layout_mismatch(k) -> list[str]:
    """Where the kernel's fault words (csrc/shapes.cuh) differ from the interface's (reference FAULT_*)."""
    import reference

    return [f"{name}: interface {getattr(reference, name)}, kernel {getattr(k, name)}"
            for name in ("FAULT_WORDS", "FAULT_NONE", "FAULT_TOKEN", "FAULT_POSITION")
            if getattr(reference, name) != getattr(k, name)]


def attention_splits(pos: int, per_split: int = ATT_POSITIONS_PER_SPLIT, max_split: int = 64) -> int:
    """Split-K units per kv head for a token at position `pos` (context pos + 1): one per
    `per_split` positions, at most `max_split` (the kernel's ATT_MAX_SPLIT)."""
    return max(1, min(max_split, math.ceil((pos + 1) / per_split)))


@dataclass
class StepTimes:
    """One decode step's in-kernel clock (the timing mode's globaltimer stamps, ns), parsed;
    csrc/shapes.cuh says where each stamp is taken."""

    start: int                    # block 0 starts
    embed_done: int               # the embedding row is normed (layer 0's in-proj starts)
    phase_exits: list[int]        # [NBARRIERS]: block 0 leaves the barrier after phase q
    lm_head_start: int            # the final norm is done
    argmax_done: int              # the next token is written
    unit_stamps: list[list[int]]  # [attention layer][UNIT_STAMPS]: block 0's first attention unit, step by step
    dn_unit_stamps: list[list[int]]  # [DeltaNet layer][DN_STAMPS]: block 0's first DeltaNet core unit, step by step
    arrivals: torch.Tensor        # [grid, NBARRIERS] int64 ns: every block's arrival at every barrier (globaltimer's
                                  # ~1.7e18 ns need 61 bits: as float64 they rounded to 256 ns, before session 36)
    ring_full_us: torch.Tensor    # [grid] float64: µs each block's producer waited for a free ring slot held by a
                                  # layer's chunk (since 8abcb24 also the waits of the lm_head's first chunks on the
                                  # last layer's slots, which the count before left out: NOTES v31)
    ring_full_by_phase: torch.Tensor  # [grid, NPHASES] float64: the same µs by the phase whose chunk held the slot
                                      # (its compute had not released it yet; the lm_head's last)
    arrived: torch.Tensor         # [grid, NBARRIERS] int64 ns: when each arrival had been made (its release's
                                  # fence passed): minus `arrivals`, what the fence waited for

    @staticmethod
    def sections(k, grid: int) -> tuple[int, int, int, int]:
        """Where the per-block stamps lie (csrc/shapes.cuh's timing layout, times_words): the arrivals,
        the ring's full times, the arrivals made, and the end (the words of one timed launch)."""
        arrivals = k.NTIMES
        full = arrivals + grid * k.NBARRIERS
        made = full + grid * k.NPHASES
        return arrivals, full, made, made + grid * k.NBARRIERS

    @classmethod
    def parse(cls, words: list[int], k, grid: int) -> "StepTimes":
        nb = k.NBARRIERS
        base = k.NPHASES + 3
        at_arr, at_full, at_made, end = cls.sections(k, grid)
        arrivals = torch.tensor(words[at_arr:at_full], dtype=torch.int64).view(grid, nb)
        full = torch.tensor(words[at_full:at_made], dtype=torch.float64).view(grid, k.NPHASES) / 1000.0
        made = torch.tensor(words[at_made:end], dtype=torch.int64).view(grid, nb)
        return cls(start=words[0], embed_done=words[k.NPHASES + 2], phase_exits=words[1:nb + 1],
                   lm_head_start=words[k.NPHASES + 1], argmax_done=words[k.NPHASES],
                   unit_stamps=[words[base + i * k.UNIT_STAMPS:base + (i + 1) * k.UNIT_STAMPS] for i in range(k.NFA)],
                   dn_unit_stamps=[words[k.DN_STAMPS_AT + i * k.DN_STAMPS:k.DN_STAMPS_AT + (i + 1) * k.DN_STAMPS]
                                   for i in range(k.NDN)],
                   arrivals=arrivals, ring_full_us=full[:, :nb].sum(1), ring_full_by_phase=full, arrived=made)

    def phase_start(self, q: int) -> int:
        """When block 0 starts phase q (it left the previous barrier; phase 0: the launch's start)."""
        return self.start if q == 0 else self.phase_exits[q - 1]

    def parts_us(self, num_layers: int, phases_per_layer: int) -> dict[str, float]:
        """µs per "embed", "layers.{i}", "norm", "lm_head" (block 0's view)."""
        us = lambda a, b: (b - a) / 1000.0  # noqa: E731
        res = {"embed": us(self.start, self.embed_done)}
        for i in range(num_layers):
            res[f"layers.{i}"] = us(self.embed_done if i == 0 else self.phase_exits[phases_per_layer * i - 1],
                                    self.phase_exits[phases_per_layer * (i + 1) - 1])
        res["norm"] = us(self.phase_exits[-1], self.lm_head_start)
        res["lm_head"] = us(self.lm_head_start, self.argmax_done)
        return res


@dataclass(eq=False)
class MegakernelState(TierState):
    dn_state: torch.Tensor = None
    conv_ring: torch.Tensor = None
    k_cache: torch.Tensor = None
    v_cache: torch.Tensor = None
    rope: torch.Tensor = None  # [max_seq, 2, 32] bf16 cos | sin per position (torch computes them)


ROW_TENSORS = ("dn_state", "conv_ring", "k_cache", "v_cache")  # MegakernelState's per-row tensors (row: dim 0)


class MegakernelTier(Tier):
    name = "megakernel"
    state_class = MegakernelState
    part_timing = "kernel timer"
    device_checks = True  # the kernel refuses an id outside the vocabulary (csrc/step_check.cuh)
    per_row_positions = True  # each row's position, split-K and caches are its own (Args::pos, nsplit)
    # what `compare ab` may vary: blocks per launch (<= one per SM), the schedule (SCHEDULES; "ring"
    # where it fits), the ring's slots (RING_MIN_SLOTS..the most that fit), attention positions per split,
    # what the greedy argmax reads of the lm_head (LM_ARGMAX)
    variant_attributes = ("grid", "schedule", "ring_slots", "batch_ring_slots", "positions_per_split", "prefill_delta_rule",
                          "lm_argmax")
    positions_per_split = ATT_POSITIONS_PER_SPLIT

    @property
    def prefill_delta_rule(self) -> str:
        """The chunked delta rule the fast prefill runs (megakernel/prefill_delta_rule.py): "flash-qla"
        (the default where FlashQLA is installed and the GPU is sm_90+), "fla" or "flashinfer"; "none" without
        a fast prefill."""
        return self.fast_prefill.delta_rule if self.fast_prefill is not None else "none"

    @prefill_delta_rule.setter
    def prefill_delta_rule(self, name: str) -> None:
        if self.fast_prefill is None:
            if name == "none":
                return
            raise ValueError(f"this tier has no fast prefill ({self.prefill_note}), so no delta rule to choose")
        reason = prefill_delta_rule_unavailable(name, self.device)
        if reason is not None:
            raise ValueError(reason)
        self.fast_prefill.delta_rule = name

    @property
    def many_tokens_per_launch(self) -> bool:
        """decode_greedy runs in one launch in the ring schedule (the others: a launch a step)."""
        return self.schedule == "ring"

    @classmethod
    def config_unsupported_reason(cls, config) -> str | None:
        return config_refusal(config)

    @classmethod
    def unavailable_reason(cls, device) -> str | None:
        device = torch.device(device)
        if device.type != "cuda":
            return f"the megakernel runs on a CUDA GPU only (device {str(device)!r} was asked for)"
        if not torch.cuda.is_available():
            return "no CUDA GPU is visible (torch.cuda.is_available() is False)"
        major, minor = torch.cuda.get_device_capability(device)
        if (major, minor) < (8, 0):
            return f"the GPU has compute capability {major}.{minor}; the megakernel needs 8.0 or newer"
        from .build import nvcc_path

        if nvcc_path() is None:
            return "nvcc was not found (set CUDA_HOME or put nvcc on PATH): the kernel is built just in time"
        return None

    def __init__(self, config, weights, device="cuda", dtype=torch.bfloat16, prefill="fast"):
        if prefill not in PREFILL_PATHS:
            raise TierInputError(f"prefill={prefill!r}; expected one of {list(PREFILL_PATHS)}")
        if isinstance(config, ModelConfig):
            check_config(config)
        reason = self.unavailable_reason(device)
        if reason is not None:
            raise TierUnavailable(f"tier 'megakernel' cannot run on {device}: {reason}")
        super().__init__(config, weights, device, dtype)
        if dtype != torch.bfloat16:
            raise TierInputError(f"the megakernel runs in bfloat16 only; got dtype {dtype}")
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        from . import ops

        self.ext, self.k = ops.load(self.device, config)
        self.ops_namespace = self.k.NAMESPACE
        self._decode_op = ops.op("decode", self.ops_namespace)
        bad = kernel_shape_mismatch(config, self.k) + fault_layout_mismatch(self.k)
        if bad:
            raise RuntimeError("the built megakernel's shapes (csrc/shapes.cuh) differ from the config: " + "; ".join(bad))
        fit = self.ext.configure(self.device.index)
        if fit["blocks_per_sm"] < 1:
            raise TierUnavailable(f"the megakernel's block ({self.k.THREADS} threads, {max(fit['smem_bytes'])} B of "
                                  "shared memory) does not fit on an SM of this GPU")
        # per batch size B (index B - 1): shared memory of each schedule and the ring slots that fit
        # (the matrix phases' input vectors take more at larger B; 0: the ring does not fit)
        self.smem_bytes, self.ring_smem_bytes = fit["smem_bytes"], fit["ring_smem_bytes"]
        self.ring_slots_by_batch = fit["ring_slots"]
        self.max_ring_slots = self.ring_slots_by_batch[0]
        self.ring_slots = self.max_ring_slots  # batch 1's; a larger batch uses at most what fits it
        # and from BATCH_RING_SLOTS_FROM rows on at most this many (a GPU that fits fewer, e.g. an A100's 8: what fits)
        self.batch_ring_slots = min(BATCH_RING_SLOTS, self.max_ring_slots) if self.max_ring_slots else BATCH_RING_SLOTS
        # the most rows a state may have: the largest batch whose ring fits (the register schedule: 1)
        self.max_batch = max([b + 1 for b, n in enumerate(self.ring_slots_by_batch) if n >= self.k.RING_MIN_SLOTS],
                             default=1)
        self.schedule = "ring" if self.max_ring_slots else "register"
        # one block per SM: the persistent grid must be resident at once (the launch is cooperative)
        self.max_grid = min(fit["num_sms"], self.k.MAX_GRID)
        self.grid = self.max_grid
        with torch.no_grad():
            self._pack_weights(weights)
            self.workspace = torch.zeros(self.k.WS_BYTES, dtype=torch.uint8, device=self.device)
            self.sync = torch.zeros(self.k.SYNC_WORDS, dtype=torch.int32, device=self.device)  # never cleared again
        self._nothing = {dt: torch.empty(0, dtype=dt, device=self.device) for dt in (torch.float32, torch.int64, torch.uint8)}
        self.model = HybridModel(config, self.weights, reference_ops)
        self.prefill_weights = layer_weights(self)
        self.fast_prefill, self.prefill_note = None, "prefill: the reference's PyTorch ops (prefill='reference')"
        if prefill == "fast":
            reason = prefill_unavailable_reason()
            if reason is None:
                self.fast_prefill = FastPrefill(self)
                self.prefill_note = None
            else:
                self.prefill_note = f"slow prefill (reference ops): {reason}"
        self.debug_poison = False

    # ---- weights: packed per phase, the reference model sees views of the same memory ----
    def _pack_weights(self, weights):
        dev, bf = self.device, torch.bfloat16
        c = self.config

        def put(name):  # (detached: a caller's bf16 tensor on this device may come back as itself, grad and all)
            return weights[name].to(device=dev, dtype=bf).contiguous().detach()

        # Every layer's two norms, in-projection and gate/up are views of one buffer (`arena`): views share their
        # base's version counter, so the fast prefill sees any of them changed in place (its norm-folded copies then
        # stale) by reading one counter, not 60 (FastPrefill.folded_weights; NOTES "Prefill" v31). Each group (a norm,
        # a packed projection) starts at a multiple of ARENA_ALIGN elements, as a buffer of its own would. Where the
        # CUDA caching allocator is off (compute-sanitizer runs: every tensor its own allocation, so a read past one is
        # caught) each group is its own buffer instead.
        def arena_groups(i, kind):  # layer i's groups: its input norm, post norm, gate/up pack, in-projection pack
            p = f"model.layers.{i}."
            win = ([f"{p}linear_attn.{n}.weight" for n in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a")]
                   if kind == "linear_attention" else [f"{p}self_attn.{n}.weight" for n in ("q_proj", "k_proj", "v_proj")])
            return [p + "input_layernorm.weight"], [p + "post_attention_layernorm.weight"], \
                [p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"], win

        def aligned(n):
            return -(-n // ARENA_ALIGN) * ARENA_ALIGN

        groups = [arena_groups(i, kind) for i, kind in enumerate(c.layer_types)]
        one_buffer = os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1"
        arena = torch.empty(sum(aligned(sum(weights[n].numel() for n in g)) for layer in groups for g in layer)
                            if one_buffer else 0, dtype=bf, device=dev)
        used = 0

        def take(shape):  # one group's buffer: a view of the arena
            nonlocal used
            if not one_buffer:
                return torch.empty(shape, dtype=bf, device=dev)
            n = math.prod(shape)
            view = arena[used:used + n].view(shape)
            used += aligned(n)
            return view

        def put_in_arena(name):
            self.weights[name] = take(weights[name].shape)
            self.weights[name].copy_(weights[name])

        def pack(names):
            buf = take((sum(weights[n].shape[0] for n in names), weights[names[0]].shape[1]))
            r = 0
            for n in names:
                k = weights[n].shape[0]
                buf[r:r + k].copy_(weights[n].to(bf))
                self.weights[n] = buf[r:r + k]
                r += k
            return buf

        self.weights = {}
        self.packed_in_proj, self.packed_gate_up = [], []  # per layer, the packed buffers below
        self.weights["model.embed_tokens.weight"] = put("model.embed_tokens.weight")
        # the head: the embedding itself where the config ties them, else its own matrix
        if not c.tie_word_embeddings:
            self.weights["lm_head.weight"] = put("lm_head.weight")
        self.lm_head_weight = self.weights.get("lm_head.weight", self.weights["model.embed_tokens.weight"])
        self.weights["model.norm.weight"] = put("model.norm.weight")
        k = self.k
        # the greedy argmax reads the lm_head's int8 copy where the build has that pass (megakernel/lm_bound.py)
        self.lm_q, self.lm_qs = lm_bound.quantize(self.lm_head_weight) if k.LM_I8 else (None, None)
        self._lm_version = self.lm_head_weight._version  # (a head changed in place is copied again: _check_variant)
        self.lm_argmax = "int8" if k.LM_I8 else "bf16"
        table = torch.zeros(c.num_layers, k.NSLOT, dtype=torch.int64)
        for i, kind in enumerate(c.layer_types):
            p = f"model.layers.{i}."
            in_norm, post_norm, gate_up, in_proj = groups[i]
            put_in_arena(*in_norm)
            put_in_arena(*post_norm)
            self.weights[p + "mlp.down_proj.weight"] = put(p + "mlp.down_proj.weight")
            gu = pack(gate_up)
            table[i, k.SL_IN_NORM] = self.weights[p + "input_layernorm.weight"].data_ptr()
            table[i, k.SL_POST_NORM] = self.weights[p + "post_attention_layernorm.weight"].data_ptr()
            table[i, k.SL_GATE_UP] = gu.data_ptr()
            table[i, k.SL_DOWN] = self.weights[p + "mlp.down_proj.weight"].data_ptr()
            if kind == "linear_attention":
                a = p + "linear_attn."
                win = pack(in_proj)
                for n in ("conv1d.weight", "A_log", "dt_bias", "norm.weight", "out_proj.weight"):
                    self.weights[a + n] = put(a + n)
                table[i, k.SL_WIN] = win.data_ptr()
                table[i, k.SL_CONV_W] = self.weights[a + "conv1d.weight"].data_ptr()  # [6144, 1, 4] = [6144][4]
                table[i, k.SL_A_LOG] = self.weights[a + "A_log"].data_ptr()
                table[i, k.SL_DT_BIAS] = self.weights[a + "dt_bias"].data_ptr()
                table[i, k.SL_GNORM] = self.weights[a + "norm.weight"].data_ptr()
                table[i, k.SL_OUT] = self.weights[a + "out_proj.weight"].data_ptr()
            else:
                a = p + "self_attn."
                win = pack(in_proj)
                for n in ("q_norm.weight", "k_norm.weight", "o_proj.weight"):
                    self.weights[a + n] = put(a + n)
                table[i, k.SL_WIN] = win.data_ptr()
                table[i, k.SL_Q_NORM] = self.weights[a + "q_norm.weight"].data_ptr()
                table[i, k.SL_K_NORM] = self.weights[a + "k_norm.weight"].data_ptr()
                table[i, k.SL_OUT] = self.weights[a + "o_proj.weight"].data_ptr()
            self.packed_in_proj.append(win)
            self.packed_gate_up.append(gu)
        assert used == arena.numel(), "the arena's groups and the views taken from it differ"
        self.layer_table = table.to(dev)

    # ---- state ------------------------------------------------------------------
    def _new_state(self, batch_size, max_seq_len):
        dev, k, B = self.device, self.k, batch_size
        bf = torch.bfloat16
        return MegakernelState(
            tier=self.name, config=self.config, batch_size=B, max_seq_len=max_seq_len,
            dn_state=torch.zeros(B, k.NDN, k.DN_HV, k.DN_DV, k.DN_DK, dtype=torch.float32, device=dev),
            conv_ring=torch.zeros(B, k.NDN, k.CONV_K, k.DN_CONV, dtype=bf, device=dev),
            k_cache=torch.zeros(B, k.NFA, k.FA_HKV, max_seq_len, k.FA_HD, dtype=bf, device=dev),
            v_cache=torch.zeros(B, k.NFA, k.FA_HKV, max_seq_len, k.FA_HD, dtype=bf, device=dev),
            rope=self._rope_table(max_seq_len), fault=self.new_fault_words(),
        )

    @staticmethod
    def row_state(state: MegakernelState, row: int) -> MegakernelState:
        """Row `row` as a batch-1 state whose tensors are views into the batch's (contiguous: the
        row is the outermost index), at that row's position: writing it writes the row."""
        views = {n: getattr(state, n)[row:row + 1] for n in ROW_TENSORS}
        return dataclasses.replace(state, batch_size=1, positions=[state.positions[row]], unchecked=0, **views)

    def _rope_table(self, max_seq_len):
        """cos, sin of every position exactly as reference.ops.rope_cos_sin makes them (bf16)."""
        c = self.config
        cos, sin = reference_ops.rope_cos_sin(positions=torch.arange(max_seq_len, device=self.device),
                                              rotary_dim=c.rotary_dim, theta=c.rope_theta, dtype=torch.bfloat16)
        half = c.rotary_dim // 2
        return torch.stack([cos[:, :half], sin[:, :half]], dim=1).contiguous()

    @staticmethod
    def _conv_columns(seq_len):
        """Ring columns holding positions seq_len-3, seq_len-2, seq_len-1 (ModelState.conv order)."""
        return [(seq_len - 3 + i) % 4 for i in range(3)]

    def to_model_state(self, state: MegakernelState) -> ModelState:
        """The reference layout of a batch-1 `state` (a row: row_state): caches and S are views
        (writes go through), conv a copy."""
        if state.batch_size != 1:
            raise TierInputError(f"to_model_state takes one row (a batch-1 state, e.g. row_state(state, r)); "
                                 f"got batch_size={state.batch_size}")
        cols = self._conv_columns(state.seq_len)
        conv = state.conv_ring[0][:, cols, :].permute(0, 2, 1).unsqueeze(1).contiguous()  # [18, 1, 6144, 3]
        return ModelState(
            tier="reference", config=self.config, batch_size=1, max_seq_len=state.max_seq_len, positions=list(state.positions),
            conv=conv, recurrent=state.dn_state[0].unsqueeze(1).transpose(-1, -2),
            k_cache=state.k_cache[0].unsqueeze(1), v_cache=state.v_cache[0].unsqueeze(1),
        )

    def _store_conv(self, state: MegakernelState, conv, seq_len):
        cols = self._conv_columns(seq_len)
        state.conv_ring[0][:, cols, :] = conv[:, 0].permute(0, 2, 1).to(torch.bfloat16)

    # ---- prefill: fast (prefill.py), or the reference forward pass on this tier's state; a batch
    # row by row (each row's prompt is its own graph replay on row_state views) ----
    def _prefill_checks_ids(self, input_ids) -> bool:
        # one row's prompt of 2+ ids goes to the fast prefill whole, whose bind() checks the ids on the CPU or the
        # device as it copies them; nothing of the state changes for a refused prompt (one op; device ids' range
        # read after the graph's launch: the interface's own check took ~130 µs of a pp520 call on the lent
        # H100's host, s29 call 2). Several rows stay checked up front:
        # a bad id in row 1 must not find row 0 already prefilled. (_prefill_one checks what this leaves to it.)
        return (self.fast_prefill is not None and isinstance(input_ids, torch.Tensor) and input_ids.dim() == 2
                and input_ids.shape[0] == 1 and input_ids.shape[1] > 1)

    # (no torch.inference_mode() around the fast prefill: no tensor of this tier requires grad (_pack_weights detaches
    # them), its plans and folded weights are made as plain tensors in any mode, and the decorator's ~3 µs a call is
    # host time before the graph's launch: NOTES "Prefill" v31. Its logits are plain tensors, not inference tensors.)
    def _prefill(self, input_ids, state, trace):
        if input_ids.shape[1] == 1:  # one token is one decode step: the single launch reads the weights once
            return self._decode(input_ids[:, 0], state, trace)
        checked = not self._prefill_checks_ids(input_ids)  # (the interface checked them)
        if state.batch_size == 1:
            return self._prefill_one(input_ids, state, trace, checked)
        return forward_rows(lambda ids, s, t: self._prefill_one(ids, s, t, checked), input_ids, state, trace,
                            view=self.row_state)

    def _prefill_row(self, input_ids, state, row, trace):
        return self._prefill(input_ids, self.row_state(state, row), trace)

    def _prefill_one(self, input_ids, state, trace, checked=True):
        """Prefill a batch-1 state (or row view) with input_ids [1, T]; `checked`: their range was checked
        (else the fast prefill's bind() checks it: _prefill_checks_ids leaves them unchecked only to it)."""
        if self.fast_prefill is not None:
            return self.fast_prefill(input_ids, state, trace, checked)
        with torch.inference_mode():  # (the reference's PyTorch ops, as the reference tier runs them)
            ms = self.to_model_state(state)
            logits = self.model.forward(input_ids, ms, trace)
            self._store_conv(state, ms.conv, state.seq_len + input_ids.shape[1])
        return logits

    @torch.inference_mode()
    def _reset_row(self, state, row):
        for name in ROW_TENSORS:
            getattr(state, name)[row].zero_()

    # ---- decode: one launch -------------------------------------------------------
    def poison(self, state=None):
        """NaN (all-ones bits) into the whole workspace, the cache rows past the sequence and the
        conv column the next token overwrites, so an unwritten read shows up (tests). The sync
        words are left alone: they carry the barrier count from launch to launch."""
        self.workspace.fill_(0xFF)
        if state is not None:
            for r, pos in enumerate(state.positions):
                state.k_cache[r, :, :, pos:] = float("nan")
                state.v_cache[r, :, :, pos:] = float("nan")
                state.conv_ring[r, :, pos % self.k.CONV_K] = float("nan")

    def workspace_area(self, name: str, row: int = 0, batch: int = 1) -> torch.Tensor:
        """A typed view of batch row `row`'s part of one area of the decode workspace as a launch of
        `batch` rows wrote it: "hidden", "zab", "obuf", "qkv", "attn", "act", "apart", "amax_val",
        "amax_idx" (csrc/shapes.cuh WS_*; fp32, but attn, act and a batch's obuf bf16)."""
        return self.k.workspace_area(self.workspace, name, row, batch)

    def attention_output_in_workspace(self, pos: int) -> bool:
        """Whether a batch-1 decode at `pos` writes the gated attention output to the workspace's
        "attn" area: with one split, or more than OUT_MERGE_MAX (2..OUT_MERGE_MAX: the out-proj
        merges the split partials as it loads them, and nothing writes "attn"). A batch always
        writes it (the core merges)."""
        n = attention_splits(pos, self.positions_per_split, self.k.ATT_MAX_SPLIT)
        return n == 1 or n > self.k.OUT_MERGE_MAX

    def _out(self, *shape, dtype=torch.float32):
        if self.debug_poison:
            return torch.full(shape, float("nan") if dtype.is_floating_point else -1, dtype=dtype, device=self.device)
        return torch.empty(*shape, dtype=dtype, device=self.device)

    def _check_variant(self):
        """The attributes `compare ab` and the tests may change, checked before a launch."""
        if self.schedule not in SCHEDULES:
            raise TierInputError(f"schedule={self.schedule!r}; expected one of {list(SCHEDULES)}")
        if self.schedule != "register" and not self.max_ring_slots:
            raise TierInputError(f"schedule={self.schedule!r} streams the weights through the shared-memory ring, which "
                                 f"does not fit this GPU ({self.k.RING_MIN_SLOTS} slots of {self.k.RING_SLOT} B); "
                                 "expected schedule='register'")
        for attr in ("ring_slots", "batch_ring_slots"):
            value = getattr(self, attr)
            if self.schedule != "register" and (isinstance(value, bool) or not isinstance(value, int)
                                                 or not self.k.RING_MIN_SLOTS <= value <= self.max_ring_slots):
                raise TierInputError(f"{attr}={value!r}; expected an int in {self.k.RING_MIN_SLOTS}..{self.max_ring_slots} "
                                     "(the most this GPU's shared memory holds)")
        if isinstance(self.grid, bool) or not isinstance(self.grid, int) or not 1 <= self.grid <= self.max_grid:
            raise TierInputError(f"grid={self.grid!r}; expected an int in [1, {self.max_grid}] (blocks that can be "
                                 "resident at once: one per SM)")
        if isinstance(self.positions_per_split, bool) or not isinstance(self.positions_per_split, int) \
                or self.positions_per_split < 1:
            raise TierInputError(f"positions_per_split={self.positions_per_split!r}; expected an int >= 1")
        if self.lm_q is not None and self.lm_head_weight._version != self._lm_version:
            self.lm_q, self.lm_qs = lm_bound.quantize(self.lm_head_weight)
            self._lm_version = self.lm_head_weight._version
        if self.lm_argmax not in LM_ARGMAX or (self.lm_argmax == "int8" and self.lm_q is None):
            raise TierInputError(f"lm_argmax={self.lm_argmax!r}; expected "
                                 + (f"one of {list(LM_ARGMAX)}" if self.lm_q is not None else "'bf16' (this build's lm_head "
                                    "has no int8 pass: hidden size 1024 only)"))

    def ring_slots_for(self, batch_size: int) -> int:
        """The ring's slots at this batch size: tier.ring_slots, at most tier.batch_ring_slots from
        BATCH_RING_SLOTS_FROM rows on, and fewer where that many do not fit."""
        cap = self.batch_ring_slots if batch_size >= BATCH_RING_SLOTS_FROM else self.ring_slots
        return min(self.ring_slots, cap, self.ring_slots_by_batch[batch_size - 1])

    def variant_notes(self, batch_size: int) -> list[str]:
        slots = self.ring_slots_for(batch_size) if self.schedule != "register" and batch_size <= self.max_batch else None
        if slots is None or slots >= self.ring_slots:
            return []
        if slots < self.ring_slots_by_batch[batch_size - 1]:
            return [f"ring_slots={self.ring_slots} runs with {slots} at batch {batch_size} (batch_ring_slots={self.batch_ring_slots} "
                    f"from {BATCH_RING_SLOTS_FROM} rows on)"]
        return [f"ring_slots={self.ring_slots} runs with {slots} at batch {batch_size} (the most that fit beside "
                f"{batch_size} rows' shared memory)"]

    def _launch(self, state, token_ids, out_token, logits=None, trace=None, times=None, stop_after=-1,
                steps=1, stop_ids=(), stream=None, temperature=0.0, seed=0):
        """One decode launch, row b at position state.positions[b] (the caller advances them): one
        step, or `steps` (out_token [steps, B]; `stream`: pinned [steps, B] the kernel writes as each
        step ends; ends early after the step where every row has produced one of `stop_ids`); each
        step's ids the argmax, or at `temperature` > 0 reference/sampling.py's draw with `seed`."""
        self._check_variant()
        if state.batch_size > 1 and self.schedule == "register":
            raise TierInputError(f"schedule='register' decodes batch 1 only (its warps hold their weights in registers); "
                                 f"this state has {state.batch_size} rows: use schedule='ring' (batch 1..{self.max_batch})")
        if (steps > 1 or temperature > 0) and self.schedule != "ring":
            raise TierInputError(f"schedule={self.schedule!r} runs one greedy step per launch; the many-token "
                                 "launch (decode_greedy, decode_sample) needs schedule='ring'")
        if self.debug_poison:
            self.poison(state)
        self._decode_op(*self.decode_args(state, token_ids, out_token, logits, trace, times, stop_after, steps, stop_ids,
                                          stream, temperature, seed))

    def decode_args(self, state, token_ids, out_token, logits=None, trace=None, times=None, stop_after=-1, steps=1,
                    stop_ids=(), stream=None, temperature=0.0, seed=0) -> tuple:
        """The decode op's arguments (megakernel/ops.py) for a launch of `state` (_launch's, unchecked)."""
        none32, none64 = self._nothing[torch.float32], self._nothing[torch.int64]
        i8 = self.lm_argmax == "int8"
        return (
            self.layer_table, self.weights["model.embed_tokens.weight"], self.lm_head_weight,
            self.lm_q if i8 else self._nothing[torch.uint8], self.lm_qs if i8 else none32, self.weights["model.norm.weight"],
            state.dn_state, state.conv_ring, state.k_cache, state.v_cache, state.rope, self.workspace, self.sync,
            token_ids.contiguous(), out_token, state.fault, none32 if logits is None else logits, none32 if trace is None else trace,
            none64 if times is None else times, none64 if stream is None else stream, state.positions,
            self.positions_per_split, steps, list(stop_ids), float(temperature), int(seed), self.grid,
            SCHEDULES.index(self.schedule), self.ring_slots_for(state.batch_size), stop_after)

    def _decode(self, token_ids, state, trace):
        k, B = self.k, state.batch_size
        logits = self._out(B, k.VOCAB)
        buf = self._out(B, k.NLAYER + 2, k.D) if trace is not None else None
        out = self._out(B, dtype=torch.int64)
        self._launch(state, token_ids, out, logits=logits, trace=buf)
        if trace is not None:
            record(trace, "embed", buf[:, 0].view(B, 1, k.D))
            for i in range(k.NLAYER):
                record(trace, f"layers.{i}", buf[:, 1 + i].view(B, 1, k.D))
            record(trace, "norm", buf[:, -1].view(B, 1, k.D))
        return logits

    def _decode_argmax(self, token_ids, state):
        out = self._out(state.batch_size, dtype=torch.int64)
        self._launch(state, token_ids, out)
        return out

    # ---- many tokens per launch -------------------------------------------------------
    def _one_launch(self, stop_ids) -> bool:
        """Whether decode_greedy / decode_sample run as one launch: the ring schedule, and at most the
        MAX_STOP_IDS stop ids the kernel holds (else a launch a step, the interface's way)."""
        return self.many_tokens_per_launch and len(stop_ids) <= self.k.MAX_STOP_IDS

    def _decode_greedy(self, token_ids, state, steps, stop_ids, on_step):
        if not self._one_launch(stop_ids):
            return super()._decode_greedy(token_ids, state, steps, stop_ids, on_step)
        return self._decode_launch(token_ids, state, steps, stop_ids, on_step)

    def _decode_sample(self, token_ids, state, steps, temperature, seed, stop_ids, on_step):
        if not self._one_launch(stop_ids):
            return super()._decode_sample(token_ids, state, steps, temperature, seed, stop_ids, on_step)
        return self._decode_launch(token_ids, state, steps, stop_ids, on_step, temperature, seed)

    def _decode_launch(self, token_ids, state, steps, stop_ids, on_step, temperature=0.0, seed=0):
        """decode_greedy / decode_sample as ONE launch (the ring schedule): every step's ids come
        from the last step's argmax (or draw) on the device, and each step's ids land in pinned host
        memory as the step ends, where this loop polls them and hands them to on_step while the
        launch runs on."""
        B, V = state.batch_size, self.k.VOCAB
        landed = lambda row: bool(((row >= 0) & (row < 2 ** 31)).all())  # noqa: E731  (an unwritten word is -1; a
        # half-written one is negative or >= 2^31; a row with NaN logits has the id 2^31 - 1: the launch ends there)
        out = torch.full((steps, B), -1, dtype=torch.int64, device=self.device)  # unwritten: -1
        stream = torch.full((steps, B), -1, dtype=torch.int64, pin_memory=True)
        words = stream.numpy()  # the same memory: reads see the kernel's writes as they land
        self._launch(state, token_ids, out, steps=steps, stop_ids=stop_ids, stream=stream, temperature=temperature, seed=seed)
        done = torch.cuda.Event()
        done.record(torch.cuda.current_stream(self.device))  # (the launch's stream: this tier's device's current one)
        stops, stopped, n, raised = set(stop_ids), [False] * B, 0, None
        try:
            while n < steps and not all(stopped):
                if landed(words[n]):
                    ids = words[n].tolist()
                    stopped = [s or i in stops or i >= V for s, i in zip(stopped, ids)]
                    n += 1
                    if on_step is not None:
                        on_step(n - 1, ids)
                elif done.query() and not landed(words[n]):
                    break  # the launch ended without this step: refused (state.fault), read below
                else:
                    time.sleep(0)  # (let other threads run between polls)
        except BaseException as e:  # on_step raised: the launch runs to its end whatever the host does
            raised = e
            raise
        finally:  # count what the launch ran
            done.synchronize()
            refused = int(state.fault[0]) != self.k.FAULT_NONE  # (then out[0] holds the input ids, nothing ran)
            ran = 0 if refused else int((out[:, 0] >= 0).sum())
            state.positions = [p + ran for p in state.positions]
            if raised is not None:
                raised.decoded_ids = out[:ran].cpu()  # every step that ran (the last row: the input to go on from)
        if refused:  # check() raises the refusal as a queued step's and leaves the state where it was
            state.positions = [p + 1 for p in state.positions]
            state.unchecked += 1
            self.check(state)
        result = out[:ran].cpu()
        if ran != n or not torch.equal(result, torch.from_numpy(words[:ran].copy())):
            raise RuntimeError(f"the many-token launch ran {ran} step(s), the host stream saw {n}, or their ids differ: "
                               "the kernel and the host disagree about where it stops")
        return result

    # ---- the in-kernel clock ----------------------------------------------------------
    def times_words(self) -> int:
        """int64 words of one timed launch's stamps at this grid (csrc/shapes.cuh times_words)."""
        return StepTimes.sections(self.k, self.grid)[-1]

    def times_buffer(self) -> torch.Tensor:
        """A zeroed buffer for one timed launch's stamps."""
        return torch.zeros(self.times_words(), dtype=torch.int64, device=self.device)

    def timed_launch(self, token_ids, state, times=None) -> tuple[torch.Tensor, torch.Tensor]:
        """One greedy decode step with the in-kernel clock on, WITHOUT the interface's checks or
        advancing the state (for callers that check once and launch many: decode_steps_timed, and
        `_decode_timed`, which the interface checks);
        `times`: a buffer from times_buffer() (else one is allocated: a memset kernel before the
        launch). → (next ids [B] on the device, the stamps; StepTimes.parse them after a sync)."""
        times = self.times_buffer() if times is None else times
        out = self._out(state.batch_size, dtype=torch.int64)
        self._launch(state, token_ids, out, times=times)
        return out, times

    def decode_step_times(self, token_ids, state) -> tuple[torch.Tensor, StepTimes]:
        """One greedy decode step (the state advances) timed by the in-kernel clock: → (next ids
        [B] on the device, StepTimes). Syncs with the GPU to read the stamps."""
        out, (times,) = self.decode_steps_timed(token_ids, state, 1)
        return out, times

    def decode_steps_timed(self, token_ids, state, steps: int) -> tuple[torch.Tensor, list[StepTimes]]:
        """`steps` greedy decode steps back to back, each fed the last one's ids on the device as
        the tg loop runs them (nothing waits for the host in between), every one with the in-kernel
        clock on: → (the last ids, each step's StepTimes). The stamp buffers are zeroed before the
        first launch and read after the last, so one step's start minus the previous step's argmax
        is the gap between launches as a decode loop sees it."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise TierInputError(f"steps={steps!r}; expected an int >= 1")
        ids = self._check_step_ids(token_ids, state)  # every check before the first launch: all steps run or none
        self._check_state(state, ids.shape[0], steps, step=True)
        buffers = torch.zeros(steps, self.times_words(), dtype=torch.int64, device=self.device)
        for times in buffers:  # (nothing between the launches but the launches; debug_poison would add its kernels)
            ids, _ = self.timed_launch(ids, state, times)
            self._advance_unchecked(state)
        words = buffers.cpu().tolist()
        self.check(state)
        return ids, [StepTimes.parse(w, self.k, self.grid) for w in words]

    def _decode_timed(self, token_ids, state, marks):
        """The interface's per-part timing: the in-kernel clock's µs per part into marks.put."""
        out, times = self.timed_launch(token_ids, state)
        st = StepTimes.parse(times.cpu().tolist(), self.k, self.grid)
        for name, us in st.parts_us(self.k.NLAYER, self.k.PHASES_PER_LAYER).items():
            marks.put(name, us)
        return out

    def clone_state(self, state: MegakernelState) -> MegakernelState:
        """An independent copy (the rope table, which no call writes, is shared)."""
        self.check(state)
        return MegakernelState(tier=state.tier, config=state.config, batch_size=state.batch_size,
                               max_seq_len=state.max_seq_len, positions=list(state.positions), fault=state.fault.clone(),
                               dn_state=state.dn_state.clone(), conv_ring=state.conv_ring.clone(),
                               k_cache=state.k_cache.clone(), v_cache=state.v_cache.clone(), rope=state.rope)
