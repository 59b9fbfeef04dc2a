"""Every ```python block of the walkthrough runs, lesson by lesson, so the docs cannot rot.
Blocks of one lesson share a namespace, in order, like a notebook, run from the repo root
(as the lessons tell a reader to)."""

import pathlib
import re

import pytest

LESSONS = sorted((pathlib.Path(__file__).parent.parent / "docs" / "walkthrough").glob("[0-9][0-9]_*.md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs(lesson, capsys, monkeypatch):
    monkeypatch.chdir(lesson.parents[2])
    blocks = BLOCK.findall(lesson.read_text())
    assert blocks, f"{lesson.name} has no python blocks"
    namespace = {"__name__": f"lesson_{lesson.stem}"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{lesson.name}[block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{lesson.name}, python block {i} failed: {type(e).__name__}: {e}") from e
    assert capsys.readouterr().out.strip(), "a lesson should print what it shows"
