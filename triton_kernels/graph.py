"""Forward steps captured in CUDA graphs and replayed.

A graph bakes in the addresses it touched, so every graph for one state shape (batch
size, cache length) is captured on one shared set of state tensors, a `StaticState`.
Replaying for a state first binds it: the state's values are copied into the static
tensors and the state is re-pointed at them; the previous owner, if still alive, gets
copies of its own. A benchmark that makes a fresh state per repeat pays one copy per
state, never a capture. Inputs go through a static id buffer; the outputs live in the
graph's memory pool until its next replay.
"""

from __future__ import annotations

import weakref

import torch

STATE_TENSORS = ("conv", "recurrent", "k_cache", "v_cache", "pos", "fault")


class StaticState:
    """The state tensors the graphs of one shape are captured on, and who holds them."""

    def __init__(self, state):
        self.tensors = {name: getattr(state, name) for name in STATE_TENSORS}
        self.owner = weakref.ref(state)

    def bind(self, state):
        """Make the static tensors hold `state`'s values, and `state` point at them."""
        if self.owner() is state:
            return
        previous = self.owner()
        if previous is not None:
            for name, tensor in self.tensors.items():
                setattr(previous, name, tensor.clone())
        for name, tensor in self.tensors.items():
            tensor.copy_(getattr(state, name))
            setattr(state, name, tensor)
        self.owner = weakref.ref(state)


class CapturedStep:
    def __init__(self, step, static: StaticState, state, scratch, ids):
        """step(ids, state) → tuple of tensors, sync-free. Captured on `state` (bound to
        `static`) with input ids shaped like `ids`. `scratch`: a throwaway state of the same
        shape and seq_len for the warm-up run, which compiles and autotunes every kernel
        before capture without touching `state`."""
        self.static = static
        self.parts = None  # graph_timing's map of the step's kernels to its parts, made on first use
        self.ids = torch.zeros_like(ids)
        static.bind(state)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            step(self.ids, scratch)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.outputs = step(self.ids, state)

    def run(self, ids, state):
        """Replay for `state` → the step's outputs, overwritten by the next replay."""
        self.static.bind(state)
        self.ids.copy_(ids)
        self.graph.replay()
        return self.outputs
