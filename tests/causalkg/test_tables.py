"""causalkg.core.tables: one table, four formats."""

from __future__ import annotations

import csv
import io
import json

import pytest

from causalkg.core.tables import FORMATS, render_table

ROWS = [{"kg": "ours", "recall": 0.123456, "n": 85, "note": "a|b"},
        {"kg": "causenet", "recall": None, "n": 12, "note": "two\nlines"}]


def test_markdown_escapes_pipes_and_newlines():
    assert render_table(ROWS, ["kg", "recall", "note"], "md") == (
        "| kg | recall | note |\n"
        "|---|---|---|\n"
        "| ours | 0.1235 | a\\|b |\n"
        "| causenet |  | two lines |")


def test_csv_reads_back():
    text = render_table(ROWS, fmt="csv", floatfmt=".2f")
    assert list(csv.reader(io.StringIO(text))) == [
        ["kg", "recall", "n", "note"], ["ours", "0.12", "85", "a|b"], ["causenet", "", "12", "two\nlines"]]


def test_json_keeps_values_unrounded():
    assert json.loads(render_table(ROWS, ["kg", "recall"], "json")) == [
        {"kg": "ours", "recall": 0.123456}, {"kg": "causenet", "recall": None}]


def test_text_aligns_columns_and_renames_headers():
    out = render_table(ROWS, ["kg", "n"], "text", headers={"n": "edges"})
    assert out.splitlines() == ["kg        edges", "ours      85", "causenet  12"]


def test_empty_and_unknown():
    assert render_table([], fmt="md").count("\n") == 1  # no rows, no columns: an empty table, not an error
    assert render_table([], ["a", "b"], "csv") == "a,b"
    assert set(FORMATS) == {"md", "csv", "json", "text"}
    with pytest.raises(ValueError, match="unknown table format 'html'"):
        render_table(ROWS, fmt="html")
