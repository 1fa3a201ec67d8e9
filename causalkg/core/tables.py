"""Rendering result tables as Markdown, CSV, JSON or aligned text, for every command that
prints rows (``eval recall``, ``kg query``, ``link query``, benchmark tables)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Mapping, Sequence

FORMATS = ("md", "csv", "json", "text")


def _cell(value: Any, floatfmt: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return format(value, floatfmt)
    return str(value)


def render_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    fmt: str = "md",
    *,
    floatfmt: str = ".4f",
    headers: Mapping[str, str] | None = None,
) -> str:
    """Render ``rows`` (dicts) with ``columns`` (default: the first row's keys) in ``fmt``.

    ``json`` keeps values as they are (no rounding); the other formats format floats with
    ``floatfmt``. ``headers`` renames columns for display.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown table format {fmt!r}; choose one of {', '.join(FORMATS)}")
    cols = list(columns) if columns is not None else (list(rows[0].keys()) if rows else [])
    names = [(headers or {}).get(c, c) for c in cols]
    if fmt == "json":
        return json.dumps([{c: r.get(c) for c in cols} for r in rows], ensure_ascii=False, indent=2)
    table = [[_cell(r.get(c), floatfmt) for c in cols] for r in rows]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(names)
        w.writerows(table)
        return buf.getvalue().rstrip("\n")
    if fmt == "md":
        esc = [[c.replace("|", "\\|").replace("\n", " ") for c in row] for row in table]
        out = ["| " + " | ".join(names) + " |", "|" + "|".join("---" for _ in names) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in esc]
        return "\n".join(out)
    widths = [max([len(n)] + [len(row[i]) for row in table]) for i, n in enumerate(names)]
    out = ["  ".join(n.ljust(w) for n, w in zip(names, widths)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    return "\n".join(out)
