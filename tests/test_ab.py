"""`python -m compare ab` on the CPU (the reference tier at the tiny config): variant specs, their
errors, and a whole run's table and JSON."""

from __future__ import annotations

import json

import pytest

from compare.ab import parse_value, parse_variant
from compare.__main__ import main
from compare.common import UsageError


def test_variant_specs():
    allowed = ("grid", "schedule", "cuda_graph")
    assert parse_variant("base", allowed) == ("base", {})
    assert parse_variant("g:grid=97,schedule=register", allowed) == ("g", {"grid": 97, "schedule": "register"})
    assert parse_variant("e:cuda_graph=false", allowed) == ("e", {"cuda_graph": False})
    assert parse_value("0x10") == 16 and parse_value("TRUE") is True and parse_value("ring") == "ring"
    for bad, msg in ((":grid=1", "name before ':' is empty"), ("a:grid", "'grid' is not attr=value"),
                     ("a:grid=", "'grid=' is not attr=value"),
                     ("a:flags=1", "'flags' is not a variant attribute of this tier; expected one of grid, schedule")):
        with pytest.raises(UsageError, match=msg):
            parse_variant(bad, allowed)
    with pytest.raises(UsageError, match=r"this tier has no variants"):
        parse_variant("a:x=1", ())


def run(capsys, *argv):
    status = main(["ab", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_unknown_attribute_is_one_line(capsys):
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "a", "b:grid=2")
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [
        "error: variant 'b:grid=2': 'grid' is not a variant attribute of this tier; expected one of "
        "(none: this tier has no variants)"]


def test_a_whole_run(capsys, tmp_path):
    path = tmp_path / "ab.json"
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--rounds", "1", "--reps", "1", "--tg", "2",
                           "--pp", "3", "a", "b", "--json", str(path))
    assert status == 0, err
    assert "round 1 a" in out and "round 1 b" in out
    table = [line for line in out.splitlines() if line.startswith("| b")]
    assert len(table) == 1 and table[0].rstrip(" |").endswith("same")
    doc = json.loads(path.read_text())
    assert doc["tier"] == "reference" and doc["rows"] == ["tg2", "pp3"]
    assert doc["results"]["b"]["same_bits"] and len(doc["results"]["a"]["tg2"]) == 1
    assert doc["results"]["a"]["median"]["tg2"] > 0


def test_tiers_flag_is_refused(capsys):
    status, _, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tiers", "reference", "a")
    assert status == 2 and "use --tier NAME" in err
