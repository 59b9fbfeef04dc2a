"""Render a table (a header and rows of cells) as padded Markdown or as CSV.

Shared by the compare commands: cells are formatted by the caller, so one list of rows
gives the same table in every format.
"""

from __future__ import annotations

import csv
import io


def markdown(header: list[str], rows: list[list], right: set[int] = frozenset()) -> str:
    """A Markdown table padded to fixed width; columns whose index is in `right` are
    right-aligned (numbers)."""
    cells = [[str(c) for c in header]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(row):
        padded = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def csv_text(header: list[str], rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if c is None else c for c in row] for row in rows])
    return out.getvalue()


def fmt(value, digits: int = 1, missing: str = "n/a") -> str:
    """A number with `digits` decimals and thousands separators, or `missing`."""
    if value is None:
        return missing
    return f"{value:,.{digits}f}"
