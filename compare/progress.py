"""A one-line progress bar on stderr: `[#####.....] 12/40 tg128 triton`.

Drawn only when enabled (by default: when stderr is a terminal), so logs and captured
output stay clean.
"""

from __future__ import annotations

import sys


class Progress:
    def __init__(self, total: int, enabled: bool | None = None, width: int = 20, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total, self.done, self.width = max(total, 1), 0, width
        self._last_len = 0

    def step(self, label: str = ""):
        """Count one unit of work done and redraw with `label` (what runs next)."""
        self.done = min(self.done + 1, self.total)
        self.show(label)

    def show(self, label: str = ""):
        if not self.enabled:
            return
        filled = self.width * self.done // self.total
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {label}"
        pad = " " * max(self._last_len - len(line), 0)
        self.stream.write("\r" + line + pad)
        self.stream.flush()
        self._last_len = len(line)

    def close(self):
        if self.enabled and self._last_len:
            self.stream.write("\r" + " " * self._last_len + "\r")
            self.stream.flush()
