"""An unreadable dump never touches a good corpus: one error line, the corpus byte-identical.

A corpus is built from a small multistream dump cut from the bundled snapshot (real pages);
then ``corpus build --only wikipedia`` is pointed at malformed dumps of every kind. Each must
fail with one ``error:`` line (a SourceError) and leave ``corpus.jsonl`` and the manifest as they
were. A readable dump that selects nothing may not replace the corpus with an empty one
either, unless ``--force``.
"""

from __future__ import annotations

import bz2
import json
import random
from pathlib import Path

import pytest

from causalkg.corpus import dump as d

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
TITLES = ["Maltrata bus crash", "Azerbaijan Airlines Flight 217", "1995 Chiapas earthquake",
          "1979 Machchhu dam failure", "West Coast Flight 720", "Aa River"]
# Invented concepts (made-up QIDs) whose sitelinks are the pages above.
CONCEPTS = "".join(json.dumps({"id": f"Q90000010{i}", "kind": "instance", "label": t, "aliases": [],
                               "seed_classes": [], "enwiki_title": t}) + "\n" for i, t in enumerate(TITLES))
HTML_ERROR = b"<!DOCTYPE html>\n<html><head><title>503 Service Unavailable</title></head><body>busy</body></html>\n"


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("dumps")
    chunks = {d.peek_header(c).title: c for _, c in d.SequentialReader(SNAPSHOT)}
    good = folder / "good-pages-articles-multistream.xml.bz2"
    good_index = folder / "good-pages-articles-multistream-index.txt.bz2"
    d.write_multistream(d.read_header(SNAPSHOT), [chunks[t] for t in TITLES], good, good_index, pages_per_stream=2)
    # the same pages cut differently: an index that belongs to another dump
    other = folder / "other-pages-articles-multistream.xml.bz2"
    other_index = folder / "other-pages-articles-multistream-index.txt.bz2"
    d.write_multistream(d.read_header(SNAPSHOT), [b"  <page>\n    <title>Padding page</title>\n    <ns>0</ns>\n"
                                                  b"    <id>1</id>\n  </page>\n", *[chunks[t] for t in TITLES]],
                        other, other_index, pages_per_stream=3)
    data = good.read_bytes()
    made = {
        "good": good, "good_index": good_index, "other_index": other_index,
        "random.xml.bz2": random.Random(17).randbytes(20000),
        "bz2-magic-then-random.xml.bz2": b"BZh9" + random.Random(18).randbytes(20000),
        "text.xml.bz2": b"This is not a dump, just a note someone saved under the dump's name.\n",
        "text.xml": b"This is not a dump either.\n",
        "empty.xml.bz2": b"",
        "html-error.xml.bz2": bz2.compress(HTML_ERROR),
        "html-error.xml": HTML_ERROR,
        "truncated.xml.bz2": data[: len(data) * 2 // 3],
        "bad-index.txt": b"this is not an index\n",
    }
    out = {}
    for name, value in made.items():
        if isinstance(value, Path):
            out[name] = value
        else:
            out[name] = folder / name
            out[name].write_bytes(value)
    return out


@pytest.fixture
def project(tmp_path, dumps, cli):
    """A project folder with a good 6-document corpus built from ``dumps['good']``."""
    (tmp_path / "data" / "wikidata").mkdir(parents=True)
    (tmp_path / "data" / "wikidata" / "concepts.jsonl").write_text(CONCEPTS, encoding="utf-8")
    r = cli("corpus", "build", "--only", "wikipedia", "--dump", dumps["good"], "--index", dumps["good_index"],
            "--select", "concepts", "--workers", "1", cwd=tmp_path)
    assert r.code == 0, r.err
    corpus = tmp_path / "data" / "corpus" / "corpus.jsonl"
    assert len(corpus.read_text(encoding="utf-8").splitlines()) == len(TITLES)
    return tmp_path


def snapshot_of(folder: Path) -> dict[str, bytes]:
    corpus = folder / "data" / "corpus"
    return {p.name: p.read_bytes() for p in sorted(corpus.iterdir()) if p.is_file()}


def one_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], err
    return errors[0]


@pytest.mark.parametrize("name, index, expected", [
    ("random.xml.bz2", "", "is not a bz2 file: it starts with binary data"),
    ("bz2-magic-then-random.xml.bz2", "", "is not a readable bz2 file"),
    ("text.xml.bz2", "", "is not a bz2 file: it starts with 'This is not a dump"),
    ("text.xml", "", "is not a MediaWiki XML dump: it starts with 'This is not a dump either."),
    ("empty.xml.bz2", "", "is empty, not a Wikipedia dump"),
    ("html-error.xml.bz2", "", "is not a MediaWiki XML dump: its decompressed text starts with '<!DOCTYPE html>"),
    ("html-error.xml", "", "is not a MediaWiki XML dump: it starts with '<!DOCTYPE html>"),
    ("truncated.xml.bz2", "", "is truncated"),
    ("truncated.xml.bz2", "good_index", "does not belong to the dump"),
    ("good", "other_index", "does not belong to the dump"),
    ("good", "bad-index.txt", "not a multistream index line"),
    ("random.xml.bz2", "good_index", "is not a bz2 file"),
])
def test_a_malformed_dump_leaves_the_corpus_byte_identical(cli, project, dumps, name, index, expected):
    before = snapshot_of(project)
    r = cli("corpus", "build", "--only", "wikipedia", "--dump", dumps[name], "--index",
            dumps[index] if index else "", "--select", "concepts", "--workers", "1", cwd=project)
    assert r.code == 1, (r.out, r.err)
    assert expected in one_error(r.err)
    assert snapshot_of(project) == before


def test_a_dump_that_selects_nothing_does_not_replace_the_corpus_without_force(cli, project, dumps):
    corpus = project / "data" / "corpus" / "corpus.jsonl"
    before = snapshot_of(project)
    # concepts whose titles are none of the dump's: a readable dump, an empty result
    concepts = project / "data" / "wikidata" / "concepts.jsonl"
    concepts.write_text(json.dumps({"id": "Q900000009", "kind": "instance", "label": "nothing", "aliases": [],
                                    "seed_classes": [], "enwiki_title": "No such page"}) + "\n", encoding="utf-8")
    args = ("corpus", "build", "--only", "wikipedia", "--dump", dumps["good"], "--index", dumps["good_index"],
            "--select", "concepts", "--workers", "1")
    r = cli(*args, cwd=project)
    assert r.code == 1
    assert one_error(r.err).startswith(f"error: refusing to replace {corpus} (")
    assert "--force" in r.err
    assert snapshot_of(project) == before
    r = cli(*args, "--force", cwd=project)
    assert r.code == 0, r.err
    assert corpus.read_bytes() == b""
