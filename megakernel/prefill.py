"""Fast prefill for the megakernel tier: the whole prompt through the 24 layers on the
tensor cores, captured once per prompt shape as a CUDA graph and replayed.

Per layer (launches; the memory-bound steps are fused kernels of csrc/prefill.cu):
    add+RMSNorm → in-proj GEMM (packed [qkv|z|b|a] or [q+gate|k|v]; every GEMM by cuBLAS's pick or a
              cuBLASLt algorithm, whichever measured faster for its shape: prefill_gemm.py) →
    DeltaNet: conv+SiLU+l2norm+gates (1 kernel; also the padding rows up to the rule's 64-row chunk:
              rule_rows) → the chunked delta rule (FlashQLA's where installed, else fla's:
              prefill_delta_rule.py; state read and written in the decode kernel's [V][K] layout) → gated norm + conv ring + the final state into the decode state
    attention: q/k norm + RoPE + cache write (1 kernel) → causal attention → output gate; a fresh
              prompt: SDPA over its own keys (cuDNN's Hopper kernel where torch picks it); after
              earlier tokens: the cache's earlier positions copied next to the new ones, then flash
              attention (varlen, causal aligned to the lower right: query i sees keys <= start + i;
              the key count read from the device)
    → out-proj GEMM → add+RMSNorm → gate/up GEMM → SwiGLU → down GEMM
Past SPLIT_K_ROWS rows (and at any length where the GEMMs are not split) the out-projections and downs
add into the residual stream themselves (beta = 1) and the norms before the gate/ups and the attention
layers' in-projections are folded into those GEMMs' weights (W (1 + w), folded_weights), the GEMMs
reading the residual stream and their consumers (SwiGLU, attention's inputs) applying 1 / rms: 30 of
the 49 add+RMSNorm launches gone at the 0.8B.
then the final norm (of the last position where it is known on the host) and the lm_head GEMV of
the last valid position: no logits for the rest of the prompt. A fresh prompt's last layer runs for its
last row alone past its in-projection and attn_prep (which write every row's K/V): where the norms are
folded, by our M = 1 kernels (attn_last_row: the row's attention split over the keys, merged and gated in
one launch; gemv_add_row: the out-projection and down into the residual; gate_up_swiglu_row: gate/up and
SwiGLU), else by the same launches as every row, on one row. Why a graph of ~270-370 launches and not one kernel: megakernel/NOTES.md ("Prefill").

The state, the start position and the prompt's valid tokens are reached through a device table
(5 pointers, the start, the count, a refused word; csrc/prefill.cuh), so one graph per (rows, max_seq_len, fresh or
not) serves every state of that max_seq_len at every start > 0 and one every fresh prompt of that
length. A prompt after earlier tokens is padded to a multiple of PAD_ROWS rows (padding rows leave
the state as it is and write nothing to the cache), so a conversation's turns of any length up to
a multiple of 64 replay one graph, as do a long prompt's chunks. The graph reads and writes the state in place (no copies in or out,
nothing through the host but the table). Before each launch of the graph one launch (bind) writes the
prompt's ids (copied first where they are on the CPU), the table and flash's lengths from its kernel
arguments; both launches are made by one module function (launch_prefill_graph: no torch op, sync or torch
replay before them), which also checks the ids against the vocabulary: CPU ids on the host before anything is
launched, device ids by the bind launch, which stores their range into pinned memory the host polls after the
graph's launch (a refused prompt's graph writes nothing of the state, and the call raises). A shape's first
prefill runs eagerly (bind, then run(): the ids checked between) and the graph is captured at its second
(NOTES "Prefill", v3, v5, v15, v19, v21).
"""

from __future__ import annotations

import collections

import torch
import torch.nn.functional as F

from reference import check_id_range, id_range, record
from reference.config import LINEAR

from . import ops, prefill_delta_rule
from .prefill_gemm import PrefillGemms

MAX_PLANS = 4  # prefill shapes kept, with their buffers and graphs (least recently used dropped first)
PAD_ROWS = 64  # the delta rules' chunk (fla's, FlashQLA's): a prompt after earlier tokens runs in a plan of rows rounded
# up to this, and every plan's delta rule in rows rounded up to it (rule_rows)
FLASH_BLOCK_M = 64  # query rows per block of flash attention's head-dim-256 forward kernel (FA2)
# the out-projections and downs (N = hidden) of a plan of at most SPLIT_K_ROWS rows run as one batched GEMM over
# SPLIT_K slices of K into fp32 partials: at 256 rows cuBLAS's own tiles leave most of the 132 SMs idle (out 7.25 ->
# 5.55 µs, down 9.91 -> 6.97); at 520 rows no gain (docs/results/2026-11-26-h100-s23 call 1). Measured at the
# 0.8B's hidden size (1,024) only: other sizes keep one GEMM
SPLIT_K, SPLIT_K_ROWS, SPLIT_K_HIDDEN = 2, 256, 1024
# a fresh prompt's last-row attention (prefill_attn_last_row): blocks of at least LAST_ROW_KEYS keys, at most
# k.PREFILL_LAST_ROW_MAX_SPLITS of them a kv head (the last block of each merges their partials)
LAST_ROW_KEYS = 32


