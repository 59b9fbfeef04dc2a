"""compare's batch features (issue 19) on the CPU at the tiny config: `bench --batch`,
`generate --num-return-sequences`, `diff --batch`; the byte floor against a hand count;
batch-1 bench rows as before; and the skip / refusal paths through fake tiers (the
reference tier with max_batch=2, or with per_row_positions False)."""

import argparse
import csv
import io
import json

import pytest
import torch

from compare import bench, generate, tiers, timing
from compare.__main__ import main
from reference import ModelConfig, ReferenceTier, random_weights

TINY = ModelConfig.tiny()


class CappedTier(ReferenceTier):
    """The reference tier declaring at most 2 rows a state."""
    name = "capped"
    max_batch = 2


class OnePositionTier(ReferenceTier):
    """The reference tier declaring one position for the whole batch."""
    name = "onepos"
    per_row_positions = False


@pytest.fixture
def fake_tiers(monkeypatch):
    monkeypatch.setitem(tiers.TIERS, "capped", (__name__, "CappedTier"))
    monkeypatch.setitem(tiers.TIERS, "onepos", (__name__, "OnePositionTier"))


def run(capsys, command, *argv):
    status = main([command, *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def table_rows(out: str) -> list[list[str]]:
    """The cells of the first Markdown table in `out` (header first, rule dropped)."""
    lines = [line for line in out.splitlines() if line.startswith("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return [r for r in rows if not set("".join(r)) <= set("-:")]


def number(cell: str) -> float:
    return float(cell.replace(",", ""))


# ---- the byte floor ------------------------------------------------------------------------
def test_sequence_bytes_by_hand():
    # tiny: 3 DeltaNet layers (4 value heads of 16 × 16, conv over 2·2·16 + 4·16 = 128 channels, kernel 4),
    # 1 attention layer (2 KV heads of 32), bf16 state
    recurrent = 3 * 2 * (4 * 16 * 16 * 4)     # fp32, read + written
    conv = 3 * 2 * (128 * 3 * 2)              # 3 past columns, read + written
    kv_row = 1 * 2 * 2 * 32 * 2               # K and V of one position
    assert timing.sequence_bytes_per_step(TINY, 16) == recurrent + conv + 17 * kv_row == 33_536
    # 0.8B: 18 DeltaNet layers of 16 × 128 × 128, conv 6144 channels, 6 attention layers of 2 × 256
    q = ModelConfig.qwen3_5_0_8b()
    assert timing.sequence_bytes_per_step(q, 16) == 18 * 2 * (16 * 128 * 128 * 4 + 6144 * 3 * 2) + 6 * 2 * 2 * 256 * 2 * 17


def test_floor_bytes_by_hand():
    weights = timing.weight_bytes_per_step(TINY)
    fixed = 3 * 2 * (4 * 16 * 16 * 4) + 3 * 2 * (128 * 3 * 2)
    # 4 steps after 16 tokens: the steps hold 16, 17, 18, 19 tokens (read) and write one row each
    per_sequence = fixed + 256 * (17 + 18 + 19 + 20) / 4
    assert timing.floor_bytes_per_step(TINY, 4, 16, steps=4) == weights + 4 * per_sequence
    assert timing.floor_bytes_per_step(TINY, 1, 16) == weights + timing.sequence_bytes_per_step(TINY, 16)


def test_record_fractions_by_hand():
    """tok/s, per-sequence tok/s and both fractions of one batch-4 row, from made-up timings."""
    copy_bw, weights = 1e9, timing.weight_bytes_per_step(TINY)
    w = bench.Workload("tg", 4, 16, batch=4)
    rec = bench.result_record(bench.Result("reference", w, [0.5, 0.25, 1.0], tokens=16), weights, copy_bw, TINY)
    assert rec["test"] == "tg4 b4" and rec["batch"] == 4 and rec["steps"] == 4
    assert rec["tok_s"]["median"] == 32.0 and rec["tok_s_per_seq"]["median"] == 8.0
    assert rec["ms_per_step"] == 125.0
    assert rec["bw_fraction"] == pytest.approx(8.0 * weights / copy_bw)   # the weights are read once a step
    floor = timing.floor_bytes_per_step(TINY, 4, 16, steps=4)
    assert rec["floor_bytes_per_step"] == floor and rec["floor_fraction"] == pytest.approx(8.0 * floor / copy_bw)
    one = bench.result_record(bench.Result("reference", bench.Workload("tg", 4, 16), [0.5], tokens=4),
                              weights, copy_bw, TINY)
    assert one["test"] == "tg4" and one["bw_fraction"] == pytest.approx(8.0 * weights / copy_bw)  # as before


# ---- bench --batch ---------------------------------------------------------------------------
BENCH = ["--config", "tiny", "--device", "cpu", "--pp", "0", "--tg", "3", "--depth", "0", "--repeats", "1",
         "--warmup", "0"]


def test_bench_batch_rows_json_and_skip(fake_tiers, tmp_path, capsys):
    path = tmp_path / "b.json"
    status, out, _ = run(capsys, "bench", *BENCH, "--tiers", "reference,capped", "--batch", "1,2,4",
                         "--json", str(path))
    assert status == 0
    rows = table_rows(out)
    assert rows[0] == bench.BATCH_RESULT_HEADER
    assert [(r[0], r[1]) for r in rows[1:]] == [("reference", "tg3"), ("reference", "tg3 b2"), ("reference", "tg3 b4"),
                                                ("capped", "tg3"), ("capped", "tg3 b2"), ("capped", "tg3 b4")]
    skipped = rows[-1]
    assert skipped[2:-1] == [""] * 7 and "batch 4 is above tier capped's max_batch 2" in skipped[-1]
    for r in rows[1:-1]:
        batch = int(r[1].split(" b")[1]) if " b" in r[1] else 1
        assert number(r[2]) == pytest.approx(batch * number(r[3]), rel=0.02, abs=0.2)  # total = B × per sequence
        assert r[6] == "n/a" and r[7] == "n/a"  # no copy bandwidth on a CPU
    assert "batch 1 (pp), 1,2,4 (tg)" in out and "33,536 B per sequence" in out
    doc = json.loads(path.read_text())
    assert doc["settings"]["batches"] == [1, 2, 4]
    recs = {(r["tier"], r["test"]): r for r in doc["results"]}
    b4 = recs[("reference", "tg3 b4")]
    assert b4["batch"] == 4 and b4["tokens"] == 12 and b4["steps"] == 3
    assert b4["floor_bytes_per_step"] == timing.floor_bytes_per_step(TINY, 4, timing.TG_PROMPT, 3)
    assert b4["tok_s"]["median"] == pytest.approx(4 * b4["tok_s_per_seq"]["median"])
    capped = recs[("capped", "tg3 b4")]
    assert capped["skipped"] and capped["tok_s"] is None and capped["note"] == capped["skipped"]
    assert recs[("capped", "tg3 b2")]["tokens"] == 6


def test_bench_batch_csv(capsys):
    status, out, _ = run(capsys, "bench", *BENCH, "--tiers", "reference", "--batch", "2", "-o", "csv")
    assert status == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == bench.BATCH_CSV_HEADER
    assert [(r["test"], r["batch"], r["tokens"]) for r in rows] == [("tg3 b2", "2", "6")]
    assert float(rows[0]["floor_bytes_per_step"]) == timing.floor_bytes_per_step(TINY, 2, timing.TG_PROMPT, 3)


def test_bench_batch_one_is_unchanged(tmp_path, capsys):
    """Without --batch, or with --batch 1, the table, CSV and record fields are those of before (but
    the floor column every row has since issue 21: pp rows' compute floor, tg rows' byte floor)."""
    plain, one = tmp_path / "plain.json", tmp_path / "one.json"
    argv = ["--config", "tiny", "--device", "cpu", "--pp", "4", "--tg", "3", "--depth", "0", "--repeats", "1",
            "--tiers", "reference"]
    outs = [run(capsys, "bench", *argv, *extra)[1] for extra in (["--json", str(plain)], ["--batch", "1", "--json", str(one)])]
    for out in outs:
        rows = table_rows(out)
        assert rows[0] == bench.RESULT_HEADER and [r[1] for r in rows[1:]] == ["pp4", "tg3"]
        assert "| bf16 | batch 1 |" in out and "t/s/seq" not in out
    old_keys = {"tier", "test", "kind", "tokens", "context", "repeats", "tok_s", "ms_per_token", "bw_fraction",
                "tok_per_joule", "seconds", "note"}
    for path in (plain, one):
        for rec in json.loads(path.read_text())["results"]:
            assert old_keys <= set(rec) and rec["tokens"] == (4 if rec["kind"] == "pp" else 3)
    csv_out = run(capsys, "bench", *argv, "--batch", "1", "-o", "csv")[1]
    assert csv_out.splitlines()[0].split(",") == bench.CSV_HEADER


def test_bench_speedups_over_the_vs_tier(fake_tiers, tmp_path, capsys):
    """Under the rows: every tier's tokens/s over the --vs tier's, row by row of the same run (the
    JSON has the ratios); where the --vs tier did not run (triton, the default, on a CPU): no table."""
    path = tmp_path / "s.json"
    status, out, _ = run(capsys, "bench", *BENCH, "--tiers", "reference,capped", "--batch", "1,2", "--vs", "reference",
                         "--json", str(path))
    assert status == 0
    rows = table_rows(out.split("tokens/s over reference's, same run:\n")[1])
    assert rows[0] == ["test", "capped"] and [r[0] for r in rows[1:]] == ["tg3", "tg3 b2"]
    doc = json.loads(path.read_text())
    tok_s = {(r["tier"], r["test"]): r["tok_s"]["median"] for r in doc["results"] if r["tok_s"]}
    for row in rows[1:]:
        want = tok_s[("capped", row[0])] / tok_s[("reference", row[0])]
        assert doc["speedups"]["ratios"][row[0]] == {"capped": pytest.approx(want)} and row[1] == f"{want:.2f}x"
    status, out, _ = run(capsys, "bench", *BENCH, "--tiers", "reference", "--json", str(path))
    assert status == 0 and "tokens/s over" not in out
    assert json.loads(path.read_text())["speedups"] == {"base": "triton", "ratios": {}}


def test_bench_vs_an_unknown_tier_is_one_line(capsys):
    status, out, err = run(capsys, "bench", *BENCH, "--tiers", "reference", "--vs", "nope")
    assert status == 2 and out == "" and "--vs 'nope': unknown tier; expected one of" in err


@pytest.mark.parametrize("value", ["0", "x", "2,-1", ""])
def test_bench_bad_batch_is_one_line(capsys, value):
    status, out, err = run(capsys, "bench", *BENCH, "--tiers", "reference", "--batch", value)
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and "--batch" in err and "expected comma-separated batch sizes" in err


# ---- generate --num-return-sequences ------------------------------------------------------
GEN = ["--config", "tiny", "--device", "cpu", "--tier", "reference", "--prompt-ids", "5,6,7", "--max-new-tokens", "6"]


def sequences(out: str) -> dict[int, list[int]]:
    found = {}
    for line in out.splitlines():
        tag, _, ids = line.partition(" ")
        found[int(tag.strip("[]"))] = [int(t) for t in ids.split()]
    return found


def test_generate_samples_n_sequences(capsys):
    status, out, err = run(capsys, "generate", *GEN, "--temperature", "2", "--seed", "3", "--num-return-sequences", "3")
    assert status == 0
    seqs = sequences(out)
    assert sorted(seqs) == [0, 1, 2] and all(len(s) == 6 for s in seqs.values())
    assert len({tuple(s) for s in seqs.values()}) == 3  # per-row seeds: different samples
    assert "3 sequences in one batch" in err and "seeds 3..5" in err and "warning" not in err
    assert "[2] 6 new tokens, stopped at --max-new-tokens 6" in err and "18 new tokens kept in 3 sequences" in err
    # row k is sampled with seed --seed + k: row 0 is the single sequence of --seed, row 1 that of --seed + 1
    for k in (0, 1):
        single = run(capsys, "generate", *GEN, "--temperature", "2", "--seed", str(3 + k))
        assert [int(t) for t in single[1].split()] == seqs[k]
    # the same seed again: the same sequences
    assert sequences(run(capsys, "generate", *GEN, "--temperature", "2", "--seed", "3", "-n", "3")[1]) == seqs


def test_generate_greedy_n_warns_and_repeats(capsys):
    status, out, err = run(capsys, "generate", *GEN, "--num-return-sequences", "2")
    assert status == 0
    seqs = sequences(out)
    assert seqs[0] == seqs[1] and len(seqs[0]) == 6
    assert "warning: greedy decoding (--temperature 0) gives 2 identical sequences" in err


def test_generate_rows_stop_at_eos_alone(capsys):
    """A row that samples an EOS id finishes (printed then, its later tokens discarded) while the
    others go on to --max-new-tokens."""
    args = argparse.Namespace(max_new_tokens=6, num_return_sequences=3, temperature=2.0, top_k=0, top_p=1.0, seed=3)
    tier = ReferenceTier(TINY, random_weights(TINY, seed=0, dtype=torch.bfloat16), dtype=torch.bfloat16)
    generate.generate_many(tier, [5, 6, 7], set(), generate.SequenceIds(), args, "cpu")
    free = sequences(capsys.readouterr().out)
    eos = free[1][2]  # row 1's third token becomes an EOS id
    generate.generate_many(tier, [5, 6, 7], {eos}, generate.SequenceIds(), args, "cpu")
    out, err = capsys.readouterr()
    stopped = sequences(out)
    for k, seq in free.items():
        cut = seq.index(eos) if eos in seq else len(seq)
        assert stopped[k] == seq[:cut]
    assert f"[1] 2 new tokens, stopped at EOS id {eos}" in err
    first = min(free, key=lambda k: free[k].index(eos) if eos in free[k] else 6)
    assert out.splitlines()[0].startswith(f"[{first}] ")  # printed as it finished: the first to stop first


def test_generate_n_above_max_batch_is_one_line(fake_tiers, capsys):
    status, out, err = run(capsys, "generate", *GEN, "--tier", "capped", "--temperature", "1", "-n", "3")
    assert status == 2 and out == ""
    assert "--num-return-sequences 3: tier 'capped' decodes at most 2 sequences per state; expected 1 to 2" in err
    assert run(capsys, "generate", *GEN, "--tier", "capped", "--temperature", "1", "-n", "0")[2].startswith(
        "error: --num-return-sequences 0: expected at least 1")


# ---- diff --batch -----------------------------------------------------------------------------
DIFF = ["--config", "tiny", "--device", "cpu", "--prompt-len", "5", "--decode-steps", "2"]


def test_diff_batch_against_rows_alone(fake_tiers, tmp_path, capsys):
    path = tmp_path / "d.json"
    status, out, err = run(capsys, "diff", *DIFF, "--tiers", "reference,onepos,capped", "--batch", "3",
                           "--json", str(path))
    assert status == 0, out
    rows = table_rows(out)
    assert rows[0] == ["row", "prompt", "reference", "onepos"]
    assert [(r[0], r[1]) for r in rows[1:]] == [("0", "5"), ("1", "8"), ("2", "11")]
    for r in rows[1:]:
        for cell in r[2:]:
            diff, agree, vs_fp32 = cell.split()
            assert agree == "3/3" and float(diff) < 0.5 and float(vs_fp32) < 0.1 and "!" not in cell
    assert "onepos: one position for the whole batch (per_row_positions False)" in out
    assert "skipped capped: --batch 3 is above its max_batch 2" in out
    assert "worst over the 3 rows of the batch" in out and "within tolerance" in out
    report = json.loads(path.read_text())
    assert report["batch"] == 3 and report["prompt_lens"] == [5, 8, 11] and "capped" in report["skipped"]
    ref, onepos = report["tiers"]["reference"], report["tiers"]["onepos"]
    assert [row["prompt_len"] for row in ref["rows"]] == [5, 8, 11]
    assert [row["prompt_len"] for row in onepos["rows"]] == [5, 5, 5]
    for row in ref["rows"] + onepos["rows"]:
        assert row["greedy_agree"] == row["calls"] == 3 and row["vs_alone_ok"]
        assert len(row["errors"]["layers.3"]) == 3  # prefill + 2 decode steps
    assert ref["ok"] and ref["batch_ok"] and onepos["ok"]


def test_diff_batch_catches_a_leaking_batch(fake_tiers, capsys, monkeypatch):
    """A tier whose batch rows see each other (here: row 0's logits added to every row's) is out of tolerance."""
    real = OnePositionTier._decode

    def leaky(self, token_ids, state, trace):
        logits = real(self, token_ids, state, trace)
        return logits + 5 * logits[:1] if logits.shape[0] > 1 else logits

    monkeypatch.setattr(OnePositionTier, "_decode", leaky)
    status, out, _ = run(capsys, "diff", *DIFF, "--tiers", "onepos", "--batch", "2")
    assert status == 1 and "OUT OF TOLERANCE: onepos" in out
    assert "!" in table_rows(out)[2][2]  # row 1 differs from row 1 alone


def test_near_tie_flip_by_hand():
    """A greedy flip counts as a near tie only where the alone run's two logits are within twice the
    batch-vs-alone difference; the table marks a row whose flips are all near ties '~', else '!'."""
    from compare.diff import format_batch_table, near_tie_flip

    alone = torch.tensor([[0.0, 1.00, 0.90]])
    assert not near_tie_flip(alone, alone, 0.0)  # the same token
    assert near_tie_flip(torch.tensor([[0.0, 0.95, 1.0]]), alone, 0.06)  # gap 0.10 <= 2 x 0.06
    assert not near_tie_flip(torch.tensor([[0.0, 0.95, 1.0]]), alone, 0.04)  # gap 0.10 > 2 x 0.04
    assert not near_tie_flip(torch.tensor([[0.0, 0.95, 1.0]]), alone, float("nan"))
    bounds = {"logits": 0.1}
    row = {"max_abs_logit_diff": 0.06, "vs_alone_ok": True, "worst": {"logits": 0.01}, "worst_vs_fp32": 0.01, "calls": 3}
    results = {"tier": {"bounds": bounds, "rows": [dict(row, greedy_agree=3, near_tie_flips=0),
                                                    dict(row, greedy_agree=2, near_tie_flips=1),
                                                    dict(row, greedy_agree=1, near_tie_flips=1)]}}
    cells = [r[2] for r in table_rows(format_batch_table([4, 5, 6], 2, results, {}, []))[1:]]
    assert cells[0].split()[1] == "3/3" and cells[1].split()[1] == "2/3~" and cells[2].split()[1] == "1/3!"


@pytest.mark.parametrize("argv, message", [
    (["--batch", "0"], "--batch 0: expected a batch size of at least 1"),
    (["--batch", "2", "--dump", "x"], "--batch does not write or read dumps"),
    (["--batch", "2000", "--prompt-len", "16"], "exceeds the model's 4096 positions"),
])
def test_diff_batch_bad_input_is_one_line(capsys, argv, message):
    status, out, err = run(capsys, "diff", *DIFF, "--tiers", "reference", *argv)
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and message in err
