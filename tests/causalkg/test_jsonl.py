from __future__ import annotations

import json

import pytest

from causalkg.core.contracts import Concept, Extraction, FlatPair
from causalkg.core.errors import SchemaError
from causalkg.core.jsonl import ReadStats, atomic_write, read_jsonl, write_jsonl


def test_round_trip_of_models_is_equal(tmp_path):
    concepts = [
        Concept(id="Q7944", kind="class", label="earthquake", aliases=["quake", "tremor"], seed_classes=["Q7944"]),
        Concept(id="Q1020", kind="instance", label="Malawi", enwiki_title="Malawi"),
    ]
    path = tmp_path / "concepts.jsonl"
    assert write_jsonl(path, concepts) == 2
    assert list(read_jsonl(path, Concept)) == concepts


def test_gz_round_trip_is_deterministic(tmp_path):
    rows = [{"a": i, "text": "Ünïcödé \"quoted\"\nnewline"} for i in range(3)]
    p1, p2 = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    write_jsonl(p1, rows)
    write_jsonl(p2, rows)
    assert p1.read_bytes() == p2.read_bytes()
    assert list(read_jsonl(p1)) == rows


def test_bad_line_names_path_and_line(tmp_path):
    path = tmp_path / "pairs.jsonl"
    good = {"cause": {"label": "war", "id": ["Q198"]}, "effect": {"label": "famine", "id": ["Q168247"]}}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"cause": {"label": "x", "id": ["not-a-qid"]}}) + "\n")
    with pytest.raises(SchemaError) as exc:
        list(read_jsonl(path, FlatPair))
    msg = str(exc.value)
    assert msg.startswith(f"{path}:2: ")
    assert "cause.id.0" in msg and "effect: Field required" in msg


def test_invalid_json_and_lenient_mode_counts_skips(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "1", "text": "ok"}\n{not json}\n\n{"id": "2", "text": "ok"}\n')
    with pytest.raises(SchemaError, match=r"x.jsonl:2: not valid JSON"):
        list(read_jsonl(path))
    stats = ReadStats()
    rows = list(read_jsonl(path, lenient=True, stats=stats))
    assert [r["id"] for r in rows] == ["1", "2"]
    assert stats.skipped == 1 and stats.records == 2 and stats.lines == 4
    assert "skipped" in stats.summary()


def test_schema_version_of_another_major_is_refused(tmp_path):
    path = tmp_path / "e.jsonl"
    rec = {
        "schema_version": "2", "doc_id": 5, "sentence": {"text": "a", "start": 0, "end": 1},
        "cause": {"text": "a", "start": 0, "end": 1}, "effect": {"text": "a", "start": 0, "end": 1},
        "score": 1.0, "extractor": "patterns",
    }
    path.write_text(json.dumps(rec) + "\n")
    with pytest.raises(SchemaError, match="schema_version '2' is not supported"):
        list(read_jsonl(path, Extraction))
    rec["schema_version"] = "1"
    path.write_text(json.dumps(rec) + "\n")
    (e,) = read_jsonl(path, Extraction)
    assert e.doc_id == "5"  # integer page ids are normalised to strings


def test_atomic_write_leaves_no_partial_file_on_error(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as fh:
            fh.write("new partial")
            raise RuntimeError("killed")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_extra_fields_ride_along(tmp_path):
    path = tmp_path / "p.jsonl"
    rec = {"cause": {"label": "war", "id": ["Q198"]}, "effect": {"label": "famine", "id": ["Q168247"]},
           "support": {"sentences": 3}}
    write_jsonl(path, [FlatPair.model_validate(rec)])
    assert json.loads(path.read_text()) == rec


def test_atomic_write_follows_the_umask(tmp_path):
    import os

    from causalkg.core.jsonl import _UMASK

    target = tmp_path / "x.jsonl"
    write_jsonl(target, [{"a": 1}])
    assert (target.stat().st_mode & 0o777) == (0o666 & ~_UMASK)
    assert os.access(target, os.R_OK)


def test_reader_accepts_nan_and_reports_bad_utf8(tmp_path):
    import math

    path = tmp_path / "n.jsonl"
    path.write_bytes(b'{"score": NaN}\n{"text": "caf\\u00e9"}\n')
    rows = list(read_jsonl(path))
    assert math.isnan(rows[0]["score"]) and rows[1]["text"] == "café"
    path.write_bytes(b'{"text": "ok"}\n{"text": "\xff\xfe"}\n')
    with pytest.raises(SchemaError, match=r"n.jsonl:2: not valid JSON: not UTF-8"):
        list(read_jsonl(path))


@pytest.mark.parametrize("name", ["lines.jsonl", "lines.jsonl.gz"])
def test_line_spans_cut_a_file_into_runs_of_lines_read_back_as_the_whole(tmp_path, name):
    """``line_spans`` cuts a file into runs of whole lines (blank lines and a last line without
    a newline included); reading every span gives the whole file's records and line numbers,
    and a bad line in a span is named by its line in the file."""
    import gzip

    from causalkg.core.jsonl import LineSpan, iter_json_lines, line_spans

    text = '{"a": 1}\n\n{"b": "é"}\n{"c": [1, 2]}\nnot json\n{"d": null}'
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    whole = list(iter_json_lines(path, lenient=True))
    assert [n for n, _ in whole] == [1, 3, 4, 6]
    for size in (1, 2, 4, 6, 10):
        spans = list(line_spans(path, size))
        assert len(spans) == -(-6 // size) and spans[0] == LineSpan(1, 0, spans[0].end)
        assert all(a.end == b.start and b.line == a.line + size for a, b in zip(spans, spans[1:]))
        assert spans[-1].end == len(text.encode())
        assert [r for s in spans for r in iter_json_lines(path, lenient=True, span=s)] == whole, size
    five = next(s for s in line_spans(path, 1) if s.line == 5)
    with pytest.raises(SchemaError, match=r"lines\.jsonl(\.gz)?:5: not valid JSON"):
        list(iter_json_lines(path, span=five))
    with pytest.raises(ValueError, match="at least 1"):
        list(line_spans(path, 0))
