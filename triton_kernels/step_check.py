"""The device-side input check of a decode step (the Triton tier's `decode_argmax`): the ids
fed back from the previous step never reach the host, so a kernel checks them.

`step_check` launches one program that owns the whole batch: it reads the B ids, the B rows'
device positions (`state.pos`, row b's next position) and the state's fault words (reference
FAULT_*), and decides whether the step runs: not when a row's id is outside [0, vocab) or a
row's position is past the caches, or when an earlier step of this state was already refused.
The rows run or are refused together. It writes `valid` (int64 [1]: 1 runs, 0 refused), the
ids the step may gather (the refused step's are 0, so no row is read out of bounds) and, for
the first refused step only, the fault words [kind, value, position, row] of the lowest bad
row: its bad id (or its position) and that row's position. Every kernel of the step that
writes the state reads `valid` and writes nothing when it is 0 (conv1d.step,
qk_norm_rope.launch; the delta rule's g and β become 0, which leaves the fp32 state as it
was), the positions advance by `valid`, and the argmax hands the input ids back
(lm_head.argmax's fallback).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from reference import FAULT_NONE, FAULT_POSITION, FAULT_TOKEN

from ._util import next_pow2


@triton.jit
def _step_check_kernel(ids_ptr, fault_ptr, pos_ptr, safe_ptr, valid_ptr, B, V, max_seq, BLOCK_B: tl.constexpr,
                       NONE: tl.constexpr, TOKEN: tl.constexpr, POSITION: tl.constexpr):
    rows = tl.arange(0, BLOCK_B)
    inside = rows < B
    ids = tl.load(ids_ptr + rows, mask=inside, other=0)
    pos = tl.load(pos_ptr + rows, mask=inside, other=0)           # each row's position
    fault = tl.load(fault_ptr)
    bad_id = inside & ((ids < 0) | (ids >= V))
    bad_pos = inside & ((pos < 0) | (pos >= max_seq))
    first_bad = tl.min(tl.where(bad_id | bad_pos, rows, BLOCK_B), axis=0)   # the lowest bad row (BLOCK_B: none)
    at_first = rows == first_bad
    token_bad = tl.sum((at_first & bad_id).to(tl.int32), axis=0) > 0       # that row's id (else its position)
    bad_value = tl.sum(tl.where(at_first, ids, 0), axis=0)
    row_pos = tl.sum(tl.where(at_first, pos, 0), axis=0)
    refused = (fault != NONE) | (first_bad < BLOCK_B)
    tl.store(safe_ptr + rows, tl.where(refused, 0, ids), mask=inside)
    tl.store(valid_ptr, tl.where(refused, 0, 1).to(tl.int64))
    if (fault == NONE) & refused:
        tl.store(fault_ptr + 1, tl.where(token_bad, bad_value, row_pos))
        tl.store(fault_ptr + 2, row_pos)
        tl.store(fault_ptr + 3, first_bad.to(tl.int64))
        tl.store(fault_ptr, tl.where(token_bad, TOKEN, POSITION).to(tl.int64))


def step_check(*, ids, fault, pos, vocab_size, max_seq_len):
    """ids [B] int64, fault int64 [FAULT_WORDS], pos int64 [B] (row b's position; all on the device)
    → (the ids the step gathers [B], valid int64 [1]); records a refusal in `fault`."""
    ids = ids.contiguous()  # (a [B] view of a prompt's column is strided; the kernel reads rows 0..B-1)
    B = ids.shape[0]
    safe = torch.empty_like(ids)
    valid = torch.empty(1, dtype=torch.int64, device=ids.device)
    _step_check_kernel[(1,)](ids, fault, pos, safe, valid, B, vocab_size, max_seq_len, BLOCK_B=next_pow2(B),
                             NONE=FAULT_NONE, TOKEN=FAULT_TOKEN, POSITION=FAULT_POSITION, num_warps=1)
    return safe, valid
