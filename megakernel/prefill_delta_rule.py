"""The chunked gated delta rule that the fast prefill runs for each DeltaNet layer, by name:

    "fla"        flash-linear-attention's chunked rule, its own Triton kernels: the A/B reference
    "flash-qla"  FlashQLA's (the Qwen team's TileLang kernels for Hopper and newer), its automatic
                 intra-card context parallelism on (a long prompt split over more SMs), where the
                 `flash_qla` package is installed and the GPU is sm_90 or newer: the default there
    "flashinfer" FlashInfer's GDN prefill (`flashinfer.gdn_prefill.chunk_gated_delta_rule`, the serving
                 engines' kernel: on Hopper a CuTe DSL kernel) through its public entry, with its own
                 choice of context parallelism, where the `flashinfer` package and its kernels for the
                 GPU's architecture import (sm_80, sm_90, sm_100, sm_120)

Every implementation takes one layer of the prefill's buffers: q, k [1, T, key heads, 128] and v
[1, T, value heads, 128] in bf16 (the prefill gives its rule T = the prompt's rows rounded up to the
64-row chunk, the rows past the prompt padding: prefill.rule_rows), g (the log decay) and beta [1, T, value heads] in fp32, the
initial state [1, value heads, V, K] in fp32 in the decode kernel's [V][K] layout, and returns the
output [1, T, value heads, V] in bf16 and the final state [1, value heads, V, K] in fp32 in that
layout. A rule's `g_chunk` says which g it takes: 0, g itself; n > 0, g summed within chunks of n
rows from row 0 (`chunk_cumsum`: FlashQLA's kernels read that, and the prefill's dn_prep writes it, so
no kernel of its own computes it); one that is `g_linear` (FlashInfer's) takes the decay e^g instead
(`rule_gates` gives each rule its form). A rule that `takes_a` (FlashQLA's) also takes its chunk matrices A [1, T, value
heads, 64] in bf16 from the caller — per 64-row chunk and value head, (I + L)^-1 with L the strictly lower part of
diag(beta) K Kᵀ, what FlashQLA's kkt_solve writes (the prefill's dn_prep writes it: NOTES "Prefill" v26) — or, without
them, computes them itself. What they compute is reference/delta_rule.py's `gated_delta_rule`;
`python -m compare delta-rule` times each against fla one layer at a time and checks it against the
fp32 reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

DELTA_RULES = ("fla", "flash-qla", "flashinfer")
FLASHINFER_ARCHS = (8, 9, 10, 12)  # compute capability majors with a FlashInfer GDN prefill kernel (0.7.4)


@dataclass(frozen=True)
class DeltaRule:
    """One rule made for prompts of T rows: `fn(q, k, v, g, beta, scale, h0, A) -> (o, final)`, g as
    `g_chunk` and `g_linear` say (rule_gates) and A (None: the rule's own) where `takes_a` (module docstring);
    `pieces`: the prompt's split over the SMs (FlashQLA's context parallelism; 1: none); `route`: which of a
    package's kernels runs, where it has several ("" where it has one)."""
    name: str
    fn: Callable
    g_chunk: int = 0
    pieces: int = 1
    takes_a: bool = False
    g_linear: bool = False
    route: str = ""

    def __call__(self, q, k, v, g, beta, scale, h0, A=None):
        if A is not None and not self.takes_a:
            raise ValueError(f"delta rule {self.name!r} computes its chunk matrices itself; it takes no A")
        return self.fn(q, k, v, g, beta, scale, h0, A)


def chunk_cumsum(g: torch.Tensor, chunk: int) -> torch.Tensor:
    """g [1, T, H] summed within chunks of `chunk` rows from row 0 (inclusive): what a rule with
    g_chunk = chunk takes (0: g as it is)."""
    if chunk == 0:
        return g
    T = g.shape[1]
    padded = torch.nn.functional.pad(g, (0, 0, 0, -T % chunk))
    return padded.view(g.shape[0], -1, chunk, g.shape[2]).cumsum(2).view(padded.shape)[:, :T]


def rule_gates(g: torch.Tensor, rule: DeltaRule) -> torch.Tensor:
    """The log decay g [1, T, H] in the form `rule` takes: summed within its chunks (g_chunk), or e^g (g_linear)."""
    return g.exp() if rule.g_linear else chunk_cumsum(g, rule.g_chunk)


