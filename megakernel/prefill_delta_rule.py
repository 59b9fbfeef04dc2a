"""The chunked gated delta rule that the fast prefill runs for each DeltaNet layer, by name:

    "fla"        flash-linear-attention's chunked rule, its own Triton kernels: the A/B reference
    "flash-qla"  FlashQLA's (the Qwen team's TileLang kernels for Hopper and newer), its automatic
                 intra-card context parallelism on (a long prompt split over more SMs), where the
                 `flash_qla` package is installed and the GPU is sm_90 or newer: the default there

Every implementation takes one layer of the prefill's buffers: q, k [1, T, key heads, 128] and v
[1, T, value heads, 128] in bf16, g (the log decay) and beta [1, T, value heads] in fp32, the
initial state [1, value heads, V, K] in fp32 in the decode kernel's [V][K] layout, and returns the
output [1, T, value heads, V] in bf16 and the final state [1, value heads, V, K] in fp32 in that
layout. What they compute is reference/delta_rule.py's `gated_delta_rule`; `python -m compare
delta-rule` times each against fla one layer at a time and checks it against the fp32 reference.
"""

from __future__ import annotations

from typing import Callable

import torch

DELTA_RULES = ("fla", "flash-qla")


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
    if major < 9:
        return f"FlashQLA needs sm_90 or newer; this GPU is sm_{major}{minor}"
    try:
        import flash_qla  # noqa: F401
    except Exception as e:  # ImportError, or tilelang failing to initialise
        return f"flash_qla is not importable ({type(e).__name__}: {e})"
    return None


def make(name: str, T: int, value_heads: int, device) -> Callable:
    """The delta rule `name` for prompts of T rows: fn(q, k, v, g, beta, scale, h0) -> (o, final).
    Whatever it decides from the shapes alone (FlashQLA's split of the prompt over the SMs) is
    decided here, once, so the call itself reads nothing back to the host and can be captured in a
    CUDA graph."""
    reason = unavailable_reason(name, device)
    if reason is not None:
        raise ValueError(f"delta rule {name!r} cannot run here: {reason}")
    if name == "fla":
        # fla's own (Triton) kernels: its public `chunk_gated_delta_rule` hands the call to FlashQLA
        # wherever flash_qla is importable (fla.backends, FLA_FLASH_QLA), so it is not called here
        from fla.ops.gated_delta_rule.chunk import chunk_gated_delta_rule_fwd as fla_fwd

        def fla(q, k, v, g, beta, scale, h0):
            with torch.cuda.device(q.device):  # (the public entry's input_guard did this)
                _, o, _, final, _, _ = fla_fwd(q, k, v, g, beta, scale, h0, True, state_v_first=True)
            return o, final
        return fla

    from flash_qla import chunk_gated_delta_rule_fwd
    from flash_qla.ops.gated_delta_rule.chunk import CHUNK_SIZE
    from flash_qla.ops.gated_delta_rule.chunk.cp import build_cp_context
    from flash_qla.utils.index import prepare_varlen_metadata

    with torch.cuda.device(device):
        cu_seqlens = torch.tensor([0, T], dtype=torch.int32, device=device)
        context = build_cp_context(cu_seqlens, enable_intra=True, num_v_heads=value_heads, chunk_size=CHUNK_SIZE,
                                   is_train=False)
        # the chunk offsets and indices FlashQLA's kernels take, attached to the length tensors now: without
        # them each call derives them on the host from a small process-wide cache (4 entries), and a plan
        # whose entry another user of FlashQLA evicted would fail its graph capture (a cache miss asserts)
        for cu in (context.cu_seqlens, context.intra_cp_cu_seqlens if context.is_intra else None):
            if cu is not None:
                prepare_varlen_metadata(cu, cu.cpu())

    def qla(q, k, v, g, beta, scale, h0):
        with torch.cuda.device(q.device):
            _, _, o, _, final, _ = chunk_gated_delta_rule_fwd(q, k, v, g, beta, scale=scale, initial_state=h0,
                                                              output_final_state=True, state_v_first=True,
                                                              cp_context=context, is_train=False)
        return o, final
    return qla
