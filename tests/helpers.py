"""What the tests share: the relative-error check (reference/testing.py) and the
conditions under which Triton kernels can run here."""

import os

import pytest
import torch

from reference.testing import assert_close, poisoned_allocations, rel_err  # noqa: F401  (re-exported)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
TRITON_CAN_RUN = DEVICE == "cuda" or INTERPRET

# marks of the Triton CPU suites: interpreter-only when there is no GPU
TRITON_MARKS = [
    pytest.mark.triton_cpu,
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # numpy, on values the interpreter masks away
    pytest.mark.skipif(not TRITON_CAN_RUN, reason="no GPU: Triton kernels need TRITON_INTERPRET=1 (set by tests/conftest.py)"),
]


def random_ids(n, seed, vocab_size=248320):
    """[1, n] int64 prompt ids from a seeded CPU generator (default: the 0.8B vocabulary)."""
    return torch.randint(0, vocab_size, (1, n), generator=torch.Generator().manual_seed(seed))
