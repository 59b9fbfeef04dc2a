"""The megakernel tier: every decode step is ONE persistent CUDA launch (csrc/megakernel.cu)
that runs the embedding row, 18 Gated DeltaNet and 6 gated attention layers, the final
norm, the lm_head and the greedy argmax. Batch 1, bf16, the qwen3.5-0.8b shapes only.

Prefill (`prefill="fast"`, the default) runs the prompt through tensor-core GEMMs, fla's
chunked delta rule, flash attention and this tier's fused CUDA kernels, replayed from a CUDA
graph per prompt shape (megakernel/prefill.py); it reads and writes the state below in place,
so prefill → decode continues exactly where the prompt left off. `prefill="reference"` (or a
machine without flash-linear-attention) runs `reference.HybridModel` on the GPU instead, on
views of the same state. A one-token prompt is one decode launch on either path.
State layout (MegakernelState):
    dn_state  [18, 16, 128 v, 128 k] fp32   (K contiguous: the transpose of ModelState's S)
    conv_ring [18, 4, 6144] bf16            pre-conv inputs, column = position % 4
    k_cache, v_cache [6, 2, max_seq, 256] bf16 (= ModelState's caches without the batch dim)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from reference import ModelConfig, Tier, TierInputError, TierState, TierUnavailable, record
from reference import ops as reference_ops
from reference.model import HybridModel, ModelState

from .prefill import FastPrefill, fla_unavailable_reason, layer_weights

SUPPORTED = ModelConfig.qwen3_5_0_8b()
# the fields the kernel hard-codes (everything but the name, eos ids and max positions)
SHAPE_FIELDS = (
    "vocab_size", "hidden_size", "intermediate_size", "layer_types", "num_attention_heads", "num_key_value_heads",
    "head_dim", "rope_theta", "partial_rotary_factor", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "rms_norm_eps",
)
N_LINEAR, N_FULL = len(SUPPORTED.linear_layers), len(SUPPORTED.full_layers)
D, VOCAB, INTER = SUPPORTED.hidden_size, SUPPORTED.vocab_size, SUPPORTED.intermediate_size
CONV = SUPPORTED.conv_dim
# slots of the per-layer pointer table (csrc/megakernel.cuh)
SL_IN_NORM, SL_POST_NORM, SL_WIN, SL_CONV_W, SL_A_LOG, SL_DT_BIAS, SL_GNORM = 0, 1, 2, 3, 4, 5, 6
SL_Q_NORM, SL_K_NORM, SL_OUT, SL_GATE_UP, SL_DOWN, NSLOT = 3, 4, 7, 8, 9, 10
NPHASES, NBARRIERS, UNIT_STAMPS = 24 * 5 + 1, 24 * 5, 4
NTIMES = NPHASES + 3 + 6 * UNIT_STAMPS  # phase exits, start/embed/lm_head stamps, attention unit stamps
RING_MAX_PRODUCERS = 2  # the timing buffer's per-block producer words (csrc/megakernel.cuh)
MAX_GRID = 1024  # the sync buffer has one publish word per block
SYNC_WORDS, ATT_MAX_SPLIT, ATT_PART = 32 * 5 + MAX_GRID, 64, 260
MKF_EARLY, MKF_PF_END, MKF_PF_SPREAD, MKF_PF_LINES, MKF_LM_PF, MKF_LIGHT_BAR = 1, 2, 4, 8, 16, 32
# v5 barrier variants (csrc/megakernel.cuh): generation-word exit; partial in-proj -> core barriers
# (the partial ones take effect with MKF_EARLY only: the plain kernel ignores them)
MKF_GEN_BAR, MKF_DN_FLAGS, MKF_FA_FLAGS = 64, 128, 256
# v6: weights streamed through a shared-memory ring (TMA bulk copies on sm_90; cp.async forced by the second)
MKF_RING, MKF_RING_TMA = 512, 1024
# v9: the ring's copies mark the weights' L2 lines evict-first (state, K/V cache, activations stay in L2)
MKF_EVICT_FIRST = 2048
# measurement: the weight stream alone (no compute, nothing written but the input id as the output)
MKF_STREAM_ONLY = 4096
MKF_TWO_PRODUCERS = 8192  # the ring filled by two producer warps (even / odd chunks)
# v11 attention split-K: the units count with one release-atomic, no fences (LEAN); with 2-8 splits
# the out-proj merges the partials itself, no count and no last-unit merge (OUT_MERGE)
MKF_LEAN_MERGE, MKF_OUT_MERGE = 16384, 32768
RING_MIN_SLOTS = 8  # csrc/megakernel.cuh: a matrix phase's item reads up to 8 slots at once
REGISTER_SCHEDULE = MKF_EARLY | MKF_LIGHT_BAR  # v4: the default where the ring does not fit
RING_SCHEDULE = MKF_RING | MKF_LIGHT_BAR | MKF_EVICT_FIRST | MKF_LEAN_MERGE | MKF_OUT_MERGE  # v11
PREFILL_PATHS = ("fast", "reference")
ATT_POSITIONS_PER_SPLIT = 32  # attention split-K: one unit per 32 positions of a kv head, at most 64


def config_mismatch(config: ModelConfig) -> list[str]:
    """The shape fields where `config` differs from the qwen3.5-0.8b the kernel is built for."""
    return [f"{f}={getattr(config, f)!r} (expected {getattr(SUPPORTED, f)!r})"
            for f in SHAPE_FIELDS if getattr(config, f) != getattr(SUPPORTED, f)]


def check_config(config: ModelConfig) -> None:
    bad = config_mismatch(config)
    if bad:
        raise TierInputError(
            f"the megakernel is compiled for the {SUPPORTED.name} shapes only; config {config.name!r} differs in "
            + ", ".join(bad[:6]) + (f", … ({len(bad) - 6} more)" if len(bad) > 6 else ""))


def check_batch(batch_size: int) -> None:
    if batch_size != 1:
        raise TierInputError(f"the megakernel decodes batch 1 only; got batch_size={batch_size} (expected 1)")


def check_ring_only_flags(flags: int) -> None:
    """The stream-only mode and the second producer belong to the ring schedule: without
    MKF_RING the kernel would ignore them and run (and time) a plain decode instead."""
    named = {"MKF_STREAM_ONLY": MKF_STREAM_ONLY, "MKF_TWO_PRODUCERS": MKF_TWO_PRODUCERS}
    asked = [name for name, bit in named.items() if flags & bit]
    if asked and not flags & MKF_RING:
        raise TierInputError(f"flags={flags}: {', '.join(asked)} work in the ring schedule only; add MKF_RING ({MKF_RING})")


def check_extension_constants(ext) -> None:
    """The buffer sizes this file allocates must be the ones the compiled kernel indexes."""
    expected = {"NPHASES": NPHASES, "NBARRIERS": NBARRIERS, "NTIMES": NTIMES, "RING_MAX_PRODUCERS": RING_MAX_PRODUCERS,
                "SYNC_WORDS": SYNC_WORDS, "ATT_MAX_SPLIT": ATT_MAX_SPLIT, "ATT_PART": ATT_PART, "NSLOT": NSLOT}
    wrong = [f"{k}: kernel {getattr(ext, k)}, tier {v}" for k, v in expected.items() if getattr(ext, k) != v]
    if wrong:
        raise RuntimeError("megakernel/tier.py and csrc/megakernel.cuh disagree (" + "; ".join(wrong) + ")")


def attention_splits(pos: int, per_split: int = ATT_POSITIONS_PER_SPLIT) -> int:
    """Split-K units per kv head for a token at position `pos` (context pos + 1), one per
    `per_split` positions."""
    return max(1, min(ATT_MAX_SPLIT, math.ceil((pos + 1) / per_split)))


@dataclass(eq=False)
class MegakernelState(TierState):
    dn_state: torch.Tensor = None
    conv_ring: torch.Tensor = None
    k_cache: torch.Tensor = None
    v_cache: torch.Tensor = None
    rope: torch.Tensor = None  # [max_seq, 2, 32] bf16 cos | sin per position (torch computes them)


class MegakernelTier(Tier):
    name = "megakernel"
    state_class = MegakernelState
    # schedule (see csrc/megakernel.cuh MKF_*): measured in megakernel/NOTES.md
    pf_dist = 0  # L2 prefetch distance in phases (0 turns prefetching off)
    flags = RING_SCHEDULE  # (REGISTER_SCHEDULE on GPUs whose shared memory cannot hold the ring)
    ring_inflight = 0  # the ring's producer keeps at most this many 16 KB chunks in flight (0: up to ring_slots)
    positions_per_split = ATT_POSITIONS_PER_SPLIT  # attention: split-K units per kv head = context / this

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
        from .build import load

        self.ext = load(self.device)
        check_extension_constants(self.ext)
        blocks_per_sm, num_sms, self.smem_bytes, self.ring_slots, self.ring_smem_bytes = self.ext.configure(self.device.index)
        self.max_ring_slots = self.ring_slots  # (ring_slots may be lowered for measurements, never raised)
        if not self.ring_slots:
            self.flags = REGISTER_SCHEDULE
        if blocks_per_sm < 1:
            raise TierUnavailable(f"the megakernel's block (512 threads, {self.smem_bytes} B shared memory) does not fit on an SM")
        # one block per SM: the persistent grid must be resident at once (the launch is cooperative too)
        self.max_grid = min(num_sms * min(blocks_per_sm, 1), MAX_GRID)
        self.grid = self.max_grid
        with torch.no_grad():
            self._pack_weights(weights)
            self._alloc_scratch()
        self.model = HybridModel(config, self.weights, reference_ops)
        self.prefill_weights = layer_weights(self)
        self.fast_prefill, self.prefill_note = None, "prefill: the reference's PyTorch ops (prefill='reference')"
        if prefill == "fast":
            reason = fla_unavailable_reason()
            if reason is None:
                self.fast_prefill = FastPrefill(self)
                self.prefill_note = None
            else:
                self.prefill_note = f"slow prefill (reference ops): {reason}"
        self._bar_base = 0
        self.debug_poison = False

    # ---- weights: packed per phase, the reference model sees views of the same memory ----
    def _pack_weights(self, weights):
        dev, bf = self.device, torch.bfloat16
        c = self.config

        def put(name):
            return weights[name].to(device=dev, dtype=bf).contiguous()

        def pack(names):
            rows = sum(weights[n].shape[0] for n in names)
            buf = torch.empty(rows, weights[names[0]].shape[1], dtype=bf, device=dev)
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
        self.weights["model.norm.weight"] = put("model.norm.weight")
        table = torch.zeros(c.num_layers, NSLOT, dtype=torch.int64)
        for i, kind in enumerate(c.layer_types):
            p = f"model.layers.{i}."
            for n in ("input_layernorm.weight", "post_attention_layernorm.weight", "mlp.down_proj.weight"):
                self.weights[p + n] = put(p + n)
            gu = pack([p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"])
            table[i, SL_IN_NORM] = self.weights[p + "input_layernorm.weight"].data_ptr()
            table[i, SL_POST_NORM] = self.weights[p + "post_attention_layernorm.weight"].data_ptr()
            table[i, SL_GATE_UP] = gu.data_ptr()
            table[i, SL_DOWN] = self.weights[p + "mlp.down_proj.weight"].data_ptr()
            if kind == "linear_attention":
                a = p + "linear_attn."
                win = pack([a + "in_proj_qkv.weight", a + "in_proj_z.weight", a + "in_proj_b.weight", a + "in_proj_a.weight"])
                for n in ("conv1d.weight", "A_log", "dt_bias", "norm.weight", "out_proj.weight"):
                    self.weights[a + n] = put(a + n)
                table[i, SL_WIN] = win.data_ptr()
                table[i, SL_CONV_W] = self.weights[a + "conv1d.weight"].data_ptr()  # [6144, 1, 4] = [6144][4]
                table[i, SL_A_LOG] = self.weights[a + "A_log"].data_ptr()
                table[i, SL_DT_BIAS] = self.weights[a + "dt_bias"].data_ptr()
                table[i, SL_GNORM] = self.weights[a + "norm.weight"].data_ptr()
                table[i, SL_OUT] = self.weights[a + "out_proj.weight"].data_ptr()
            else:
                a = p + "self_attn."
                win = pack([a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"])
                for n in ("q_norm.weight", "k_norm.weight", "o_proj.weight"):
                    self.weights[a + n] = put(a + n)
                table[i, SL_WIN] = win.data_ptr()
                table[i, SL_Q_NORM] = self.weights[a + "q_norm.weight"].data_ptr()
                table[i, SL_K_NORM] = self.weights[a + "k_norm.weight"].data_ptr()
                table[i, SL_OUT] = self.weights[a + "o_proj.weight"].data_ptr()
            self.packed_in_proj.append(win)
            self.packed_gate_up.append(gu)
        self.layer_table = table.to(dev)

    def _alloc_scratch(self):
        dev, bf, f32 = self.device, torch.bfloat16, torch.float32
        self.scratch = {
            "hidden": torch.zeros(D, dtype=bf, device=dev),
            "zab": torch.zeros(2048 + 32, dtype=bf, device=dev),
            "obuf": torch.zeros(2048, dtype=bf, device=dev),
            "qkv": torch.zeros(5120, dtype=bf, device=dev),
            "attn": torch.zeros(2048, dtype=bf, device=dev),
            "act": torch.zeros(INTER, dtype=bf, device=dev),
            "apart": torch.zeros(2 * ATT_MAX_SPLIT * 4 * ATT_PART, dtype=f32, device=dev),
            "amax_val": torch.zeros(self.max_grid, dtype=f32, device=dev),
            "amax_idx": torch.zeros(self.max_grid, dtype=torch.int32, device=dev),
        }
        self.sync = torch.zeros(SYNC_WORDS, dtype=torch.int32, device=dev)

    # ---- state ------------------------------------------------------------------
    def _new_state(self, batch_size, max_seq_len):
        check_batch(batch_size)
        dev, c = self.device, self.config
        return MegakernelState(
            tier=self.name, config=c, batch_size=batch_size, max_seq_len=max_seq_len,
            dn_state=torch.zeros(N_LINEAR, c.linear_num_value_heads, c.linear_value_head_dim, c.linear_key_head_dim,
                                 dtype=torch.float32, device=dev),
            conv_ring=torch.zeros(N_LINEAR, 4, CONV, dtype=torch.bfloat16, device=dev),
            k_cache=torch.zeros(N_FULL, c.num_key_value_heads, max_seq_len, c.head_dim, dtype=torch.bfloat16, device=dev),
            v_cache=torch.zeros(N_FULL, c.num_key_value_heads, max_seq_len, c.head_dim, dtype=torch.bfloat16, device=dev),
            rope=self._rope_table(max_seq_len),
        )

    def _rope_table(self, max_seq_len):
        """cos, sin of every position exactly as reference.ops.rope_cos_sin makes them (bf16)."""
        c = self.config
        cos, sin = reference_ops.rope_cos_sin(positions=torch.arange(max_seq_len, device=self.device),
                                              rotary_dim=c.rotary_dim, theta=c.rope_theta, dtype=torch.bfloat16)
        half = c.rotary_dim // 2
        return torch.stack([cos[:, :half], sin[:, :half]], dim=1).contiguous()

    def _check_state(self, state, batch_size, n_new):
        check_batch(batch_size)
        super()._check_state(state, batch_size, n_new)

    @staticmethod
    def _conv_columns(seq_len):
        """Ring columns holding positions seq_len-3, seq_len-2, seq_len-1 (ModelState.conv order)."""
        return [(seq_len - 3 + i) % 4 for i in range(3)]

    def to_model_state(self, state: MegakernelState) -> ModelState:
        """The reference layout of `state`: caches and S are views (writes go through), conv a copy."""
        cols = self._conv_columns(state.seq_len)
        conv = state.conv_ring[:, cols, :].permute(0, 2, 1).unsqueeze(1).contiguous()  # [18, 1, 6144, 3]
        return ModelState(
            tier="reference", config=self.config, batch_size=1, max_seq_len=state.max_seq_len, seq_len=state.seq_len,
            conv=conv, recurrent=state.dn_state.unsqueeze(1).transpose(-1, -2),
            k_cache=state.k_cache.unsqueeze(1), v_cache=state.v_cache.unsqueeze(1),
        )

    def _store_conv(self, state: MegakernelState, conv, seq_len):
        cols = self._conv_columns(seq_len)
        state.conv_ring[:, cols, :] = conv[:, 0].permute(0, 2, 1).to(torch.bfloat16)

    # ---- prefill: fast (prefill.py), or the reference forward pass on this tier's state ----
    @torch.inference_mode()
    def _prefill(self, input_ids, state, trace):
        if input_ids.shape[1] == 1:  # one token is one decode step: the single launch reads the weights once
            return self._decode(input_ids[:, 0], state, trace)
        if self.fast_prefill is not None:
            return self.fast_prefill(input_ids, state, trace)
        ms = self.to_model_state(state)
        logits = self.model.forward(input_ids, ms, trace)
        self._store_conv(state, ms.conv, state.seq_len + input_ids.shape[1])
        return logits

    # ---- decode: one launch -------------------------------------------------------
    def poison(self, state=None):
        """NaN into every scratch buffer, the cache rows past the sequence and the conv column
        the next token overwrites, so an unwritten read shows up (tests)."""
        for t in self.scratch.values():
            t.fill_(-1 if not t.is_floating_point() else float("nan"))
        if state is not None:
            state.k_cache[:, :, state.seq_len:] = float("nan")
            state.v_cache[:, :, state.seq_len:] = float("nan")
            state.conv_ring[:, state.seq_len % 4] = float("nan")

    def _out(self, *shape, dtype=torch.float32):
        if self.debug_poison:
            return torch.full(shape, float("nan") if dtype.is_floating_point else -1, dtype=dtype, device=self.device)
        return torch.empty(*shape, dtype=dtype, device=self.device)

    def _launch(self, state, token_ids, out_token, logits=None, trace=None, times=None, stop_after=-1):
        if not 1 <= self.grid <= self.max_grid:
            raise TierInputError(f"grid={self.grid} outside [1, {self.max_grid}] (blocks that can be resident at once)")
        if not isinstance(self.positions_per_split, int) or self.positions_per_split < 1:
            raise TierInputError(f"positions_per_split={self.positions_per_split!r}; expected an int >= 1")
        check_ring_only_flags(self.flags)
        if self.flags & MKF_RING and not self.max_ring_slots:
            raise TierInputError("flags ask for the ring schedule (MKF_RING), but this GPU's shared memory cannot hold "
                                 f"{RING_MIN_SLOTS} slots of 16 KB; use REGISTER_SCHEDULE")
        if self.flags & MKF_RING and not RING_MIN_SLOTS <= self.ring_slots <= self.max_ring_slots:
            raise TierInputError(f"ring_slots={self.ring_slots!r}; expected {RING_MIN_SLOTS}..{self.max_ring_slots} "
                                 "(the most this GPU's shared memory holds)")
        if self.debug_poison:
            self.poison(state)
        s = self.scratch
        token_ids = token_ids.contiguous()
        ptrs = [
            self.layer_table.data_ptr(), self.weights["model.embed_tokens.weight"].data_ptr(),
            self.weights["model.norm.weight"].data_ptr(),
            state.dn_state.data_ptr(), state.conv_ring.data_ptr(), state.k_cache.data_ptr(), state.v_cache.data_ptr(),
            s["hidden"].data_ptr(), s["zab"].data_ptr(), s["obuf"].data_ptr(), s["qkv"].data_ptr(), s["attn"].data_ptr(),
            s["act"].data_ptr(), s["apart"].data_ptr(), s["amax_val"].data_ptr(), s["amax_idx"].data_ptr(),
            self.sync.data_ptr(), token_ids.data_ptr(), out_token.data_ptr(),
            0 if logits is None else logits.data_ptr(), 0 if trace is None else trace.data_ptr(),
            0 if times is None else times.data_ptr(), state.rope.data_ptr(),
        ]
        pos = state.seq_len
        ints = [state.max_seq_len, pos, attention_splits(pos, self.positions_per_split), self._bar_base, int(self.pf_dist), int(stop_after),
                self.grid, int(self.flags), self.ring_slots, int(self.ring_inflight)]
        self.ext.launch(self.device.index, ptrs, ints)
        barriers = NBARRIERS if stop_after < 0 or stop_after >= NBARRIERS else stop_after + 1
        self._bar_base = (self._bar_base + barriers * self.grid) & 0xFFFFFFFF

    def _decode(self, token_ids, state, trace):
        logits = self._out(VOCAB)
        buf = self._out(self.config.num_layers + 2, D) if trace is not None else None
        out = self._out(1, dtype=torch.int64)
        self._launch(state, token_ids, out, logits=logits, trace=buf)
        if trace is not None:
            record(trace, "embed", buf[0].view(1, 1, D))
            for i in range(self.config.num_layers):
                record(trace, f"layers.{i}", buf[1 + i].view(1, 1, D))
            record(trace, "norm", buf[-1].view(1, 1, D))
        return logits.view(1, VOCAB)

    def _decode_argmax(self, token_ids, state):
        out = self._out(1, dtype=torch.int64)
        self._launch(state, token_ids, out)
        return out

    def decode_layer_times(self, token_ids, state) -> dict[str, float]:
        """One greedy decode step (the state advances) with %globaltimer stamps at every phase
        boundary inside the launch → µs per "embed", "layers.{i}", "norm", "lm_head"."""
        ids = self._check_ids(token_ids, dims=1, what="token_ids", shape_hint="[B]", check_range=False)
        self._check_state(state, ids.shape[0], 1)
        if state.seq_len == 0:
            raise TierInputError("decode on an empty state; expected prefill of at least one token first")
        times = self.times_buffer()
        out = self._out(1, dtype=torch.int64)
        self._launch(state, ids, out, times=times)
        state.seq_len += 1
        t = times.cpu().tolist()
        us = lambda a, b: (t[b] - t[a]) / 1000.0  # noqa: E731
        res = {"embed": us(0, NPHASES + 2)}
        for i in range(self.config.num_layers):
            res[f"layers.{i}"] = us(NPHASES + 2 if i == 0 else 5 * i, 5 * (i + 1))
        res["norm"] = us(NBARRIERS, NPHASES + 1)
        res["lm_head"] = us(NPHASES + 1, NPHASES)
        self.last_phase_stamps = t[:NTIMES]
        # every block's arrival at every barrier: skew (last - first arrival) and latency (exit - last)
        arr = torch.tensor(t[NTIMES:NTIMES + self.grid * NBARRIERS], dtype=torch.float64).view(self.grid, NBARRIERS)
        self.last_barrier_arrivals = arr  # [grid, NBARRIERS] ns (megakernel.bench.phase_anatomy)
        full = t[NTIMES + self.grid * NBARRIERS:NTIMES + self.grid * (NBARRIERS + RING_MAX_PRODUCERS)]
        # [grid] µs the block's producer warp waited for a free ring slot in the layers (0: no ring;
        # MKF_TWO_PRODUCERS: the longer of the two waits)
        self.last_ring_full_us = torch.tensor(full, dtype=torch.float64).view(self.grid, RING_MAX_PRODUCERS).amax(1) / 1000.0
        exit_ = torch.tensor(t[1:NBARRIERS + 1], dtype=torch.float64)
        self.last_barrier_stats = {
            "skew_us": ((arr.max(0).values - arr.min(0).values) / 1000.0).tolist(),
            "latency_us": ((exit_ - arr.max(0).values) / 1000.0).tolist(),
        }
        return res

    def times_buffer(self) -> torch.Tensor:
        """A zeroed buffer for the timing mode's stamps (Args::times)."""
        return torch.zeros(NTIMES + self.max_grid * (NBARRIERS + RING_MAX_PRODUCERS), dtype=torch.int64, device=self.device)

    def clone_state(self, state: MegakernelState) -> MegakernelState:
        """An independent copy (tests: run the same step twice)."""
        return MegakernelState(tier=state.tier, config=state.config, batch_size=state.batch_size,
                               max_seq_len=state.max_seq_len, seq_len=state.seq_len,
                               dn_state=state.dn_state.clone(), conv_ring=state.conv_ring.clone(),
                               k_cache=state.k_cache.clone(), v_cache=state.v_cache.clone(), rope=state.rope)