def flash_qla_piece_chunks(T: int, chunk: int) -> int | None:
    """Chunks a piece of a T-row prompt when FlashQLA splits it, or None for FlashQLA's own choice.
    Its cost model (0.1.3) splits nothing below ~32k rows; measured one layer at the 0.8B's shapes
    (H100, docs/results/2026-11-26-h100-s23 calls 2-3): four pieces are 1.10x the unsplit rule at 2,048
    rows, 1.46x at 4,096 and 1.68x at 6,144, equal at 8,192; any split loses at <= 1,024 rows and gains
    nothing at 12,288-16,384. Four pieces at most (the last the shortest)."""
    chunks = math.ceil(T / chunk)
    return math.ceil(chunks / 4) if 32 <= chunks <= 128 else None


FLASH_QLA_NARROW_ROWS = 2048  # one-piece prompts up to this many rows run FlashQLA's fused kernel at 16 columns a block


def flash_qla_block_dv(grid: int, sms: int, T: int) -> int:
    """The value columns a block of FlashQLA's fused forward kernel takes (its block_DV) for `grid` = the prompt's
    pieces x value heads on `sms` SMs and a T-row prompt. FlashQLA 0.1.3's own pick (128 where the grid fills 70% of
    the SMs, 64 where twice it does, else 32), but 16 for a prompt in one piece of at most FLASH_QLA_NARROW_ROWS rows
    whose 16-column blocks all run at once (the 0.8B's 16 heads: 128 blocks on 132 SMs instead of 64). Measured there
    (H100, docs/results/2026-11-27-h100-s28 call 6; the errors against the fp32 rule unchanged to 3 digits): 11.0 ->
    10.5 µs a layer at 256 rows, 24.5 -> 22.8 at 520, 35.0 -> 30.1 at 1,024; 64 and 128 slower; not measured past
    1,024 rows nor with pieces, which keep FlashQLA's pick."""
    target = int(sms * 0.7)
    own = 128 if grid >= target else 64 if 2 * grid >= target else 32
    if own == 32 and T <= FLASH_QLA_NARROW_ROWS and grid * (128 // 16) <= sms:
        return 16
    return own


def default(device) -> str:
    """The rule a new tier's prefill runs: FlashQLA's where it can run (faster than fla's at every
    length measured: NOTES "Prefill" v8), else fla's."""
    return "flash-qla" if unavailable_reason("flash-qla", device) is None else "fla"


def unavailable_reason(name: str, device) -> str | None:
    """Why delta rule `name` cannot run on `device` here, or None."""
    if name not in DELTA_RULES:
        return f"unknown delta rule {name!r}; expected one of {', '.join(DELTA_RULES)}"
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return "the chunked delta rules run on a CUDA GPU only"
    if name == "fla":
        try:
            from fla.ops.gated_delta_rule.chunk import chunk_gated_delta_rule_fwd  # noqa: F401  (what make() calls)
        except Exception as e:  # ImportError, or triton failing to initialise
            return f"flash-linear-attention is not importable ({type(e).__name__}: {e})"
        return None
    major, minor = torch.cuda.get_device_capability(device)
    if name == "flashinfer":
        if major not in FLASHINFER_ARCHS:
            archs = [f"sm_{m}0" for m in FLASHINFER_ARCHS]
            return (f"FlashInfer's GDN prefill has kernels for {', '.join(archs[:-1])} and {archs[-1]}; "
                    f"this GPU is sm_{major}{minor}")
        try:
            from flashinfer import gdn_prefill
        except Exception as e:  # ImportError, or its CuTe DSL failing to initialise
            return f"flashinfer is not importable ({type(e).__name__}: {e})"
        # (its gdn_kernels package sets a kernel it could not import to None, and the import above still succeeds)
        missing = [k for k in (f"chunk_gated_delta_rule_sm{major}0", f"cp_delta_rule_dsl_sm{major}0")
                   if getattr(gdn_prefill, k, None) is None]
        if missing:
            return f"flashinfer imports, but not its kernels for sm_{major}x ({', '.join(missing)}: CuTe DSL missing?)"
        return None
    if major < 9:
        return f"FlashQLA needs sm_90 or newer; this GPU is sm_{major}{minor}"
    try:
        import flash_qla  # noqa: F401
    except Exception as e:  # ImportError, or tilelang failing to initialise
        return f"flash_qla is not importable ({type(e).__name__}: {e})"
    return None


def make(name: str, T: int, value_heads: int, device) -> DeltaRule:
    """The delta rule `name` for prompts of T rows (a DeltaRule). Whatever it decides from the shapes
    alone (FlashQLA's split of the prompt over the SMs) is decided here, once, so the call itself
    reads nothing back to the host and can be captured in a CUDA graph."""
    reason = unavailable_reason(name, device)
    if reason is not None:
        raise ValueError(f"delta rule {name!r} cannot run here: {reason}")
    if name == "fla":
        # fla's own (Triton) kernels: its public `chunk_gated_delta_rule` hands the call to FlashQLA
        # wherever flash_qla is importable (fla.backends, FLA_FLASH_QLA), so it is not called here
        from fla.ops.gated_delta_rule.chunk import chunk_gated_delta_rule_fwd as fla_fwd

        def fla(q, k, v, g, beta, scale, h0, A=None):
            with torch.cuda.device(q.device):  # (the public entry's input_guard did this)
                _, o, _, final, _, _ = fla_fwd(q, k, v, g, beta, scale, h0, True, state_v_first=True)
            return o, final
        return DeltaRule(name, fla)
    if name == "flashinfer":
        return _flashinfer(T, value_heads, device)

    # FlashQLA's chunk_gated_delta_rule_fwd without its first kernel (g's chunk cumsum: dn_prep's)
    from flash_qla.ops.gated_delta_rule.chunk import CHUNK_SIZE, cp_preprocess_fwd, fused_gdr_fwd, kkt_solve
    from flash_qla.ops.gated_delta_rule.chunk.cp import build_cp_context
    from flash_qla.ops.gated_delta_rule.chunk.cp.context import _build_intra_cp_context
    from flash_qla.utils.index import prepare_varlen_metadata

    with torch.cuda.device(device):
        cu_seqlens = torch.tensor([0, T], dtype=torch.int32, device=device)
        piece = flash_qla_piece_chunks(T, CHUNK_SIZE)
        if piece is None:
            context = build_cp_context(cu_seqlens, enable_intra=True, num_v_heads=value_heads, chunk_size=CHUNK_SIZE,
                                       is_train=False)
        else:
            context = _build_intra_cp_context(cu_seqlens, CHUNK_SIZE, [math.ceil(T / CHUNK_SIZE)], piece)
        # the chunk offsets and indices FlashQLA's kernels take, attached to the length tensors now: without
        # them each call derives them on the host from a small process-wide cache (4 entries), and a plan
        # whose entry another user of FlashQLA evicted would fail its graph capture (a cache miss asserts)
        for cu in (context.cu_seqlens, context.intra_cp_cu_seqlens if context.is_intra else None):
            if cu is not None:
                prepare_varlen_metadata(cu, cu.cpu())
    rows_cu = context.intra_cp_cu_seqlens if context.is_intra else context.cu_seqlens
    pieces = rows_cu.numel() - 1
    fused = _fused_forward(fused_gdr_fwd, rows_cu, context, value_heads, T, device)

    def qla(q, k, v, g, beta, scale, h0, A=None):
        with torch.cuda.device(q.device):
            if A is None:
                A = kkt_solve(k=k, b=beta, cu_seqlens=context.cu_seqlens, chunk_size=CHUNK_SIZE)
            h0, _ = cp_preprocess_fwd(context, k=k, v=v, a=A, g=g, beta=beta, initial_state=h0, state_v_first=True,
                                      enable_fwd_cp_cache=False)
            o, final = fused(q, k, v, A, g, beta, scale, h0)
        return o, final
    return DeltaRule(name, qla, g_chunk=CHUNK_SIZE, pieces=pieces, takes_a=True)


def _flashinfer(T: int, value_heads: int, device) -> DeltaRule:
    """FlashInfer's GDN prefill for one T-row sequence through its public entry: q, k, v as [T, heads, 128], the
    decay e^g (g_linear: what its kernels read; given g, its entry would take e^g itself, one more launch per call),
    the state [1, value heads, V, K] in and a new one out (its layout is ours; the input state is not written:
    output_state is another buffer), max_seqlen = T (nothing read back). Its context-parallel kernel or its plain one
    as its own use_cp="auto" picks them (0.7.4: on sm_90, sm_100 and sm_120 by sequences x heads against the SMs),
    decided here and passed, so `route` names the one that runs."""
    from flashinfer.gdn_kernels.delta_rule_dsl.varlen_helper import should_use_cp_host
    from flashinfer.gdn_prefill import chunk_gated_delta_rule

    cu_seqlens = torch.tensor([0, T], dtype=torch.int64, device=device)
    capability = torch.cuda.get_device_capability(device)
    props = torch.cuda.get_device_properties(device)
    cp = capability[0] in (9, 10, 12) and bool(should_use_cp_host(value_heads, props.multi_processor_count, props.name,
                                                                   device_capability=capability))

    def flashinfer(q, k, v, alpha, beta, scale, h0, A=None):
        if q.shape[1] != T:
            raise ValueError(f"delta rule 'flashinfer' was made for {T} rows; given {q.shape[1]}")
        o, final = chunk_gated_delta_rule(q[0], k[0], v[0], alpha[0], beta[0], scale, initial_state=h0,
                                          output_final_state=True, cu_seqlens=cu_seqlens,
                                          output_state=torch.empty_like(h0), max_seqlen=T, use_cp=cp,
                                          backend="flashinfer")
        return o.unsqueeze(0), final
    return DeltaRule("flashinfer", flashinfer, g_linear=True, route="context parallel" if cp else "")


def _fused_forward(fused_gdr_fwd, rows_cu, context, value_heads: int, T: int, device):
    """FlashQLA's fused forward (its second kernel) for the rows in `rows_cu` (the prompt, or its pieces) →
    fn(q, k, v, A, g, beta, scale, h0) -> (o, final): on Hopper its TileLang kernel called with
    flash_qla_block_dv's columns a block (the arguments fused_gdr_fwd makes for a varlen call, made once
    here where they do not change); elsewhere fused_gdr_fwd as it is."""
    import sys

    from flash_qla.ops.gated_delta_rule.chunk import CHUNK_SIZE
    from flash_qla.utils.index import prepare_chunk_offsets

    module = sys.modules[fused_gdr_fwd.__module__]
    if not module.__name__.endswith(".hopper.fused_fwd"):
        def as_is(q, k, v, A, g, beta, scale, h0):
            o, _, final = fused_gdr_fwd(q=q, k=k, v=v, a=A, g=g, b=beta, scale=scale, initial_state=h0,
                                        output_final_state=True, output_h=False, output_o=True, cu_seqlens=rows_cu,
                                        cp_seq_map=context.seq_map_c2r, raw_cu_seqlens=context.cu_seqlens,
                                        state_v_first=True)
            return o, final
        return as_is
    sequences = rows_cu.numel() - 1
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    block_dv = flash_qla_block_dv(sequences * value_heads, sms, T if sequences == 1 else FLASH_QLA_NARROW_ROWS + 1)
    offsets = prepare_chunk_offsets(rows_cu, CHUNK_SIZE)[0].to(rows_cu.dtype)
    split = context.seq_map_c2r is not None
    seq_map = context.seq_map_c2r if split else torch.empty(sequences, dtype=rows_cu.dtype, device=device)
    finals = context.cu_seqlens.numel() - 1

    def forward(q, k, v, A, g, beta, scale, h0):
        H, Hg, K, V = v.shape[2], k.shape[2], k.shape[3], v.shape[3]
        final = torch.empty(finals, H, V, K, dtype=torch.float32, device=v.device)
        h = torch.empty(q.shape[0], 0, H, V, K, dtype=k.dtype, device=v.device)  # (no per-chunk states kept)
        o = torch.empty_like(v)
        kernel = module.tilelang_fused_chunk_gdr_fwd(
            H, Hg, K, V, A.shape[-1], scale, accum_dtype="float32", qkva_dtype=q.dtype, g_dtype=g.dtype,
            b_dtype=beta.dtype, h0_dtype=h0.dtype, ht_dtype=final.dtype, h_dtype=h.dtype, o_dtype=o.dtype,
            seqlen_dtype=rows_cu.dtype, use_initial_state=True, store_final_state=True, store_h=False, store_o=True,
            is_varlen=True, is_cp=split, state_v_first=True, block_DV=block_dv)
        kernel(q, k, v, A, g, beta, h0, rows_cu, offsets, seq_map, context.cu_seqlens, o, h, final)
        return o, final
    return forward
