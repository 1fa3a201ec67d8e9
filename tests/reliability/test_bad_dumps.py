"""An unreadable dump never touches a good corpus: one error line, the corpus byte-identical.

A corpus is built from a small multistream dump cut from the bundled snapshot (real pages);
then ``corpus build --only wikipedia`` is pointed at malformed dumps of every kind. Each must
fail with one ``error:`` line (a SourceError) and leave ``corpus.jsonl`` and the manifest as they
were. A readable dump that selects nothing may not replace the corpus with an empty one
either, unless ``--allow-shrink`` (``--force`` only redoes the work). A dump with a damaged
stream loses documents: the build says how many and where and fails unless ``--lenient``, and
even then does not replace a larger corpus unless ``--allow-shrink``.
"""

from __future__ import annotations

import bz2
import json
import random
import re
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
    assert "--allow-shrink" in r.err
    assert snapshot_of(project) == before
    r = cli(*args, "--force", cwd=project)  # redo the work: not "accept an empty output"
    assert r.code == 1 and one_error(r.err).startswith(f"error: refusing to replace {corpus} (")
    assert snapshot_of(project) == before
    r = cli(*args, "--allow-shrink", cwd=project)
    assert r.code == 0, r.err
    assert corpus.read_bytes() == b""


@pytest.fixture(scope="module")
def damaged(dumps, tmp_path_factory) -> tuple[Path, int]:
    """The good dump with 64 bytes of its second stream (pages 3 and 4) overwritten: a readable
    dump whose index is right, and one corrupt bz2 stream. Returns the dump and that stream's offset."""
    raw = bytearray(dumps["good"].read_bytes())
    offset = d.scan_index(dumps["good_index"], ()).offsets[1]
    raw[offset + 100: offset + 164] = b"\xff" * 64
    path = tmp_path_factory.mktemp("damaged") / "damaged-pages-articles-multistream.xml.bz2"
    path.write_bytes(bytes(raw))
    return path, offset


def test_a_damaged_stream_never_shrinks_the_corpus_unless_asked(cli, project, dumps, damaged):
    dump, offset = damaged
    corpus = project / "data" / "corpus" / "corpus.jsonl"
    before = snapshot_of(project)
    args = ("corpus", "build", "--only", "wikipedia", "--dump", dump, "--index", dumps["good_index"],
            "--select", "concepts", "--workers", "1")
    lost = f"1 damaged dump stream at byte {offset}; 2 pages lost: '{TITLES[3]}', '{TITLES[2]}'"  # sorted

    for extra in ((), ("--force",)):  # --force redoes the work, it does not accept the loss
        r = cli(*args, *extra, cwd=project)
        assert r.code == 1, r.out
        assert one_error(r.err) == (f"error: the dump {dump} lost documents: {lost}; {corpus} is left as it is "
                                    "(rerun with --lenient to build the corpus without them (the pages read are "
                                    "kept: it resumes), or repair or download the dump again)")
        assert snapshot_of(project) == before

    for extra in ((), ("--force",)):  # lenient: the loss is accepted, not a smaller corpus over a larger one
        r = cli(*args, "--lenient", *extra, cwd=project)
        assert r.code == 1, r.out
        assert one_error(r.err).startswith(f"error: refusing to replace {corpus} (6 documents) with 4: the dump "
                                           f"lost documents ({lost}); the existing corpus is kept")
        assert "--allow-shrink" in r.err
        assert snapshot_of(project) == before

    r = cli(*args, "--lenient", "--allow-shrink", cwd=project)
    assert r.code == 0, r.err
    assert f"note: documents lost to a damaged dump (--lenient): {lost}" in r.out
    titles = [json.loads(x)["title"] for x in corpus.read_text(encoding="utf-8").splitlines()]
    assert titles == [t for t in TITLES if t not in TITLES[2:4]]


def test_a_first_corpus_from_a_damaged_dump_needs_only_lenient(cli, tmp_path, dumps, damaged):
    dump, offset = damaged
    (tmp_path / "data" / "wikidata").mkdir(parents=True)
    (tmp_path / "data" / "wikidata" / "concepts.jsonl").write_text(CONCEPTS, encoding="utf-8")
    args = ("corpus", "build", "--only", "wikipedia", "--dump", dump, "--index", dumps["good_index"],
            "--select", "concepts", "--workers", "1")
    r = cli(*args, cwd=tmp_path)
    assert r.code == 1 and "lost documents: 1 damaged dump stream at byte" in one_error(r.err)
    assert not (tmp_path / "data" / "corpus" / "corpus.jsonl").exists()
    r = cli(*args, "--lenient", cwd=tmp_path)
    assert r.code == 0, r.err
    assert re.search(r"resumed: (\d+) of \1 units were done by an earlier run", r.out)  # the pages read are kept
    assert len((tmp_path / "data" / "corpus" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()) == 4
