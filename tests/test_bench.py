"""`python -m compare bench` on the CPU at the tiny config: the Markdown, CSV and JSON
results, per-layer times and their chart, GPU tiers listed as skipped, one-line errors;
and the pieces it is built from (clocks, tables, progress bar, per-layer timing)."""

import contextlib
import csv
import io
import json
import math

import pytest
import torch

from compare import bench, layer_times, tables, timing
from compare.__main__ import main
from compare.progress import Progress
from compare.timing import EnergyMeter, Region, Summary, copy_bandwidth
from reference import ModelConfig, ReferenceTier, Tier, TierInputError, expected_shapes

TINY_RUN = ["--config", "tiny", "--pp", "8", "--tg", "4", "--depth", "0", "--repeats", "2"]


def run(capsys, *argv):
    status = main(["bench", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def table_rows(out: str) -> list[list[str]]:
    """The cells of the first Markdown table in `out` (header first, rule dropped)."""
    lines = [line for line in out.splitlines() if line.startswith("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    first = [r for r in rows if not set("".join(r)) <= set("-:")]
    end = next((i for i, r in enumerate(first[1:], 1) if r[0] == "part"), len(first))
    return first[:end]


@pytest.fixture(scope="module")
def reference_and_hf(tmp_path_factory):
    """One bench run of the reference and hf tiers, as Markdown and as JSON."""
    path = tmp_path_factory.mktemp("bench") / "b.json"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(["bench", *TINY_RUN, "--tiers", "reference,hf", "--json", str(path)])
    return status, buf.getvalue(), json.loads(path.read_text())


def test_markdown_rows_and_columns(reference_and_hf):
    status, out, _ = reference_and_hf
    assert status == 0
    rows = table_rows(out)
    assert rows[0] == bench.RESULT_HEADER
    assert [(r[0], r[1]) for r in rows[1:]] == [("reference", "pp8"), ("reference", "tg4"), ("hf", "pp8"), ("hf", "tg4")]
    for r in rows[1:]:
        median = float(r[2].replace(",", ""))
        lo, hi = (float(v.replace(",", "")) for v in r[3].split("–"))
        assert 0 < lo <= median <= hi
        # ms/token against t/s as printed: below 100 t/s the median shows one decimal (±0.05)
        assert float(r[4]) == pytest.approx(1e3 / median, rel=0.01 + (0.05 / median if median < 100 else 0))
        assert r[5] == r[6] == r[7] == "n/a"  # no copy bandwidth, no dense rate, no NVML on a CPU
    header = out.splitlines()[0]
    assert "torch" in header and "triton" in header and "commit" in header
    assert "config tiny" in out and "2 timed repeats after 1 warm-up" in out


def test_json_fields(reference_and_hf):
    _, _, doc = reference_and_hf
    assert {"device", "torch", "triton", "cuda", "commit"} <= set(doc["environment"])
    assert doc["config"] == "tiny" and doc["dtype"] == "bfloat16"
    assert doc["bytes_per_step"] == bench.weight_bytes_per_step(ModelConfig.tiny())
    assert doc["settings"]["repeats"] == 2 and doc["settings"]["warmup"] == 1
    assert len(doc["results"]) == 4
    for rec in doc["results"]:
        assert rec["repeats"] == len(rec["seconds"]) == 2
        t = rec["tok_s"]
        assert 0 < t["min"] <= t["median"] <= t["max"]
        assert rec["tokens"] == (8 if rec["kind"] == "pp" else 4)
        assert rec["context"] == (0 if rec["kind"] == "pp" else bench.TG_PROMPT)
        assert rec["bw_fraction"] is None and rec["tok_per_joule"] is None


def test_csv(capsys):
    status, out, _ = run(capsys, *TINY_RUN, "--tiers", "reference", "-o", "csv")
    assert status == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == bench.CSV_HEADER
    assert [(r["tier"], r["test"]) for r in rows] == [("reference", "pp8"), ("reference", "tg4")]
    assert all(float(r["tok_s_min"]) <= float(r["tok_s_median"]) <= float(r["tok_s_max"]) for r in rows)


def test_json_to_stdout(capsys):
    status, out, _ = run(capsys, *TINY_RUN, "--tiers", "reference", "--tg", "0", "-o", "json")
    assert status == 0
    doc = json.loads(out)
    assert [r["test"] for r in doc["results"]] == ["pp8"]


def test_layers_table_and_png(tmp_path, capsys):
    png, path = tmp_path / "layers.png", tmp_path / "b.json"
    status, out, _ = run(capsys, "--config", "tiny", "--tiers", "reference,hf", "--pp", "0", "--tg", "0",
                         "--layer-steps", "2", "--png", str(png), "--json", str(path))
    assert status == 0
    block = out.split("per-part time of one decode step")[1]
    lines = [line for line in block.splitlines() if line.startswith("|")]
    assert [c.strip() for c in lines[0].strip("|").split("|")] == ["part", "kind", "reference µs", "hf µs"]
    parts = [line.strip("|").split("|")[0].strip() for line in lines[2:]]
    assert parts == ["embed", "layers.0", "layers.1", "layers.2", "layers.3", "norm", "lm_head", "total"]
    assert "| layers.3 | attention" in block and "| layers.0 | DeltaNet" in block
    assert png.stat().st_size > 5_000
    layers = json.loads(path.read_text())["layers"]
    assert layers["method"] == {"reference": "layer hooks", "hf": "module hooks"}
    ref = layers["times"]["reference"]
    assert all(v > 0 for v in ref.values())
    assert ref["total"] == pytest.approx(sum(v for k, v in ref.items() if k != "total"), rel=0.5)
    floor = layers["floor"]  # the bytes always; no µs (and no floor columns) without a copy bandwidth
    assert floor["context"] == layer_times.median_context(timing.TG_PROMPT, 2)
    assert floor["bytes"] == {**timing.part_bytes_per_step(ModelConfig.tiny(), floor["context"]),
                              "total": sum(timing.part_bytes_per_step(ModelConfig.tiny(), floor["context"]).values())}
    assert floor["us"] is None and "floor: n/a (no copy bandwidth without a GPU)" in block


def test_part_bytes_by_hand():
    """Each part's bytes, from the tiny config's shapes: a DeltaNet layer its matrices + its fp32
    state and conv state read and written; the attention layer its matrices + K/V at the context +
    the new row; the layers and the lm_head add up to the step's floor."""
    c = ModelConfig.tiny()
    D, V = c.hidden_size, c.vocab_size
    parts = timing.part_bytes_per_step(c, 20)
    assert list(parts) == layer_times.parts(c)
    mlp = 3 * c.intermediate_size * D * 2
    dn_w = (c.conv_dim + c.linear_num_value_heads * c.linear_value_head_dim + 2 * c.linear_num_value_heads) * D * 2 \
        + D * c.linear_num_value_heads * c.linear_value_head_dim * 2 + mlp
    dn_state = 2 * (c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim * 4
                    + c.conv_dim * (c.linear_conv_kernel_dim - 1) * 2)
    assert parts["layers.0"] == dn_w + dn_state
    kv = 2 * c.num_key_value_heads * c.head_dim * 2 * 21
    assert parts["layers.3"] - kv == sum(2 * math.prod(s) for n, s in expected_shapes(c).items()
                                         if n.startswith("model.layers.3.") and len(s) == 2)
    assert parts["embed"] == parts["norm"] == 2 * D and parts["lm_head"] == V * D * 2
    assert sum(v for k, v in parts.items() if k not in ("embed", "norm")) == timing.floor_bytes_per_step(c, 1, 20)
    q = ModelConfig.qwen3_5_0_8b()
    assert timing.part_bytes_per_step(q, 16)["lm_head"] == 248320 * 1024 * 2 == 508_559_360


def test_layer_rows_with_a_floor(tmp_path):
    """With a copy bandwidth: per part the floor (µs) and per tier µs and the floor's share, the
    total's floor the sum; the chart draws the floor line and each tier's share of it."""
    doc = {"layers": {"times": {"a": {"layers.0": 4.0, "lm_head": 200.0, "total": 204.0},
                                "b": {"layers.0": 40.0, "lm_head": 400.0, "total": 440.0}},
                      "kinds": {"layers.0": "DeltaNet", "lm_head": "lm_head"},
                      "floor": {"context": 20, "bytes": {}, "us": {"layers.0": 3.0, "lm_head": 170.0, "total": 173.0}}}}
    header, rows = bench.layer_rows(doc)
    assert header == ["part", "kind", "floor µs", "a µs", "a % of floor", "b µs", "b % of floor"]
    assert rows[0] == ["layers.0", "DeltaNet", 3.0, 4.0, 75.0, 40.0, 7.5]
    assert rows[-1][:4] == ["total", "", 173.0, 204.0] and rows[-1][4] == pytest.approx(100 * 173 / 204)
    from compare.plots import part_roofline
    png = tmp_path / "roof.png"
    part_roofline(str(png), doc["layers"]["times"], doc["layers"]["floor"]["us"], doc["layers"]["kinds"], "t")
    assert png.stat().st_size > 5_000


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only listing")
def test_gpu_tiers_listed_as_skipped_on_cpu(tmp_path, capsys):
    path = tmp_path / "b.json"
    status, out, _ = run(capsys, "--pp", "4", "--tg", "0", "--depth", "0", "--repeats", "1", "--json", str(path))
    assert status == 0
    assert "config tiny (random weights, seed 0, the default on a machine without a GPU)" in out
    skipped = {r[0]: r[-1] for r in table_rows(out)[1:] if r[1] == "skipped"}
    assert set(skipped) == {"triton", "megakernel"} and all(skipped.values())
    doc = json.loads(path.read_text())
    assert set(doc["skipped"]) == {"triton", "megakernel"}
    assert {r["tier"] for r in doc["results"]} == {"reference", "hf"}


def test_depth_rows_and_positions_left_out(capsys):
    status, out, _ = run(capsys, "--config", "tiny", "--tiers", "reference", "--pp", "0", "--tg", "2",
                         "--depth", "24,5000", "--repeats", "1")
    assert status == 0
    assert [r[1] for r in table_rows(out)[1:]] == ["tg2", "tg2 @ d24"]
    assert "tg2 @ d5000 left out: it needs 5002 positions, config tiny has 4096" in out


def test_hf_reductions_are_stated(tmp_path, capsys):
    path = tmp_path / "b.json"
    status, out, _ = run(capsys, "--config", "tiny", "--tiers", "hf", "--pp", "0", "--tg", "4", "--depth", "0",
                         "--repeats", "2", "--slow-repeats", "1", "--hf-steps", "2", "--json", str(path))
    assert status == 0
    (rec,) = json.loads(path.read_text())["results"]
    assert rec["repeats"] == 1 and rec["tokens"] == 2 and rec["test"] == "tg4"
    assert rec["note"] == "1 of 2 repeats; 2 of 4 steps" and rec["note"] in out


@pytest.mark.parametrize("argv, message", [
    (["--pp", "x"], "--pp 'x': expected comma-separated token counts"),
    (["--tg", "-3"], "cannot be negative"),
    (["--repeats", "0"], "--repeats 0: expected at least 1"),
    (["--pp", "0", "--tg", "0"], "nothing to run"),
    (["--tiers", "nope"], "unknown tier(s) ['nope']"),
    (["--tiers", "megakernel"], "tier 'megakernel' cannot run on cpu"),
    (["--checkpoint", "/no/such/dir"], "does not exist"),
])
def test_bad_input_is_one_line(capsys, argv, message):
    if "megakernel" in argv and torch.cuda.is_available():
        pytest.skip("the megakernel may run on this machine")
    status, out, err = run(capsys, "--config", "tiny", "--device", "cpu", *argv)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]


# ---- the pieces ------------------------------------------------------------------------------
def test_weight_bytes_match_the_documented_floor():
    assert timing.weight_bytes_per_step(ModelConfig.qwen3_5_0_8b()) == 1_503_789_056


def test_random_prompt_ids_are_seeded_and_never_zero():
    a = timing.random_ids(ModelConfig.tiny(), 520, seed=3, device="cpu")
    assert a.shape == (1, 520) and a.dtype == torch.int64 and int(a.min()) >= 1
    assert torch.equal(a, timing.random_ids(ModelConfig.tiny(), 520, seed=3, device="cpu"))
    assert not torch.equal(a, timing.random_ids(ModelConfig.tiny(), 520, seed=4, device="cpu"))


def test_no_rate_is_a_constant_on_the_cpu():
    """The floors' rates are measured on the GPU of the run; a CPU has none."""
    assert timing.copy_bandwidth("cpu") is None and timing.dense_bf16_flops("cpu") is None


def test_clocks_on_cpu():
    with Region("cpu") as r:
        sum(range(10_000))
    assert r.seconds > 0
    assert Summary.of([3.0, 1.0, 2.0]) == Summary(2.0, 1.0, 3.0)
    assert copy_bandwidth("cpu") is None
    meter = EnergyMeter("cpu")
    assert not meter.available and meter.why and meter.millijoules() is None


def test_tables():
    md = tables.markdown(["a", "num"], [["x", "1.5"], ["long", None]], right={1})
    assert md.splitlines() == ["| a    | num |", "|------|----:|", "| x    | 1.5 |", "| long |     |"]
    assert tables.csv_text(["a", "b"], [[1, None], ["x,y", 2]]) == 'a,b\n1,\n"x,y",2\n'
    assert tables.fmt(1234.5) == "1,234.5" and tables.fmt(None) == "n/a"


def test_progress_bar():
    stream = io.StringIO()
    bar = Progress(4, enabled=True, width=8, stream=stream)
    bar.step("pp8 reference")
    assert stream.getvalue().endswith("\r[##......] 1/4 pp8 reference")
    bar.close()
    quiet = io.StringIO()
    Progress(4, enabled=False, stream=quiet).step("x")
    assert quiet.getvalue() == ""


def test_part_kinds():
    c = ModelConfig.tiny()
    assert layer_times.parts(c) == ["embed", "layers.0", "layers.1", "layers.2", "layers.3", "norm", "lm_head"]
    assert [layer_times.part_kind(c, p) for p in layer_times.parts(c)] == [
        "embed", "DeltaNet", "DeltaNet", "DeltaNet", "attention", "norm", "lm_head"]
    assert layer_times.part_kind(c, "layers.9") == "other"


class KernelTimedTier:
    """A stand-in for the megakernel: its in-kernel clock puts fixed per-part times."""

    name = "fake"
    device = torch.device("cpu")
    part_timing = "kernel timer"

    def __init__(self):
        self.calls = 0

    def new_state(self, batch_size, max_seq_len):
        return {"max": max_seq_len}

    def prefill(self, ids, state):
        return torch.zeros(1, 8)

    def decode_timed(self, token_ids, state, marks):
        self.calls += 1
        for name, us in {"embed": 1.0, "layers.0": 10.0 + self.calls % 2, "lm_head": 5.0}.items():
            marks.put(name, us)
        return token_ids


def test_layer_times_use_the_tiers_own_timer():
    tier = KernelTimedTier()
    times, method = layer_times.decode_layer_times(tier, torch.ones(1, 4, dtype=torch.int64), steps=5, warmup=2)
    assert method == "kernel timer" and tier.calls == 7
    assert times == {"embed": 1.0, "layers.0": 11.0, "lm_head": 5.0, "total": 17.0}


def test_layer_hooks_of_the_reference_tier(tiny_config, tiny_weights):
    """The reference tier marks each part's end itself (no one patches its model); the state advances."""
    tier = ReferenceTier(tiny_config, tiny_weights)
    times, method = layer_times.decode_layer_times(tier, torch.ones(1, 4, dtype=torch.int64), steps=2, warmup=1)
    assert method == "layer hooks" and list(times)[:-1] == layer_times.parts(tiny_config)
    assert all(v >= 0 for v in times.values()) and times["total"] > 0


def test_a_tier_without_part_timing_says_so(tiny_config, tiny_weights):
    class Untimed(ReferenceTier):
        part_timing = None

        def _decode_timed(self, token_ids, state, marks):
            return Tier._decode_timed(self, token_ids, state, marks)

    tier = Untimed(tiny_config, tiny_weights)
    with pytest.raises(ValueError, match="offers no per-part timing"):
        layer_times.decode_layer_times(tier, torch.ones(1, 4, dtype=torch.int64))
    state = tier.new_state(max_seq_len=8)
    tier.prefill(torch.ones(1, 2, dtype=torch.int64), state)
    with pytest.raises(TierInputError, match="cannot time the parts"):
        tier.decode_timed(torch.ones(1, dtype=torch.int64), state, layer_times.Marks("cpu"))
    assert state.seq_len == 2


@pytest.mark.gpu
def test_gpu_clocks_and_bandwidth_fraction(tmp_path, capsys):
    assert copy_bandwidth("cuda", gib=0.25, repeats=3) > 1e11
    path = tmp_path / "b.json"
    status, out, _ = run(capsys, *TINY_RUN, "--tiers", "reference", "--layers", "--layer-steps", "2",
                         "--json", str(path))
    assert status == 0
    doc = json.loads(path.read_text())
    assert doc["copy_bandwidth_Bps"] > 1e11
    tg = next(r for r in doc["results"] if r["kind"] == "tg")
    assert 0 < tg["bw_fraction"] < 1
    assert all(v > 0 for v in doc["layers"]["times"]["reference"].values())


# ---- compare prefill --rerender (the derived columns from a written JSON, no GPU) ------------
def test_prefill_rerender_uses_the_runs_measured_rates(tmp_path, capsys):
    from compare import prefill

    row = {"T": 520, "tok_s_median": 150_000.0, "tok_s_min": 140_000.0, "tok_s_max": 160_000.0,
           "ms_median": 520 / 150.0, "reps": 5, "breakdown": {"GEMM (cuBLAS)": {"us": 1500.0, "kernels": 100, "top": []}}}
    path = tmp_path / "prefill_bench.json"
    path.write_text(json.dumps({"rates": {"dense_bf16_flops": 700e12, "copy_bandwidth_Bps": 3e12}, "fast": [row]}))
    assert main(["prefill", "--rerender", str(path)]) == 0
    (got,) = json.loads(path.read_text())["fast"]
    config = ModelConfig.qwen3_5_0_8b()
    assert got["bytes_floor_ms"] == pytest.approx(1e3 * 1_503_789_056 / 3e12)
    assert got["flop_floor_ms"] == pytest.approx(1e3 * prefill.matrix_flops(config, 520) / 700e12)
    assert got["tflops"] == pytest.approx(prefill.matrix_flops(config, 520) / (row["ms_median"] / 1e3) / 1e12)
    md = (tmp_path / "prefill_bench.md").read_text()
    assert md.startswith("floors from this run's rates: dense bf16 700 TFLOP/s, copy 3.00 TB/s")
    assert "| pp520 | 150,000 | 140,000–160,000 | 3.467 |" in md and "| 1,500 |" in md

    path.write_text(json.dumps({"fast": [row]}))  # written before the rates were measured
    assert main(["prefill", "--rerender", str(path)]) == 2
    assert "no measured rates in it" in capsys.readouterr().err


def test_prefill_rows_on_top_of_a_context_render_and_are_checked(tmp_path, capsys):
    """`compare prefill --depth`: a "ppN @ dD" row's floor counts the attention over the context, its
    name says so; a depth and prompt past the model's positions, or not a number, are refused first."""
    from compare import prefill

    row = {"T": 256, "depth": 16384, "tok_s_median": 15_000.0, "tok_s_min": 14_000.0, "tok_s_max": 16_000.0,
           "ms_median": 256 / 15.0, "reps": 5, "breakdown": {"attention (SDPA)": {"us": 9000.0, "kernels": 6, "top": []}}}
    path = tmp_path / "prefill_bench.json"
    path.write_text(json.dumps({"rates": {"dense_bf16_flops": 700e12, "copy_bandwidth_Bps": 3e12}, "fast": [row]}))
    assert main(["prefill", "--rerender", str(path)]) == 0
    (got,) = json.loads(path.read_text())["fast"]
    config = ModelConfig.qwen3_5_0_8b()
    assert got["flop_floor_ms"] == pytest.approx(1e3 * prefill.matrix_flops(config, 256, 16384) / 700e12)
    assert prefill.matrix_flops(config, 256, 16384) > prefill.matrix_flops(config, 256)
    assert "| pp256 @ d16384 | 15,000 |" in (tmp_path / "prefill_bench.md").read_text()
    assert main(["prefill", "--pp", "520", "--depth", "262000"]) == 2
    assert "--depth 262000 with --pp 520 needs 262520 positions" in capsys.readouterr().err
    assert main(["prefill", "--depth", "lots"]) == 2
    assert "--depth 'lots': expected comma-separated whole numbers" in capsys.readouterr().err
    assert main(["prefill", "--delta-rule", "mine"]) == 2
    assert "--delta-rule 'mine': expected one of fla, flash-qla" in capsys.readouterr().err


def test_matrix_flops_by_hand():
    """The compute floor's FLOPs: 2 per weight per token, one lm_head row, and per full-attention
    layer QKᵀ and PV over the context and the causal prompt (2·2·pairs·head_dim·heads)."""
    config = ModelConfig.tiny()
    from reference import expected_shapes

    weights = sum(s[0] * s[1] for n, s in expected_shapes(config).items() if len(s) == 2 and n != "model.embed_tokens.weight")
    per_pair = 2 * 2 * config.head_dim * config.num_attention_heads * len(config.full_layers)
    assert timing.matrix_flops(config, 5) == pytest.approx(2 * 5 * weights + 2 * config.vocab_size * config.hidden_size
                                                          + per_pair * 15)  # 5 queries, 1+2+3+4+5 causal pairs
    assert timing.matrix_flops(config, 5, 100) - timing.matrix_flops(config, 5) == pytest.approx(per_pair * 500)


def test_pp_rows_on_top_of_a_context(tmp_path, capsys):
    """--depth adds pp{N} @ d{D} rows (a prompt prefilled on top of a D-token context: the time to
    first token of a turn that continues a conversation), each with its compute floor in the JSON
    (the fraction needs a GPU's dense rate); one past the config's positions is left out with a note."""
    path = tmp_path / "b.json"
    status, out, _ = run(capsys, "--config", "tiny", "--tiers", "reference", "--pp", "4", "--tg", "0", "--depth", "8,5000",
                         "--repeats", "1", "--json", str(path))
    assert status == 0
    assert [r[1] for r in table_rows(out)[1:]] == ["pp4", "pp4 @ d8"]
    assert "pp4 @ d5000 left out: it needs 5004 positions" in out and "time to first token" in out
    doc = json.loads(path.read_text())
    recs = {r["test"]: r for r in doc["results"]}
    deep = recs["pp4 @ d8"]
    assert deep["context"] == 8 and deep["tokens"] == 4 and deep["floor_fraction"] is None and doc["dense_bf16_flops"] is None
    assert deep["floor_flops"] == pytest.approx(timing.matrix_flops(ModelConfig.tiny(), 4, 8))
    assert deep["ms_per_prefill"] == pytest.approx(4 * deep["ms_per_token"])
    # with a rate (a GPU's), the fraction is the floor's time over the measured time
    r = bench.Result("reference", bench.Workload("pp", 4, 8, depth=True), [0.01, 0.02, 0.04], 4)  # median 0.02 s
    rec = bench.result_record(r, doc["bytes_per_step"], None, ModelConfig.tiny(), flop_rate=1e9)
    assert rec["floor_fraction"] == pytest.approx(timing.matrix_flops(ModelConfig.tiny(), 4, 8) / 1e9 / 0.02)


def test_stream_rows(tmp_path, capsys):
    """--stream adds tg{N} stream rows (every token read on the host as it is produced), timed
    like the tg rows: the same steps, tokens per second of decode steps."""
    path = tmp_path / "s.json"
    status, out, _ = run(capsys, "--config", "tiny", "--tiers", "reference", "--pp", "0", "--tg", "4", "--depth", "0",
                         "--stream", "--repeats", "1", "--json", str(path))
    assert status == 0 and [r[1] for r in table_rows(out)[1:]] == ["tg4", "tg4 stream"]
    recs = {r["test"]: r for r in json.loads(path.read_text())["results"]}
    assert recs["tg4 stream"]["tokens"] == recs["tg4"]["tokens"] == 4 and recs["tg4 stream"]["kind"] == "tg"


def test_stream_rows_at_every_batch(tmp_path, capsys):
    """--stream with --batch: a stream row per batch size, B x steps tokens (decode_greedy, every
    step's ids read back as the step ends)."""
    path = tmp_path / "s.json"
    status, out, _ = run(capsys, "--config", "tiny", "--tiers", "reference", "--pp", "0", "--tg", "4", "--depth", "0",
                         "--batch", "1,2", "--stream", "--repeats", "1", "--json", str(path))
    assert status == 0 and [r[1] for r in table_rows(out)[1:]] == ["tg4", "tg4 b2", "tg4 stream", "tg4 stream b2"]
    recs = {r["test"]: r for r in json.loads(path.read_text())["results"]}
    assert recs["tg4 stream b2"]["tokens"] == recs["tg4 b2"]["tokens"] == 8 and recs["tg4 stream b2"]["batch"] == 2


def test_prefill_groups_kernels_by_name_and_lists_every_one():
    """`compare prefill` puts each kernel in its group by name (ours before GEMM: gemv_add_row holds "gemv"; cuDNN's
    attention before GEMM: its names hold "sm90_") and lists every kernel of a row, most µs first, with its launches
    and µs a launch; rows written before the full list (no "all") render without it."""
    from compare import prefill

    assert prefill.category("void mkp::(anonymous namespace)::gemv_add_row_kernel<3584>(unsigned short const*)") == \
        "ours (prefill.cu)"
    assert prefill.category("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16") == "attention (SDPA)"
    assert prefill.category("nvjet_sm90_tst_64x88_64x11_4x2_h_badd_TNT") == "GEMM (cuBLAS)"
    assert prefill.category("tilelang_kkt_solve_kernel_kernel") == "delta rule"
    assert prefill.category("void at::native::reduce_kernel<512, 1>") == "other"
    rates = {"dense_bf16_flops": 700e12, "copy_bandwidth_Bps": 3e12}
    row = {"T": 520, "tok_s_median": 210_000.0, "tok_s_min": 200_000.0, "tok_s_max": 211_000.0, "ms_median": 2.476,
           "reps": 5, "breakdown": {
               "GEMM (cuBLAS)": {"us": 420.0, "kernels": 47, "top": [["nvjet_a", 400.0], ["nvjet_b", 20.0]],
                                 "all": [["nvjet_a", 46, 400.0], ["nvjet_b", 1, 20.0]]},
               "ours (prefill.cu)": {"us": 170.0, "kernels": 2, "top": [["lm_head_kernel", 164.0], ["gemv_add_row", 6.0]],
                                     "all": [["lm_head_kernel", 1, 164.0], ["gemv_add_row", 1, 6.0]]}}}
    md = prefill.render([prefill.derive(row, ModelConfig.qwen3_5_0_8b(), rates)], rates)
    lines = md.splitlines()
    at = lines.index("every kernel of pp520 (one profiled prefill):")
    assert lines[at + 4:at + 8] == ["| `nvjet_a` | GEMM (cuBLAS) | 46 | 400.0 | 8.70 |",
                                    "| `lm_head_kernel` | ours (prefill.cu) | 1 | 164.0 | 164.00 |",
                                    "| `nvjet_b` | GEMM (cuBLAS) | 1 | 20.0 | 20.00 |",
                                    "| `gemv_add_row` | ours (prefill.cu) | 1 | 6.0 | 6.00 |"], md
    for v in row["breakdown"].values():
        del v["all"]
    assert "every kernel" not in prefill.render([row], rates)


def test_prefill_table_lists_the_gemm_shapes_timed_and_the_way_each_took():
    """`compare prefill` lists each GEMM shape the prefill timed (megakernel/prefill_gemm.py): torch's faster pass,
    cuBLASLt's best candidate (a candidate that would not run left out) and the way taken, with the reason where a
    shape was not timed; no list where none was timed."""
    from compare import prefill

    timings = {1: {"M": 4096, "N": 7168, "K": 1024, "beta": 0, "torch_us": [84.16, 84.19],
                   "candidates_us": [84.23, float("inf"), 78.12], "chosen": 2},
               2: {"M": 4096, "N": 1024, "K": 3584, "beta": 1, "torch_us": [42.3, 43.38], "candidates_us": [42.1],
                   "chosen": None},
               3: {"M": 2048, "N": 1024, "K": 2048, "beta": 1, "chosen": None, "why": "first met during a graph capture"}}
    gemms = prefill.gemm_rows(timings)
    assert gemms[0]["candidates_us"] == [84.23, None, 78.12]  # (JSON: no Infinity)
    rates = {"dense_bf16_flops": 700e12, "copy_bandwidth_Bps": 3e12}
    row = {"T": 4096, "tok_s_median": 380_000.0, "tok_s_min": 370_000.0, "tok_s_max": 390_000.0, "ms_median": 10.8,
           "reps": 5, "breakdown": {"GEMM (cuBLAS)": {"us": 6000.0, "kernels": 96, "top": []}}}
    row = prefill.derive(row, ModelConfig.qwen3_5_0_8b(), rates)
    lines = prefill.render([row], rates, gemms).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("the GEMM shapes the prefill timed"))
    assert lines[at + 4:at + 7] == [
        "| 4,096 x 7,168 x 1,024 | 0 | 84.16 | 78.12 | cuBLASLt candidate 2 |",
        "| 4,096 x 1,024 x 3,584 | 1 | 42.30 | 42.10 | torch's call |",
        "| 2,048 x 1,024 x 2,048 | 1 | – | – | torch's call (first met during a graph capture) |"], lines[at:]
    assert not any(line.startswith("the GEMM shapes") for line in prefill.render([row], rates).splitlines())


def test_prefill_table_shows_the_time_not_in_kernels(tmp_path):
    """Each row shows its median time less its kernels' summed times (the gaps and the host's work), from
    the breakdown alone: rows written before the column existed show it too."""
    from compare import prefill

    rates = {"dense_bf16_flops": 700e12, "copy_bandwidth_Bps": 3e12}
    row = {"T": 520, "tok_s_median": 185_000.0, "tok_s_min": 180_000.0, "tok_s_max": 190_000.0, "ms_median": 2.8,
           "reps": 5, "breakdown": {"GEMM (cuBLAS)": {"us": 1100.0, "kernels": 96, "top": []},
                                    "ours (prefill.cu)": {"us": 1450.0, "kernels": 124, "top": []}}}
    md = prefill.render([prefill.derive(row, ModelConfig.qwen3_5_0_8b(), rates)], rates)
    assert "| 220 | 250 |" in md, md