def context_pieces(T: int, max_seq: int, heads: int, sms: int) -> int:
    """Pieces the keys before a continuing prompt are split into, so that flash attention has about
    two blocks per SM: it runs one block per (query block, head, sequence) and splits no sequence
    itself (a 256-token turn on a 16k context: 32 blocks, 0.5 ms a layer in one piece; call 5).
    1 (no split) when the prompt alone gives the blocks; at most one piece per 512 positions."""
    blocks = heads * -(-T // FLASH_BLOCK_M)
    return max(1, min(-(-2 * sms // blocks), -(-max_seq // 512)))


def split_k(T: int, hidden: int) -> int:
    """Slices of K the out-projections and downs of a T-row plan run in (1: one plain GEMM); the batched
    fp32-output GEMM needs torch >= 2.8 (aten.bmm.dtype_out), older torch keeps one GEMM."""
    if T > SPLIT_K_ROWS or hidden != SPLIT_K_HIDDEN or not hasattr(torch.ops.aten.bmm, "dtype_out"):
        return 1
    return SPLIT_K


def unavailable_reason() -> str | None:
    """Why the fast prefill cannot run here (fla's chunked delta rule, torch's flash attention with
    a key count read from the device), or None."""
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule  # noqa: F401
    except Exception as e:  # ImportError, or triton failing to initialise
        return f"flash-linear-attention is not importable ({type(e).__name__}: {e})"
    if not torch.backends.cuda.is_flash_attention_available():
        return "this torch build has no flash attention (torch.backends.cuda.is_flash_attention_available())"
    schema = str(torch.ops.aten._flash_attention_forward.default._schema)
    if "seqused_k" not in schema:
        return f"torch {torch.__version__}'s flash attention takes no seqused_k (aten::_flash_attention_forward)"
    return None


def layer_weights(tier) -> list[dict]:
    """Per layer: the tensors the prefill reads (views of the tier's packed weights)."""
    w, c = tier.weights, tier.config
    out = []
    for i, kind in enumerate(c.layer_types):
        p = f"model.layers.{i}."
        lw = {"in_norm": w[p + "input_layernorm.weight"], "post_norm": w[p + "post_attention_layernorm.weight"],
              "win": tier.packed_in_proj[i], "gate_up": tier.packed_gate_up[i], "down": w[p + "mlp.down_proj.weight"]}
        if kind == LINEAR:
            a = p + "linear_attn."
            lw.update(conv_w=w[a + "conv1d.weight"].view(-1, c.linear_conv_kernel_dim), a_log=w[a + "A_log"],
                      dt_bias=w[a + "dt_bias"], gnorm=w[a + "norm.weight"], out=w[a + "out_proj.weight"])
        else:
            a = p + "self_attn."
            lw.update(q_norm=w[a + "q_norm.weight"], k_norm=w[a + "k_norm.weight"], out=w[a + "o_proj.weight"])
        out.append(lw)
    return out


def folded_pairs(tier) -> list[list[tuple[str, str]]]:
    """Per layer, the (weight, norm) names of layer_weights whose norm a folding plan takes into the weight:
    the gate/up and the post-attention norm; at an attention layer also the in-projection and the input norm."""
    return [[("gate_up", "post_norm")] + ([] if kind == LINEAR else [("win", "in_norm")])
            for kind in tier.config.layer_types]


def folded_weights(tier, into: list[dict] | None = None) -> list[dict]:
    """Per layer, the weights that take an RMSNorm in (folded_pairs): bf16(W (1 + w)) from fp32, by input
    column. A plan that folds (split_k 1) reads the residual stream x itself into those GEMMs, and their
    consumers (silu_mul, attn_prep) apply each row's 1 / rms(x): no add_rms_norm launch before them (NOTES
    "Prefill" v18). A second copy of those weights (~415 MB at the 0.8B, ~7.1 GB at the 9B); `into`: an earlier result refilled
    in place (the graphs captured with it keep reading its tensors)."""
    out = into if into is not None else [{} for _ in tier.prefill_weights]
    for f, lw, pairs in zip(out, tier.prefill_weights, folded_pairs(tier)):
        for name, norm in pairs:
            w = (lw[name].float() * (1.0 + lw[norm].float())).bfloat16()
            if name in f:
                f[name].copy_(w)
            else:
                f[name] = w
    return out


def state_table(state, valid: int) -> list[int]:
    """The state's pointers, its next position (the prefill's start), the prompt's `valid` tokens and
    the refused word (0) in csrc/prefill.cuh StateSlot order."""
    return [state.dn_state.data_ptr(), state.conv_ring.data_ptr(), state.k_cache.data_ptr(), state.v_cache.data_ptr(),
            state.rope.data_ptr(), state.seq_len, valid, 0]  # (ST_REFUSED: the bind launch's to set)


def check_fits(n: int, start: int, max_seq: int) -> None:
    """A prompt of n >= 1 tokens at `start` must fit the state's max_seq positions (ValueError)."""
    if n < 1 or start < 0 or start + n > max_seq:
        raise ValueError(f"a prompt of {n} tokens at position {start} does not fit a state of max_seq_len {max_seq}")


def plan_rows(T: int, start: int, max_seq: int) -> int:
    """The rows of the plan that prefills T tokens at `start`: T for a fresh prompt, else T rounded
    up to a multiple of PAD_ROWS (at most max_seq)."""
    return T if start == 0 else min(rule_rows(T), max_seq)


def rule_rows(T: int) -> int:
    """The rows a plan of T rows gives its delta rule: T rounded up to whole chunks of PAD_ROWS, the rows past T
    padding (dn_prep writes them: q, k, v 0, beta 0, g's step 0), so the rule leaves the state as T rows would and
    never takes a path for a part chunk (FlashQLA's loads a part chunk element by element on one warp, not by TMA:
    NOTES "Prefill" v25)."""
    return -(-T // PAD_ROWS) * PAD_ROWS


def flash(q, kv, cu_q, cu_k, max_q: int, max_k: int, causal: bool, used=None):
    """torch's flash attention (FA2), variable-length form: q [rows, 8, 256] against the keys and
    values kv [2, max_seq, 2, 256] (the 8 q heads over the 2 kv heads: GQA in the kernel); sequence b
    has the queries [cu_q[b], cu_q[b + 1]) and the keys from cu_k[b] (the first used[b] of them
    where given); causal aligned to the lower right → (out [rows, 8, 256], log-sum-exp)."""
    return torch.ops.aten._flash_attention_forward(q, kv[0], kv[1], cu_q, cu_k, max_q, max_k, 0.0, causal, False,
                                                   scale=q.shape[-1] ** -0.5, seqused_k=used)[:2]


def lse_by_piece(lse: torch.Tensor, n: int, T: int) -> torch.Tensor:
    """flash's log-sum-exps of n sequences of T queries → [n, heads, T] (FA2 gives [heads, n * T]
    in the variable-length form; older versions [n, heads, max_q])."""
    if lse.dim() == 2:
        return lse.view(lse.shape[0], n, T).transpose(0, 1)
    return lse[:, :, :T]


class PrefillPlan:
    """Static buffers and the launch sequence of one prefill shape: T rows into a state with
    `max_seq` positions, at start 0 (`fresh`: a prompt of T tokens) or at whatever start > 0 the
    table holds (a prompt of 1..T tokens, the rest padding; start + tokens <= max_seq)."""

    def __init__(self, tier, T: int, max_seq: int, fresh: bool, kv: torch.Tensor | None = None,
                 delta_rule: str = "fla", folded=None, gemms: PrefillGemms | None = None):
        R = rule_rows(T)  # (the delta rule's rows: T, then padding to a whole chunk)
        self.delta_rule = prefill_delta_rule.make(delta_rule, R, tier.k.DN_HV, tier.device)
        self.gemm = gemms if gemms is not None else PrefillGemms(tier)  # (each GEMM shape by its fastest way)
        self.op = {name: ops.op(name, tier.ops_namespace) for name in ops.OP_NAMES if name.startswith("prefill_")}
        self.tier, self.T, self.max_seq, self.fresh = tier, T, max_seq, fresh
        self.k = k = tier.k
        self.eps = tier.config.rms_norm_eps
        dev, bf, f32, i32 = tier.device, torch.bfloat16, torch.float32, torch.int32
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        self.pieces = 1 if fresh else context_pieces(T, max_seq, k.FA_HQ, sms)
        self.piece = -(-max_seq // self.pieces)
        # what bind() writes for each prompt in one launch (prefill_bind; csrc/prefill.cuh BindWord):
        # int64 words [ids (T) | state table | int32s: used, cu_q (2), cu_new (2), used_pieces (pieces) |
        # the ids' min and max], and those two (and, from a graph's launch, its number) in pinned host memory, where
        # the host checks them: id_range for bind() (before run() reads the ids), launch_range for launch() (after the
        # graph's launch, once the bind launch has written the launch's number after them); the bind kernel stores
        # them there itself
        S, n32 = k.PREFILL_STATE_SLOTS, k.PREFILL_BIND_USED_PIECES + self.pieces
        self.words = torch.zeros(T + S + -(-n32 // 2) + k.PREFILL_BIND_RANGE_WORDS, dtype=torch.int64, device=dev)
        self.id_range, self.launch_range = (torch.zeros(k.PREFILL_BIND_HOST_WORDS, dtype=torch.int64, pin_memory=True)
                                            for _ in range(2))
        self.id_range_host = self.id_range.numpy()  # (read without a torch op)
        self.range_ready = torch.cuda.Event()  # (recorded after bind()'s launch: its range is then on the host)
        self.graph = self.graph_exec = None  # (capture(): the torch graph, its instantiation launched by launch())
        self.launches = 0  # (the graph's launches: each one's number comes back with its ids' range)
        self.ids, self.table = self.words[:T], self.words[T:T + S]
        w32 = self.words[T + S:-k.PREFILL_BIND_RANGE_WORDS].view(torch.int32)
        at = lambda i, n: w32[i:i + n]  # noqa: E731
        self.used, self.cu_q = at(k.PREFILL_BIND_USED, 1), at(k.PREFILL_BIND_CU_Q, 2)
        self.cu_new, self.used_pieces = at(k.PREFILL_BIND_CU_NEW, 2), at(k.PREFILL_BIND_USED_PIECES, self.pieces)
        self.res = torch.empty(T, k.D, dtype=bf, device=dev)       # residual stream
        self.h = torch.empty(T, k.D, dtype=bf, device=dev)         # normed input of the next GEMM (not folded)
        # the output of the last GEMM (an out-projection or down, N = hidden): at most SPLIT_K_ROWS rows, the
        # fp32 partials [SPLIT_K, T, D] of those GEMMs split over K (one batched GEMM; add_rms_norm sums them),
        # and [SPLIT_K, 1, D] for a fresh prompt's last row alone; else added into the residual stream by the
        # GEMM itself (beta = 1, one rounding), and the norms before the gate/ups and the attention layers'
        # in-projections folded into their weights (`folded()`: folded_weights(tier), called there alone;
        # None: made here)
        self.split_k = split_k(T, k.D)
        self.folded = None
        if self.split_k > 1:
            self.xs = torch.empty(self.split_k, T, k.D, dtype=f32, device=dev)
            self.xs_last = torch.empty(self.split_k, 1, k.D, dtype=f32, device=dev)
        else:
            self.folded = folded() if folded is not None else folded_weights(tier)
        self.proj_buf = torch.empty(T * max(k.DN_WIN, k.FA_QKV), dtype=bf, device=dev)
        self.mix = torch.empty(T, k.DN_VAL, dtype=bf, device=dev)  # mixer output, the out-proj's input
        self.gu = torch.empty(T, 2 * k.INTER, dtype=bf, device=dev)
        self.act = torch.empty(T, k.INTER, dtype=bf, device=dev)
        # q, k by key head, v and the gates by value head (fla's GVA: value head h reads key head h // DN_GROUP), R rows
        self.dn_q, self.dn_k = (torch.empty(1, R, k.DN_HK, k.DN_DK, dtype=bf, device=dev) for _ in range(2))
        self.dn_v = torch.empty(1, R, k.DN_HV, k.DN_DV, dtype=bf, device=dev)
        self.g, self.beta = (torch.empty(1, R, k.DN_HV, dtype=f32, device=dev) for _ in range(2))
        self.h0 = torch.empty(1, k.DN_HV, k.DN_DV, k.DN_DK, dtype=f32, device=dev)  # (each layer's, by its dn_prep)
        # the rule's chunk matrices where it takes them of dn_prep's chunk (FlashQLA's A, by dn_prep's WY blocks: R
        # whole chunks); else the rule makes its own
        wy = self.delta_rule.takes_a and self.delta_rule.g_chunk == k.PREFILL_WY_ROWS
        self.dn_a = torch.empty(1, R, k.DN_HV, k.PREFILL_WY_ROWS, dtype=bf, device=dev) if wy else None
        self.qbuf = torch.empty(T, k.FA_HQ, k.FA_HD, dtype=bf, device=dev)
        # keys and values of positions [0, start + n) (n: the valid tokens), token-major (flash's
        # varlen layout), sized for any start; flash reads the first `used` = start + n of them, query
        # i (position start + i) sees keys <= start + i (causal aligned to the lower right of an
        # [n, used] score matrix)
        # (FastPrefill shares one between the plans of a max_seq: they run one at a time)
        self.kv = kv if kv is not None else torch.empty(2, max_seq, k.FA_HKV, k.FA_HD, dtype=bf, device=dev)
        self.cu_k = torch.tensor([0, max_seq], dtype=i32, device=dev)
        # after earlier tokens, in `pieces` > 1: the earlier keys as `pieces` sequences of `piece`
        # positions (the last one shorter; `used_pieces` of each before the start), each seen by a
        # copy of the T query rows without a mask; the n new keys (at `cu_new`: start, start + n) with
        # the causal mask; the parts merged by their log-sum-exps
        if self.pieces > 1:
            bounds = [min(i * self.piece, max_seq) for i in range(self.pieces + 1)]
            self.cu_pieces_k = torch.tensor(bounds, dtype=i32, device=dev)
            self.cu_pieces_q = torch.arange(self.pieces + 1, dtype=i32, device=dev) * T
            self.q_pieces = torch.empty(self.pieces * T, k.FA_HQ, k.FA_HD, dtype=bf, device=dev)
        # a fresh prompt's last row through the last layer where the norms are folded (by_row_kernels): its attention
        # split over chunks of last_row_keys keys, their partials and a counter a kv head (zero between launches)
        self.last_row_part = self.last_row_count = None
        if fresh and self.folded is not None:
            self.last_row_keys = max(LAST_ROW_KEYS, -(-T // k.PREFILL_LAST_ROW_MAX_SPLITS))
            splits = -(-T // self.last_row_keys)
            self.last_row_part = torch.empty(k.FA_HKV, splits, k.FA_GROUP, k.PREFILL_LAST_ROW_PART_HEAD + k.FA_HD,
                                             dtype=f32, device=dev)
            self.last_row_count = torch.zeros(k.FA_HKV, dtype=i32, device=dev)
        self.logits = torch.empty(k.VOCAB, dtype=f32, device=dev)
        self.uses = 0  # prefills of this shape so far (the graph is captured at the second)
        self.valid = T  # the bound prompt's tokens (prompt())

    # ---- the launch sequence --------------------------------------------------------
    def run(self, trace=None):
        """One prefill on the state the table points at (eager, or being captured)."""
        t, op, T, eps, D = self.tier, self.op, self.T, self.eps, self.k.D
        W, FW = t.prefill_weights, self.folded
        fold = FW is not None
        embed = t.weights["model.embed_tokens.weight"]
        op["prefill_add_rms_norm"](None, self.ids, embed, self.res, W[0]["in_norm"], self.h, eps)
        record(trace, "embed", self.res.view(1, T, D)[:, :self.valid])
        # only the last valid position's logits are wanted: for a fresh prompt without a trace, the
        # last layer's output (its attention core, out-projection and MLP) is computed for that row
        # alone (its K/V, conv ring and delta-rule state for every row); after earlier tokens which
        # row that is, the device knows, so every row runs
        last_only = trace is None and self.fresh
        for i, kind in enumerate(t.config.layer_types):
            w, slot = W[i], t.config.layer_slot(i)
            r = slice(T - 1, T) if last_only and i == len(W) - 1 else slice(0, T)
            if i > 0 and not (fold and kind != LINEAR):  # (folded: the sum is in res already; a DeltaNet's norm)
                op["prefill_add_rms_norm"](None if fold else self.out_rows(slice(0, T)), None, embed, self.res, w["in_norm"],
                                           self.h, eps)
            if kind == LINEAR:
                self.deltanet(w, slot, r)
            else:
                self.attention(w, slot, r, FW[i]["win"] if fold else None)
            if self.by_row_kernels(r):  # (gate/up and SwiGLU in one launch, the folded norm's 1 / rms in it)
                op["prefill_gate_up_swiglu_row"](self.res[r], FW[i]["gate_up"], self.act[r], eps)
            elif fold:  # (the post-attention norm's (1 + w) in the weights, 1 / rms by silu_mul)
                self.gemm(self.res[r], FW[i]["gate_up"], self.gu[r], 0)
                op["prefill_silu_mul"](self.gu[r], self.act[r], self.res[r], eps)
            else:
                op["prefill_add_rms_norm"](self.out_rows(r), None, embed, self.res[r], w["post_norm"], self.h[r], eps)
                self.gemm(self.h[r], w["gate_up"], self.gu[r], 0)
                op["prefill_silu_mul"](self.gu[r], self.act[r])
            self.project(self.act[r], w["down"], r)
            if trace is not None:  # (the layer's output: residual + x, one rounding, as add_rms_norm or the GEMM forms it)
                out = self.res if fold else (self.res.float() + self.out_rows(slice(0, T)).sum(0)).bfloat16()
                record(trace, f"layers.{i}", out.view(1, T, D)[:, :self.valid])
        rows = slice(T - 1, T) if last_only else slice(0, T)
        op["prefill_add_rms_norm"](None if fold else self.out_rows(rows), None, embed, self.res[rows],
                                   t.weights["model.norm.weight"], self.h[rows], eps)
        record(trace, "norm", self.h.view(1, T, D)[:, :self.valid])
        op["prefill_lm_head"](self.h, self.table, t.lm_head_weight, self.logits)

    def by_row_kernels(self, rows) -> bool:
        """Whether `rows` is a fresh prompt's last row alone in a plan whose norms are folded: the last layer's
        attention, out-projection and MLP of that row run by our M = 1 kernels (attn_last_row, gemv_add_row,
        gate_up_swiglu_row), not by the launches every row takes."""
        return self.last_row_part is not None and rows.stop - rows.start == 1

    def deltanet(self, w, slot, rows):
        """The DeltaNet mixer on every row, its out-projection of `rows` (project)."""
        op, T, k = self.op, self.T, self.k
        proj = self.proj_buf[:T * k.DN_WIN].view(T, k.DN_WIN)
        self.gemm(self.h, w["win"], proj, 0)
        op["prefill_dn_prep"](proj, self.table, slot, w["conv_w"], w["a_log"], w["dt_bias"],
                              self.dn_q, self.dn_k, self.dn_v, self.g, self.beta, self.h0, self.delta_rule.g_chunk,
                              self.dn_a)
        if self.delta_rule.g_linear:  # (a rule that takes the decay e^g: dn_prep writes g)
            self.g.exp_()
        o, final = self.delta_rule(self.dn_q, self.dn_k, self.dn_v, self.g, self.beta, k.DN_DK ** -0.5,
                                   self.h0, self.dn_a)
        # (also the conv ring, and `final` into the state's slot)
        op["prefill_dn_out_norm"](o, proj, w["gnorm"], final, self.table, slot, self.mix, self.eps)
        self.project(self.mix[rows], w["out"], rows)

    def attention(self, w, slot, rows, win_folded=None):
        """Attention's projections and cache writes for every row, its core, gate and out-projection
        (project) for `rows`: every row, or (a fresh prompt's last layer) the last one alone, where
        by_row_kernels says so by attn_last_row. With `win_folded` (the input norm in the in-projection's
        weights) the GEMM reads the residual stream and attn_prep applies each row's 1 / rms."""
        op, T, k = self.op, self.T, self.k
        proj = self.proj_buf[:T * k.FA_QKV].view(T, k.FA_QKV)
        fold = win_folded is not None
        self.gemm(self.res if fold else self.h, win_folded if fold else w["win"], proj, 0)
        op["prefill_attn_prep"](proj, w["q_norm"], w["k_norm"], self.table, slot, self.max_seq, self.qbuf, self.kv,
                                self.eps, self.res if fold else None)
        if not self.fresh:
            op["prefill_kv_prefix"](self.table, slot, self.max_seq, self.kv)
        if self.by_row_kernels(rows):  # (split over the keys, merged and gated into the row of self.mix)
            op["prefill_attn_last_row"](self.qbuf, self.kv, proj, self.table, self.last_row_part, self.last_row_count,
                                        self.mix, self.last_row_keys)
        elif self.pieces > 1:  # (after earlier tokens only) merged and gated into self.mix by one kernel
            self.attend_in_pieces(proj)
        else:
            if self.fresh:  # (as [1, heads, n, 256] views of the token-major buffers, the layout SDPA expects)
                n = rows.stop - rows.start  # query rows: T, or the last alone (which sees every key: no mask)
                q = self.qbuf[rows].view(1, n, -1, k.FA_HD).transpose(1, 2)
                kk, vv = (x.view(1, T, -1, k.FA_HD).transpose(1, 2) for x in (self.kv[0, :T], self.kv[1, :T]))
                o = F.scaled_dot_product_attention(q, kk, vv, is_causal=n == T, scale=k.FA_HD ** -0.5,
                                                   enable_gqa=True).transpose(1, 2)[0]
            else:
                o = flash(self.qbuf, self.kv, self.cu_q, self.cu_k, T, self.max_seq, True, self.used)[0][rows]
            op["prefill_attn_gate"](o, proj[rows], self.table, self.mix[rows])
        self.project(self.mix[rows], w["out"], rows)

    def out_rows(self, rows):
        """A split-K plan's last GEMM's fp32 partials for `rows` (every row, or a fresh prompt's last one),
        as add_rms_norm takes them."""
        return self.xs if rows.stop - rows.start == self.T else self.xs_last

    def project(self, x, weight, rows):
        """An out-projection or down (N = hidden) of `rows`: res[rows] += x @ weight^T by one GEMM (beta = 1) or,
        where by_row_kernels says so, by gemv_add_row; or out_rows(rows) <- the same product as one batched GEMM
        over split_k slices of K into fp32 partials."""
        S, (n, K) = self.split_k, x.shape
        if self.by_row_kernels(rows):
            self.op["prefill_gemv_add_row"](x, weight, self.res[rows])
        elif S == 1:
            self.gemm(x, weight, self.res[rows], 1)
        else:
            out = self.out_rows(rows)
            torch.ops.aten.bmm.dtype_out(x.view(n, S, K // S).transpose(0, 1), weight.view(-1, S, K // S).permute(1, 2, 0),
                                         torch.float32, out=out)

    def attend_in_pieces(self, proj):
        """Attention after earlier tokens with the earlier keys in pieces (see __init__), merged and
        gated into self.mix by one kernel (csrc/prefill.cuh attn_merge_gate)."""
        T, S, k = self.T, self.pieces, self.k
        self.q_pieces.view(S, T, k.FA_HQ, k.FA_HD).copy_(self.qbuf.expand(S, -1, -1, -1))
        o_ctx, lse_ctx = flash(self.q_pieces, self.kv, self.cu_pieces_q, self.cu_pieces_k, T, self.piece, False,
                               self.used_pieces)
        o_new, lse_new = flash(self.qbuf, self.kv, self.cu_q, self.cu_new, T, T, True)
        self.op["prefill_attn_merge_gate"](o_ctx, lse_by_piece(lse_ctx, S, T), o_new, lse_by_piece(lse_new, 1, T)[0],
                                           proj, self.table, self.mix)

    def poison(self):
        """NaN into every activation buffer (the tier's debug_poison: an unwritten read shows up)."""
        outs = () if self.split_k == 1 else (self.xs, self.xs_last)
        outs += (self.last_row_part,) if self.last_row_part is not None else ()
        outs += (self.dn_a,) if self.dn_a is not None else ()
        for t in outs + (self.res, self.h, self.proj_buf, self.mix, self.gu, self.act, self.dn_q, self.dn_k, self.dn_v,
                  self.g, self.beta, self.h0, self.qbuf, self.kv, self.logits) + ((self.q_pieces,) if self.pieces > 1 else ()):
            t.fill_(float("nan"))

    # ---- binding a prompt: eagerly (bind(), then run()), or by launch() before the graph --
    def prompt(self, ids, state):
        """The prompt ids [1, n] (n = T for a fresh plan, 1..T after earlier tokens: the rest padding; on the CPU
        or the tier's device) checked against this plan and `state` (ValueError), as the ops read them
        (contiguous); n becomes the plan's `valid`."""
        n, start = ids.shape[1], state.seq_len
        check_fits(n, start, state.max_seq_len)
        if state.max_seq_len != self.max_seq or (start == 0) != self.fresh or not (n == self.T if self.fresh else n <= self.T):
            where = "start 0" if self.fresh else "a start > 0"
            raise ValueError(f"a plan of {self.T} rows at {where} for max_seq_len {self.max_seq} cannot take {n} tokens "
                             f"into a state at position {start} with max_seq_len {state.max_seq_len}")
        self.valid = n
        return ids if ids.is_contiguous() else ids.contiguous()  # (a view, as prompt[:, ::2] is: n ids in a row)

    def bind(self, ids, state, checked: bool = False):
        """The prompt (prompt()), the state's pointers, its start and n into the plan's device buffers by one launch
        (for an eager run()); unless `checked` (the caller did), ids outside the vocabulary are a TierInputError
        here, before the run reads them (device ids: after a wait for their range)."""
        ids = self.prompt(ids, state)
        self.op["prefill_bind"](ids, self.words, None if checked else self.id_range, state_table(state, self.valid),
                                self.T, self.pieces, self.piece, self.max_seq)
        if not checked:
            if ids.is_cuda:
                self.range_ready.record(torch.cuda.current_stream(self.words.device))
                self.range_ready.synchronize()
            self.check_range(self.id_range_host)

    def check_range(self, host):
        """A bound prompt's ids' [min, max] (`host`) against the vocabulary: a TierInputError naming one outside."""
        check_id_range(int(host[0]), int(host[1]), self.tier.config.vocab_size, "input_ids")

    def capture(self):
        """Record run() as a CUDA graph (after an eager run has compiled and tuned every kernel), launched by launch()
        (not torch's replay(), whose prologue fills the captured generators' seeds: this graph draws none)."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.run()
        self.graph_exec = graph.raw_cuda_graph_exec()
        self.graph = graph

    def launch(self, ids, state, checked: bool = False):
        """The bind launch for the prompt (prompt()) into `state`, then the captured graph, both from one module
        function (no torch op or sync before them: NOTES "Prefill" v21); unless `checked`, ids outside the vocabulary
        are a TierInputError: CPU ids before anything is launched, device ids after the graph's launch (the bind
        launch refused them: the graph wrote nothing of the state)."""
        ids = self.prompt(ids, state)
        self.launches += 1
        got = self.tier.ext.launch_prefill_graph(self.graph_exec, ids, self.words, None if checked else self.launch_range,
                                                 state_table(state, self.valid), self.T, self.pieces, self.piece,
                                                 self.max_seq, self.tier.config.vocab_size, self.launches)
        if got:
            self.check_range(got)


class FastPrefill:
    """The tier's prefill plans, one per (T, max_seq, fresh, delta rule), least recently used dropped.
    `delta_rule` names the chunked delta rule that new plans run (prefill_delta_rule.DELTA_RULES)."""

    def __init__(self, tier, use_graph: bool = True, delta_rule: str | None = None, tuned_gemms: bool = True):
        self.tier, self.use_graph = tier, use_graph
        self.gemms = PrefillGemms(tier, tuned=tuned_gemms)  # (its workspace shared by the plans; the choices the process's)
        self.delta_rule = delta_rule or prefill_delta_rule.default(tier.device)
        self.plans: collections.OrderedDict = collections.OrderedDict()
        self._folded = None  # folded_weights(tier), made at the first plan that folds (folded_weights())
        self._fold_sources, self._fold_versions = [], []  # the tensors it was made from, their _version then

    def plan(self, T: int, max_seq: int, fresh: bool) -> PrefillPlan:
        """The plan of (T rows, max_seq, fresh) with the current delta rule, made on first use (its K/V
        staging buffer shared with the kept plans of the same max_seq), the least recently used plan
        dropped past MAX_PLANS."""
        key = (T, max_seq, fresh, self.delta_rule)
        plan = self.plans.get(key)
        if plan is None:
            kv = next((p.kv for p in self.plans.values() if p.max_seq == max_seq), None)
            with torch.inference_mode(False):  # (plain tensors whatever the caller's mode: later prefills, in either, write them)
                plan = self.plans[key] = PrefillPlan(self.tier, T, max_seq, fresh, kv, self.delta_rule,
                                                     self.folded_weights, self.gemms)
            while len(self.plans) > MAX_PLANS:
                self.plans.popitem(last=False)
        self.plans.move_to_end(key)
        return plan

    def folded_weights(self) -> list[dict]:
        """folded_weights(tier), made at the first plan that folds and shared by the plans; made again, in
        place, where a weight or norm it came from has changed in place since (checked at every prefill)."""
        if self._folded is None:
            W = self.tier.prefill_weights
            sources = [W[i][n] for i, pairs in enumerate(folded_pairs(self.tier)) for pair in pairs for n in pair]
            # one tensor per version counter: a view shares its base's (the megakernel tier's are views of one
            # buffer: one counter read a prefill, ~4 µs less host time than 60 on this repo's CPU)
            bases = (t if t._base is None else t._base for t in sources)
            self._fold_sources = list({id(b): b for b in bases}.values())
            with torch.inference_mode(False):  # (plain tensors: refilled in place later, in the caller's mode then)
                self._folded = folded_weights(self.tier)
        elif [t._version for t in self._fold_sources] != self._fold_versions:
            folded_weights(self.tier, into=self._folded)
        else:
            return self._folded
        self._fold_versions = [t._version for t in self._fold_sources]
        return self._folded

    def poison(self, plan, state):
        """The tier's debug_poison: NaN into the state's unwritten parts and the plan's buffers before a run."""
        if self.tier.debug_poison:
            self.tier.poison(state)
            plan.poison()

    def __call__(self, ids, state, trace=None, checked: bool = False) -> torch.Tensor:
        """Prefill ids [1, T] (on the CPU or the tier's device) into `state` (its seq_len is the start) →
        fp32 logits [1, vocab]. Unless `checked` (the caller did), ids outside the vocabulary are a
        TierInputError before anything changes: checked by the plan's bind() or launch() (device ids by the
        bind launch, the host reading their range), or, where the shape has no plan yet, before one is made (a
        refused prompt evicts no plan)."""
        n, start, max_seq = ids.shape[1], state.seq_len, state.max_seq_len
        check_fits(n, start, max_seq)  # (before a plan is made or evicted for it)
        key = (plan_rows(n, start, max_seq), max_seq, start == 0)
        known = self.plans.get(key + (self.delta_rule,))
        eager = trace is not None or not self.use_graph or known is None or known.uses == 0
        # the ids checked here, before anything changes, where nothing later would refuse them first: a shape's first
        # prefill (eager and slow anyway: a refused prompt makes or evicts no plan), a capture (a refused prompt costs
        # none), a poisoning run (poison writes the state); else by the plan's bind() or launch()
        if not checked and (known is None or self.tier.debug_poison or (not eager and known.graph is None)):
            check_id_range(*id_range(ids), self.tier.config.vocab_size, "input_ids")
            checked = True
        plan = self.plan(*key)
        if plan.folded is not None:
            self.folded_weights()  # (the same tensors, refilled if a source changed in place)
        if eager:
            plan.bind(ids, state, checked)  # (first: it refuses ids outside the vocabulary)
            self.poison(plan, state)
            plan.run(trace)  # (the shape's first untraced prefill also compiles and tunes every kernel it captures)
        else:
            if plan.graph is None:  # the shape repeats: worth a graph
                try:
                    plan.capture()
                except Exception:
                    plan.uses = 0  # (the next prefill of this shape runs eagerly again, then captures)
                    raise
            self.poison(plan, state)
            plan.launch(ids, state, checked)  # (a refused prompt counts as no use of its plan)
        if trace is None:  # (a traced run computes every row of the last layer: not the path a graph records)
            plan.uses += 1
        return plan.logits.view(1, -1).clone()
