"""Lets fla 0.6.0's Triton kernels run under TRITON_INTERPRET=1 (CPU), as shipped they do not:

- every autotuned kernel asks the GPU driver for a benchmarker ("0 active drivers"):
  keep only each autotuner's first config, so nothing is benchmarked;
- `chunk_delta_h.py` calls `.to(tl.int64)` on a Python `range` loop index: give fla's
  modules a `range` whose ints carry a no-op `.to`.

`patch()` is idempotent and does nothing unless the interpreter is on; it touches only
modules under `fla.` that are already imported (import fla's ops first).
"""

from __future__ import annotations

import builtins
import sys

from triton.runtime.autotuner import Autotuner

from ._util import interpreting


class _Index(int):
    def to(self, *args, **kwargs):
        return self


def _range(*args):
    return (_Index(i) for i in builtins.range(*args))


def _autotuners(obj):
    """The autotuners in a chain of kernel wrappers (heuristics → autotune → jit)."""
    seen = set()
    while obj is not None and id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, Autotuner):
            yield obj
        obj = getattr(obj, "fn", None)


def patch() -> None:
    if not interpreting():
        return
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("fla."):
            continue
        for value in list(vars(module).values()):
            for tuner in _autotuners(value):
                tuner.configs = tuner.configs[:1]
        vars(module)["range"] = _range
