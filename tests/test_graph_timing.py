"""triton_kernels/graph_timing.py on made-up kernel lists (the CPU side of the Triton tier's
per-part times from a replayed CUDA graph; the GPU test runs it on a real replay)."""

import pytest

from triton_kernels.graph_timing import MARKER, part_times, split_by_markers

M = f"void at::{MARKER}(long)"
EAGER = [M, "check", "embed_k", M, "gemv", "conv", M, "gemv", M, "lm_gemv", M, "argmax", "pos_add"]
NAMES = ["start", "embed", "layers.0", "layers.1", "lm_head"]


def test_markers_split_the_eager_kernels_into_parts():
    parts, tail = split_by_markers(EAGER, NAMES)
    assert parts == [("embed", ["check", "embed_k"]), ("layers.0", ["gemv", "conv"]), ("layers.1", ["gemv"]),
                     ("lm_head", ["lm_gemv"])]
    assert tail == ["argmax", "pos_add"]


def test_a_missing_marker_is_an_error():
    with pytest.raises(ValueError, match="4 marker kernels for 5 marks"):
        split_by_markers(EAGER[:6] + EAGER[7:], NAMES)  # layers.0's marker lost


def replay(names, t0=100.0, length=2.0, gap=0.5):
    out, t = [], t0
    for n in names:
        out.append((n, t, t + length))
        t += length + gap
    return out


def test_replayed_kernels_take_their_parts_and_the_gaps_before_them():
    parts, tail = split_by_markers(EAGER, NAMES)
    # the replay starts with the input id copy (a kernel outside the graph), then the graph's 8 kernels
    events = replay(["copy_ids", "check", "embed_k", "gemv", "conv", "gemv", "lm_gemv", "argmax", "pos_add"])
    times = part_times(parts, tail, events)
    # each kernel 2 µs, 0.5 µs between kernels: the first part from its first kernel's start
    assert times == pytest.approx({"embed": 4.5, "layers.0": 5.0, "layers.1": 2.5, "lm_head": 2.5})
    assert sum(times.values()) == pytest.approx(events[6][2] - events[1][1])  # through the last part, not the argmax


def test_a_part_without_kernels_takes_no_time():
    parts, tail = split_by_markers([M, "a", M, M, "b", M], ["start", "embed", "norm", "lm_head"])
    assert parts[1] == ("norm", [])
    times = part_times(parts, tail, replay(["a", "b"]))
    assert times == pytest.approx({"embed": 2.0, "norm": 0.0, "lm_head": 2.5})


def test_a_replay_that_is_not_the_eager_step_is_an_error():
    parts, tail = split_by_markers(EAGER, NAMES)
    with pytest.raises(ValueError, match="do not contain the eager step's 8"):
        part_times(parts, tail, replay(["check", "embed_k", "gemv", "gemv", "conv", "gemv", "lm_gemv", "argmax", "pos_add"]))
