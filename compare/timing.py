"""The one timing module of the workbench: a region timer (CUDA events on a GPU,
perf_counter on a CPU), the floors' rates measured on this machine (copy bandwidth, dense
bf16 matrix rate: never a constant), the bytes a decode step must read (the weights once,
and at batch B each sequence's own state and cache traffic), the one tg loop
(`decode_steps`, timed by `time_tg`), the one pp measurement (`time_pp`), a kernel's time from
a CUDA graph of many calls (`graph_us`, compare delta-rule), NVML's energy counter and the
median/min/max summary. `compare bench`, `compare ab` and
`compare prefill` time through it.

Every GPU region is bracketed by events on the current stream and read back only after
the region, so nothing inside it waits for the host.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import dataclass

import torch

from reference import expected_shapes

TG_PROMPT = 16        # tokens prefilled before a plain tg run
PREFILL_CHUNK = 4096  # a deep context is prefilled this many tokens at a time


@dataclass(frozen=True)
class Summary:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values) -> "Summary":
        values = list(values)
        return cls(statistics.median(values), min(values), max(values))


class Region:
    """`with Region(device) as r: work()` then `r.seconds` (reading it waits for the GPU)."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"

    def __enter__(self):
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
            self._start.record()
        else:
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self._end.record()
        else:
            self._t1 = time.perf_counter()
        return False

    @property
    def seconds(self) -> float:
        if self.cuda:
            self._end.synchronize()
            return self._start.elapsed_time(self._end) / 1e3
        return self._t1 - self._t0


def synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def copy_bandwidth(device, gib: float = 2.0, repeats: int = 10) -> float | None:
    """Bytes/s of a `gib` GiB bf16 device-to-device copy, counting bytes read + written
    (median of `repeats` after one warm-up); None on a CPU."""
    if torch.device(device).type != "cuda":
        return None
    n = int(gib * 2**30) // 2
    src = torch.randn(n, device=device, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        with Region(device) as r:
            dst.copy_(src)
        times.append(r.seconds)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * n * 2 / statistics.median(times)


def dense_bf16_flops(device, n: int = 8192, repeats: int = 5) -> float | None:
    """FLOP/s of an n×n×n bf16 matrix product on random data (median of `repeats` after one
    warm-up): the compute floor's rate; None on a CPU."""
    if torch.device(device).type != "cuda":
        return None
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    torch.mm(a, b)
    times = []
    for _ in range(repeats):
        with Region(device) as r:
            torch.mm(a, b)
        times.append(r.seconds)
    del a, b
    torch.cuda.empty_cache()
    return 2 * n ** 3 / statistics.median(times)


def weight_bytes_per_step(config) -> int:
    """Bytes of the weight matrices one decode step reads in bf16 (the lm_head once: the tied
    embedding, or its own matrix, the embedding's one row then left out; every projection), as
    docs count them: 1,503,789,056 for the 0.8B. The conv taps and norm vectors (0.07 % more)
    are left out."""
    return sum(2 * math.prod(s) for name, s in expected_shapes(config).items()
               if len(s) == 2 and (name != "model.embed_tokens.weight" or config.tie_word_embeddings))


def layer_state_bytes(config, layer: int, context: int, state_bytes: int = 2) -> int:
    """Bytes layer `layer`'s own state moves for one sequence in one decode step whose state
    holds `context` tokens, every size from the config: a DeltaNet layer reads and writes its fp32
    recurrent state (Hv × dk × dv) and its causal conv's state (conv_dim × (kernel − 1),
    `state_bytes` each); a full-attention layer reads the K and V cache rows (n_kv × head_dim
    each) of the `context` earlier positions and writes the new row."""
    c = config
    if layer in c.linear_layers:
        recurrent = c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim * 4
        conv = c.conv_dim * (c.linear_conv_kernel_dim - 1) * state_bytes
        return 2 * (recurrent + conv)
    kv_row = 2 * c.num_key_value_heads * c.head_dim * state_bytes  # K and V of one position
    return kv_row * (context + 1)


def sequence_bytes_per_step(config, context: int, state_bytes: int = 2) -> int:
    """Bytes one sequence's own state moves in one decode step whose state holds `context`
    tokens: every layer's `layer_state_bytes`."""
    return sum(layer_state_bytes(config, i, context, state_bytes) for i in range(config.num_layers))


def part_bytes_per_step(config, context: int, state_bytes: int = 2) -> dict[str, int]:
    """The bytes each part of one batch-1 decode step (compare.layer_times.parts) must move with
    `context` tokens in the state: "embed" one embedding row; "layers.{i}" that layer's weight
    matrices in bf16 (as `weight_bytes_per_step` counts them) and its `layer_state_bytes`; "norm"
    the final norm's weights; "lm_head" its matrix (the tied embedding, or its own). The layers and
    the lm_head add up to `floor_bytes_per_step(config, 1, context)`."""
    shapes = expected_shapes(config)
    matrices = {name: 2 * math.prod(s) for name, s in shapes.items() if len(s) == 2}
    out = {"embed": 2 * config.hidden_size}
    for i in range(config.num_layers):
        prefix = f"model.layers.{i}."
        out[f"layers.{i}"] = sum(b for n, b in matrices.items() if n.startswith(prefix)) + \
            layer_state_bytes(config, i, context, state_bytes)
    out["norm"] = 2 * config.hidden_size
    out["lm_head"] = matrices.get("lm_head.weight", matrices["model.embed_tokens.weight"])
    return out


def floor_bytes_per_step(config, batch: int, context: int, steps: int = 1, state_bytes: int = 2) -> float:
    """The byte floor of one decode step at batch `batch`, averaged over a tg run of `steps`
    steps after a `context`-token prompt (step i holds context + i tokens): the weights read
    once (`weight_bytes_per_step`) + `batch` × each sequence's own traffic
    (`sequence_bytes_per_step`)."""
    per_sequence = sum(sequence_bytes_per_step(config, context + i, state_bytes) for i in range(steps)) / steps
    return weight_bytes_per_step(config) + batch * per_sequence


def random_ids(config, n: int, seed: int, device, rows: int = 1) -> torch.Tensor:
    """[rows, n] seeded random token ids in [1, vocab) (never the all-zeros prompt); the
    first row is the one row a single-row call with the same seed gives."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(1, config.vocab_size, (rows, n), generator=gen).to(device)


def prefill_chunked(tier, ids, state):
    """Prefill `ids` [B, T] into `state` PREFILL_CHUNK tokens at a time → the last logits."""
    logits = None
    for start in range(0, ids.shape[1], PREFILL_CHUNK):
        logits = tier.prefill(ids[:, start:start + PREFILL_CHUNK], state)
    return logits


def decode_steps(tier, token, state, steps: int):
    """The tg loop: `steps` greedy decode_argmax steps, each fed the last one's ids on the
    device (nothing waits for the host) → the last ids."""
    for _ in range(steps):
        token = tier.decode_argmax(token, state)
    return token


def greedy_tokens(tier, first, state, limit: int, stop=(), on_token=None) -> tuple[list[int], str, int]:
    """Greedy decoding with each new token handed to the host as it is produced, the tier's
    fastest way: one launch for every step where the tier runs many tokens per launch
    (launch_greedy), else one launch a step with a step always in flight (stream_greedy).
    `first`: the first new token [1] on the tier's device. → (the tokens, why it stopped, the
    decode steps run)."""
    run = launch_greedy if tier.many_tokens_per_launch else stream_greedy
    return run(tier, first, state, limit, stop, on_token)


def launch_greedy(tier, first, state, limit: int, stop=(), on_token=None, temperature: float = 0.0,
                  seed: int = 0) -> tuple[list[int], str, int]:
    """Greedy decoding through `tier.decode_greedy` (the megakernel: ONE launch runs every step,
    each step's token lands in pinned host memory as the step ends and is handed on from there), or
    at `temperature` > 0 sampling through `tier.decode_sample` (reference/sampling.py's draw, `seed`):
    `limit` tokens at most, the first of them `first`; stops at an id in `stop` (not kept, and not
    consumed: the launch ends after the step that produced it) → (the tokens, why, decode steps run)."""
    stop, token = set(stop), int(first[0])
    if token in stop:
        return [], f"EOS id {token}", 0
    tokens, reason = [token], [f"--max-new-tokens {limit}"]
    if on_token is not None:
        on_token(token)
    if limit <= 1:
        return tokens, reason[0], 0

    def on_step(i, ids):
        if ids[0] in stop:
            reason[0] = f"EOS id {ids[0]}"
            return
        tokens.append(ids[0])
        if on_token is not None:
            on_token(ids[0])

    if temperature > 0:
        ran = tier.decode_sample(first.reshape(1), state, limit - 1, temperature, seed, stop_ids=sorted(stop), on_step=on_step)
    else:
        ran = tier.decode_greedy(first.reshape(1), state, limit - 1, stop_ids=sorted(stop), on_step=on_step)
    return tokens, reason[0], ran.shape[0]


def stream_greedy(tier, first, state, limit: int, stop=(), on_token=None) -> tuple[list[int], str, int]:
    """Greedy decoding that hands each new token to the host as it is produced while the device
    never waits for the host: the step that consumes a token is queued before that token is read
    (on a GPU through pinned memory and an event, so the read waits for that step alone), so one
    step is always in flight. `first`: the first new token [1] on the tier's device (the prompt's
    argmax). Stops after `limit` tokens or at an id in `stop` (not kept; the step queued ahead has
    consumed it, so the state holds it: one decode step more than a loop that waits) → (the
    tokens, why it stopped, the decode steps launched)."""
    cuda = torch.device(tier.device).type == "cuda"
    if cuda:  # two pinned words and events, used in turn: at most two reads are pending
        words = [torch.empty(1, dtype=torch.int64, pin_memory=True) for _ in range(2)]
        events = [torch.cuda.Event() for _ in range(2)]
    turn = 0

    def fetch(ids):
        """→ a call that returns ids[0] on the host, waiting only for the work queued so far."""
        nonlocal turn
        if not cuda:
            return lambda: int(ids[0])
        word, event = words[turn], events[turn]
        turn ^= 1
        word.copy_(ids, non_blocking=True)
        event.record(torch.cuda.current_stream(tier.device))  # (the tier's device's stream, whatever device is current)
        return lambda: (event.synchronize(), int(word[0]))[1]

    tokens, steps = [], 0
    current, read = first, fetch(first)
    while True:
        if len(tokens) + 1 < limit:  # the token after this one may be wanted: queue its step first
            current = tier.decode_argmax(current, state)
            steps += 1
            read_next = fetch(current)
        token = read()
        if token in stop:
            return tokens, f"EOS id {token}", steps
        tokens.append(token)
        if on_token is not None:
            on_token(token)
        if len(tokens) >= limit:
            return tokens, f"--max-new-tokens {limit}", steps
        read = read_next


class Clock:
    """Times one region (seconds) and, where a meter is given and NVML can, its energy (joules).
    The GPU is synchronized first, so the region holds only the work."""

    def __init__(self, device, meter: EnergyMeter | None = None):
        self.device, self.meter = device, meter

    def __call__(self, work) -> tuple[float, float | None]:
        synchronize(self.device)
        e0 = self.meter.millijoules() if self.meter else None
        with Region(self.device) as region:
            work()
        seconds = region.seconds
        return seconds, None if e0 is None else (self.meter.millijoules() - e0) / 1e3


def time_tg(tier, context: int, steps: int, seed: int, clock: Clock, batch: int = 1) -> tuple[float, float | None]:
    """One tg measurement: a fresh state of `batch` sequences, each holding its own
    `context`-token random prompt (prefilled together, in chunks, untimed), then `steps`
    greedy steps (`decode_steps`, every sequence one token a step) timed as one region
    → (seconds, joules | None)."""
    state, token = prefilled_rows(tier, batch, context, steps, seed)
    return clock(lambda: decode_steps(tier, token, state, steps))


def prefilled_rows(tier, batch: int, context: int, steps: int, seed: int):
    """A fresh state of `batch` rows with room for `steps` more tokens, each row holding its own
    `context`-token random prompt (prefilled together, in chunks) → (state, the greedy next ids)."""
    state = tier.new_state(batch, context + steps)
    ids = random_ids(tier.config, context, seed, tier.device, rows=batch)
    return state, prefill_chunked(tier, ids, state).argmax(-1)


def time_tg_stream(tier, context: int, steps: int, seed: int, clock: Clock, batch: int = 1) -> tuple[float, float | None]:
    """time_tg's steps with every token read on the host as it is produced → (seconds, joules |
    None). One row: greedy_tokens, as `compare generate` streams them (the megakernel in one
    launch); a batch: `decode_greedy`, every step's ids handed to the host as the step ends (the
    megakernel in one launch, the other tiers a `decode_argmax` a step, each read back)."""
    state, first = prefilled_rows(tier, batch, context, steps + 1, seed)
    if batch == 1:
        return clock(lambda: greedy_tokens(tier, first, state, steps + 1))
    return clock(lambda: tier.decode_greedy(first, state, steps))


def time_pp(tier, ids, clock: Clock, context_ids=None) -> tuple[float, float | None]:
    """One pp measurement: the prefill of `ids` [1, T] in one call on a fresh state — on top of
    `context_ids` [1, D] prefilled first (untimed, in chunks) where given: a turn that continues a
    conversation, whose time is the time to first token — timed as one region → (seconds, joules | None)."""
    D = 0 if context_ids is None else context_ids.shape[1]
    state = tier.new_state(1, D + ids.shape[1])
    if D:
        prefill_chunked(tier, context_ids, state)
    return clock(lambda: tier.prefill(ids, state))


def matrix_flops(config, T: int, context: int = 0) -> float:
    """The matrix FLOPs of prefilling T tokens on top of `context`: 2·T·(every projection matrix),
    the lm_head of one position, and the full-attention layers' QKᵀ and PV of the T queries over the
    context and their own causal keys (the compute floor's numerator; the recurrences, norms and
    gates are left out: a few % at most)."""
    total = 0.0
    for name, shape in expected_shapes(config).items():
        if len(shape) == 2 and name not in ("model.embed_tokens.weight", "lm_head.weight"):
            total += 2.0 * T * shape[0] * shape[1]
    total += 2.0 * config.vocab_size * config.hidden_size
    keys = T * context + T * (T + 1) / 2  # (query, key) pairs
    attn = 2 * 2 * keys * config.head_dim * config.num_attention_heads
    return total + attn * len(config.full_layers)


class EnergyMeter:
    """NVML's total-energy counter (mJ) of the GPU torch uses; `available` is False (and
    `why` says why) where NVML or the counter cannot be read."""

    def __init__(self, device):
        self.available, self.why, self._handle = False, None, None
        if torch.device(device).type != "cuda":
            self.why = "no GPU"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = self._find_handle(pynvml, torch.device(device))
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            self.available = True
        except ImportError:
            self.why = "pynvml (nvidia-ml-py) is not installed"
        except Exception as e:  # NVML missing, counter not supported on this GPU
            self.why = f"NVML energy counter unreadable: {e}"

    @staticmethod
    def _find_handle(pynvml, device):
        index = device.index if device.index is not None else torch.cuda.current_device()
        uuid = str(torch.cuda.get_device_properties(index).uuid)
        try:
            return pynvml.nvmlDeviceGetHandleByUUID("GPU-" + uuid)
        except Exception:  # older torch/NVML: fall back to the index
            return pynvml.nvmlDeviceGetHandleByIndex(index)

    def millijoules(self) -> int | None:
        if not self.available:
            return None
        return self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)


def graph_us(fn, calls: int, replays: int) -> tuple[float, str]:
    """µs per call: `calls` calls captured in one CUDA graph, the median of `replays` replays; where
    the rule cannot be captured, the same number of eager calls between two events ("eager")."""
    fn()
    torch.cuda.synchronize()
    how = "graph"
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        run = graph.replay
    except Exception as e:  # a host read inside the rule: time it eagerly
        torch.cuda.synchronize()
        print(f"  (not capturable: {type(e).__name__}: {str(e)[:120]}; timed eagerly)", file=sys.stderr)
        how = "eager"

        def run():
            for _ in range(calls):
                fn()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / calls)
    return statistics.median(times), how
