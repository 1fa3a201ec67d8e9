"""Input that is not UTF-8 text, or holds a lone surrogate, gives ``path:line`` (and with
``--lenient`` is skipped and counted) in ``kg extract``, as in every JSONL reader."""

from __future__ import annotations

import json

import pytest

from causalkg.core.errors import SchemaError
from causalkg.core.jsonl import ReadStats, read_jsonl

GOOD = ['{"id": "a", "text": "Heavy rain caused a flood in the valley."}',
        '{"id": "d", "text": "The earthquake caused a tsunami."}']
BAD_UTF8 = b'{"id": "b", "text": "A bad \xff byte caused trouble."}'
SURROGATE = b'{"id": "c", "text": "A lone \\ud800 surrogate caused an error."}'


def write(path, bad: bytes) -> None:
    path.write_bytes(b"\n".join([GOOD[0].encode(), bad, GOOD[1].encode()]) + b"\n")


@pytest.mark.parametrize("bad, problem", [
    (BAD_UTF8, "not valid JSON: not UTF-8 (byte 28)"),
    (SURROGATE, "not valid JSON: a lone surrogate escape (\\ud800-\\udfff) in a string: not valid Unicode"),
])
def test_kg_extract_names_the_line_and_lenient_skips_it(cli, in_tmp, bad, problem):
    write(in_tmp / "in.jsonl", bad)
    r = cli("kg", "extract", "--extractor", "patterns", "--input", "in.jsonl", "--out", "out.jsonl",
            "--set", "extract.gate.kind=cues")
    assert r.code == 1
    assert r.err.strip().splitlines() == [f"error: in.jsonl:2: {problem}"]
    assert not (in_tmp / "out.jsonl").exists()

    r = cli("kg", "extract", "--extractor", "patterns", "--input", "in.jsonl", "--out", "out.jsonl", "--lenient",
            "--set", "extract.gate.kind=cues")
    assert r.code == 0, r.err
    assert "skipped 1 invalid input lines (--lenient)" in r.out
    docs = {json.loads(x)["doc_id"] for x in (in_tmp / "out.jsonl").read_text(encoding="utf-8").splitlines()}
    assert docs == {"a", "d"}
    manifest = json.loads((in_tmp / "out.manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["invalid_lines_skipped"] == 1
    assert f"in.jsonl:2: {problem}" in json.dumps(manifest, ensure_ascii=False).replace("\\\\", "\\")


def test_every_reader_refuses_a_lone_surrogate(tmp_path):
    path = tmp_path / "x.jsonl"
    write(path, SURROGATE)
    with pytest.raises(SchemaError, match=r"x.jsonl:2: not valid JSON: a lone surrogate"):
        list(read_jsonl(path))
    stats = ReadStats()
    assert [r["id"] for r in read_jsonl(path, lenient=True, stats=stats)] == ["a", "d"]
    assert stats.skipped == 1
    # an escaped surrogate pair is a real character and stays fine
    path.write_text('{"id": "e", "text": "\\ud83d\\ude00"}\n', encoding="utf-8")
    assert [r["text"] for r in read_jsonl(path)] == ["\U0001F600"]
