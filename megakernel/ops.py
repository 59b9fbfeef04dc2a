"""The megakernel tier's kernels as torch operators: `torch.ops.qwen35_megakernel.*` (the 0.8B;
another size's build has its own namespace, `qwen35_megakernel_<shape tag>`, megakernel/family.py).

`load(device, config)` builds the extension just in time (megakernel/build.py) and registers its ops:

    decode(layer_table, embed, lm_head, lm_q, lm_qs, final_norm, dn_state!, conv_ring!, k_cache!, v_cache!, rope,
           workspace!, sync!, token, next_token!, fault!, logits!, trace!, times!, stream!,
           pos[B], positions_per_split, steps, stop_ids, grid, schedule, ring_slots, stop_after) -> ()
        `steps` decode steps of B = dn_state.shape[0] rows (lm_head: the embedding where the config ties them;
        lm_q, lm_qs: its int8 copy for the greedy argmax, megakernel/lm_bound.py, or both empty), row b at position pos[b] at the first
        (csrc/megakernel.cu), each later step fed the last one's argmax; next_token [steps, B];
        ends after the step where every row has produced one of stop_ids. `!` marks what it
        writes. logits / trace / times (one-step launches) and stream (pinned host memory
        [steps, B], written as each step ends) are filled when they are not empty.
    prefill_bind, prefill_add_rms_norm, prefill_dn_prep, prefill_dn_out_norm,
    prefill_silu_mul, prefill_attn_prep, prefill_kv_prefix,
    prefill_attn_gate, prefill_attn_merge_gate, prefill_attn_last_row, prefill_gemv_add_row,
    prefill_gate_up_swiglu_row, prefill_lm_head
        the fast prefill's fused kernels (csrc/prefill.cuh says what each computes).
    prefill_gemm_lt
        one of the prefill's GEMMs with a cuBLASLt algorithm chosen by timing (megakernel/prefill_gemm.py).

Every op writes only into tensors its schema marks as written and returns nothing, so each fake
(meta) implementation below checks nothing and returns None: enough for `torch.library.opcheck`
and for `torch.compile(fullgraph=True)` to trace a function that calls them. The prefill ops
also read and write the decode state through a device table of pointers, the start position and
the valid tokens (so one captured CUDA graph serves every state, start and length of a shape); what
they do through it is not in their schemas.

`Constants` holds every number of csrc/shapes.cuh as the built extension reports it: the tier
and the prefill read shapes, layouts and limits from there, never from a copy in Python.
"""

from __future__ import annotations

import torch

NAMESPACE = "qwen35_megakernel"
OP_NAMES = ("decode", "prefill_bind", "prefill_add_rms_norm", "prefill_dn_prep", "prefill_dn_out_norm",
            "prefill_silu_mul", "prefill_attn_prep", "prefill_kv_prefix", "prefill_attn_gate",
            "prefill_gemm_lt", "prefill_attn_merge_gate", "prefill_attn_last_row", "prefill_gemv_add_row",
            "prefill_gate_up_swiglu_row", "prefill_lm_head")

_fakes_registered = set()


def _register_fakes(namespace: str) -> None:
    if namespace in _fakes_registered:
        return
    for name in OP_NAMES:
        torch.library.register_fake(f"{namespace}::{name}")(lambda *args, **kwargs: None)
    _fakes_registered.add(namespace)


class Constants:
    """csrc/shapes.cuh's numbers as attributes (`k.D`, `k.WS_BYTES`, `k.LAYER_TYPES`, ...)."""

    def __init__(self, values: dict):
        self.__dict__.update(values)

    def workspace_area(self, workspace: torch.Tensor, name: str, row: int = 0, batch: int = 1) -> torch.Tensor:
        """A typed view of batch row `row`'s part of one area of the decode workspace (shapes.cuh
        WS_*: every area holds MAX_BATCH rows), e.g. "hidden", as a launch of `batch` rows wrote it:
        fp32, but the out-projections' and down's inputs "attn" and "act" (bf16) and "obuf" (fp32 o
        at batch 1, the bf16 normed input with a batch)."""
        areas = {  # name: (offset constant, dtype, elements per row)
            "hidden": ("WS_HIDDEN", torch.float32, self.D),
            "zab": ("WS_ZAB", torch.float32, self.ZAB_W),
            "obuf": ("WS_OBUF", torch.float32 if batch == 1 else torch.bfloat16, self.DN_VAL),
            "qkv": ("WS_QKV", torch.float32, self.FA_QKV),
            "attn": ("WS_ATTN", torch.bfloat16, self.FA_OIN),
            "act": ("WS_ACT", torch.bfloat16, self.INTER),
            "apart": ("WS_APART", torch.float32, self.APART_W),
            "amax_val": ("WS_AMAX_VAL", torch.float32, self.MAX_GRID),
            "amax_idx": ("WS_AMAX_IDX", torch.int32, self.MAX_GRID),
        }
        if name not in areas:
            raise KeyError(f"no workspace area {name!r}; expected one of {sorted(areas)}")
        if not 1 <= batch <= self.MAX_BATCH:
            raise KeyError(f"batch {batch} outside [1, {self.MAX_BATCH}]")
        if not 0 <= row < batch:
            raise KeyError(f"row {row} outside [0, {batch}) (a launch of {batch} rows)")
        key, dtype, n = areas[name]
        size = torch.tensor([], dtype=dtype).element_size()
        offset = getattr(self, key) + row * n * size
        return workspace[offset:offset + n * size].view(dtype)


def load(device, config=None):
    """→ (the extension module, Constants) of `config`'s shape (None: the 0.8B). Builds on first use
    (megakernel/build.py); Constants.NAMESPACE names its ops."""
    from .build import load as build_load

    ext = build_load(device, config=config)
    k = Constants(ext.constants())
    _register_fakes(k.NAMESPACE)
    return ext, k


def op(name: str, namespace: str = NAMESPACE):
    """torch.ops.<namespace>.<name> (after load(); the 0.8B's namespace unless given)."""
    return getattr(getattr(torch.ops, namespace), name)
