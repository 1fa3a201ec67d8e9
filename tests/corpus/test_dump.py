"""The dump reader (corpus/dump.py) on the bundled real multistream snapshot, the real gensim
table-markup excerpt, and damaged copies of them made in tmp folders."""

from __future__ import annotations

import bz2
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from causalkg.corpus import dump as d

REPO = Path(__file__).resolve().parents[2]
SNAP = REPO / "snapshots" / "enwiki"
DUMP = SNAP / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
INDEX = SNAP / "enwiki-snapshot-pages-articles-multistream-index.txt.bz2"
TABLES = REPO / "tests" / "fixtures" / "enwiki" / "enwiki-table-markup.xml.bz2"


@dataclass(frozen=True)
class KeepAll:
    """A page task keeping a fingerprint of every selected page (no conversion: fast)."""

    scan_all: bool = False
    fail_on: str | None = None

    def candidate(self, chunk: bytes, title: str) -> bool:
        return True

    def process(self, page: d.Page, wanted: bool) -> dict:
        if page.title == self.fail_on:
            raise RuntimeError("simulated converter crash")
        return {"id": page.page_id, "title": page.title, "rev": page.revision_id, "ts": page.timestamp,
                "ns": page.ns, "sha": hashlib.sha256((page.text or "").encode()).hexdigest(), "wanted": wanted}


def fetch(dump: Path, index: Path | None, titles: set[str], task=KeepAll(), workers: int = 1):
    """Pages for titles, through the index (or sequentially without one): (items, results)."""
    if index is not None:
        scan = d.scan_index(index, titles)
        at: dict[int, set[str]] = {}
        for t, e in scan.found.items():
            at.setdefault(e.offset, set()).add(t)
        offsets = scan.offsets if task.scan_all else sorted(at)
        units = [d.Unit(f"u{o:012d}", offsets=((o, frozenset(at.get(o, ()))),)) for o in offsets]
    else:
        chunks = list(d.SequentialReader(dump))
        units = [d.Unit("seq", chunks=tuple(chunks), titles=frozenset(titles))]
    results = list(d.run_units(dump, units, task, workers=workers))
    items = [v for r in results for _, v in r.items]
    return items, results


def all_chunks(path: Path) -> list[bytes]:
    return [c for _, c in d.SequentialReader(path)]


# --- the index -------------------------------------------------------------------------------


def test_index_lines_match_the_pages_in_their_streams():
    entries = list(d.iter_index(INDEX))
    assert len(entries) == 264
    assert (entries[0].page_id, entries[0].title) == (10, "AccessibleComputing")
    assert any(e.title == "Wikipedia:Adding Wikipedia articles to Nupedia" for e in entries)  # colons in a title
    by_offset: dict[int, list[d.IndexEntry]] = {}
    for e in entries:
        by_offset.setdefault(e.offset, []).append(e)
    assert [len(v) for v in by_offset.values()] == [100, 100, 64]
    for offset, group in by_offset.items():
        data, used = d.read_stream(DUMP, offset)
        pages, rest = d.cut_pages(data)
        assert rest == b""
        heads = [d.peek_header(p) for p in pages]
        assert [(h.page_id, h.title) for h in heads] == [(e.page_id, e.title) for e in group]
        assert used > 0


def test_index_titles_are_unescaped_and_bad_lines_name_path_and_line(tmp_path):
    # invented edge case: an escaped title, then a broken line
    idx = tmp_path / "index.txt"
    idx.write_text("597:1:AT&amp;T\n597:2:&quot;Weird Al&quot; Yankovic\n12:x:broken\n", encoding="utf-8")
    it = d.iter_index(idx)
    assert next(it).title == "AT&T"
    assert next(it).title == '"Weird Al" Yankovic'
    with pytest.raises(d.SourceError, match=r"index.txt:3: not a multistream index line"):
        next(it)


def test_scan_index_finds_wanted_titles_and_every_stream():
    scan = d.scan_index(INDEX, {"2004 Indian Ocean earthquake", "World_War_II", "no such page"})
    assert set(scan.found) == {"2004 Indian Ocean earthquake", "World War II"}  # underscores normalized
    assert len(scan.offsets) == 3 and scan.entries == 264
    spans = d.stream_spans(scan.offsets, DUMP.stat().st_size)
    assert sum(spans.values()) < DUMP.stat().st_size


# --- index lookup == sequential scan ---------------------------------------------------------

WANTED = {"Anarchism", "Apollo 11", "World War II", "Chernobyl disaster", "Charlie Hebdo shooting",
          "Sedan (nuclear test)"}


def test_index_lookup_equals_sequential_scan():
    by_index, _ = fetch(DUMP, INDEX, WANTED)
    by_scan, _ = fetch(DUMP, None, WANTED)
    assert {p["title"] for p in by_index} == WANTED
    assert by_index == by_scan  # same pages, same revisions, same text, same order
    ww2 = next(p for p in by_index if p["title"] == "World War II")
    assert ww2["id"] == 1000000049 and ww2["ts"] is None  # assigned ids, no timestamp (SOURCE.md)
    anarchism = next(p for p in by_index if p["title"] == "Anarchism")
    assert (anarchism["id"], anarchism["rev"], anarchism["ts"]) == (12, 716551092, "2016-04-22T10:19:33Z")


def test_only_the_wanted_pages_are_parsed():
    _, results = fetch(DUMP, INDEX, {"Anarchism"})
    assert len(results) == 1
    assert results[0].pages == 100 and results[0].parsed == 1


def test_redirects_are_reported_and_other_namespaces_skipped():
    items, results = fetch(DUMP, INDEX, {"AynRand", "Wikipedia:Adding Wikipedia articles to Nupedia", "Ayn Rand"})
    redirects = [r for res in results for r in res.redirects]
    skipped = [s for res in results for s in res.skipped]
    assert redirects == [("AynRand", "Ayn Rand")]
    assert skipped == [("Wikipedia:Adding Wikipedia articles to Nupedia", "namespace 4: not an article")]
    assert [p["title"] for p in items] == ["Ayn Rand"]


def test_worker_count_does_not_change_results():
    one, _ = fetch(DUMP, INDEX, set(), task=KeepAll(scan_all=True), workers=1)
    two, _ = fetch(DUMP, INDEX, set(), task=KeepAll(scan_all=True), workers=2)
    assert len(one) == 106 + 58  # every article: no redirects, no project page
    assert one == two


def test_page_cutter_is_independent_of_block_boundaries():
    data, _ = d.read_stream(DUMP, next(iter(d.iter_index(INDEX))).offset)
    whole, _ = d.cut_pages(data)
    cutter = d.PageCutter()
    pieces = []
    for i in range(0, len(data), 4097):  # blocks that split tags
        pieces.extend(cutter.feed(data[i:i + 4097]))
    assert pieces == whole and cutter.close() == b""


# --- plain dumps -----------------------------------------------------------------------------


def test_sequential_reader_reads_plain_bz2_and_uncompressed_xml(tmp_path):
    pages = all_chunks(TABLES)
    titles = [d.peek_header(p).title for p in pages]
    assert titles == ["Constructive vote of no confidence", "List of Prison Break characters",
                      "Academy Award for Best Production Design", "Economy of Estonia", "Brahui language"]
    xml = tmp_path / "tables.xml"
    xml.write_bytes(bz2.decompress(TABLES.read_bytes()))
    assert all_chunks(xml) == pages
    page = d.parse_page(pages[3], (3, 0))
    assert (page.page_id, page.revision_id, page.timestamp) == (9391, 815453970, "2017-12-14T22:38:36Z")


def test_read_header_returns_siteinfo():
    head = d.read_header(DUMP)
    assert head.startswith(b"<mediawiki") and head.rstrip().endswith(b"</siteinfo>")


# --- damaged input ---------------------------------------------------------------------------


def _copy(tmp_path: Path) -> tuple[Path, list[int]]:
    dump = tmp_path / "copy-multistream.xml.bz2"
    dump.write_bytes(DUMP.read_bytes())
    return dump, d.scan_index(INDEX, ()).offsets


def test_corrupt_stream_is_reported_with_its_offset_and_the_rest_is_read(tmp_path):
    dump, offsets = _copy(tmp_path)
    raw = bytearray(dump.read_bytes())
    mid = (offsets[1] + offsets[2]) // 2
    raw[mid:mid + 64] = b"\x00" * 64
    dump.write_bytes(bytes(raw))
    items, results = fetch(dump, INDEX, {"Anarchism", "Apollo 11", "World War II"})
    failures = [f for r in results for f in r.failures]
    assert [p["title"] for p in items] == ["Anarchism", "World War II"]  # streams 1 and 3
    assert failures[0].kind == "stream" and failures[0].offset == offsets[1]
    assert "corrupt bz2 data" in failures[0].message
    assert (failures[1].kind, failures[1].title) == ("missing", "Apollo 11")
    # read sequentially, the reader skips to the next stream's signature and goes on
    reader = d.SequentialReader(dump)
    titles = [d.peek_header(c).title for _, c in reader]
    assert "Anarchism" in titles and "World War II" in titles and "Apollo 11" not in titles
    assert reader.failures and reader.failures[0].kind == "stream"
    assert "skipped to the next stream" in reader.failures[0].message


def test_index_offset_pointing_at_garbage(tmp_path):
    dump, offsets = _copy(tmp_path)
    bad_index = tmp_path / "index.txt"
    bad_index.write_text(f"{offsets[0] + 7}:12:Anarchism\n", encoding="utf-8")
    items, results = fetch(dump, bad_index, {"Anarchism"})
    failures = [f for r in results for f in r.failures]
    assert items == []
    assert failures[0].describe() == (f"stream: stream at byte {offsets[0] + 7}: no bz2 stream starts here "
                                      "(Invalid data stream)")


def test_index_from_another_dump_reports_the_missing_title(tmp_path):
    dump, offsets = _copy(tmp_path)
    idx = tmp_path / "index.txt"
    idx.write_text(f"{offsets[0]}:771:American Revolutionary War\n", encoding="utf-8")  # it is in stream 3
    items, results = fetch(dump, idx, {"American Revolutionary War"})
    f = results[0].failures[0]
    assert items == [] and f.kind == "missing" and f.title == "American Revolutionary War"


def test_truncated_dump(tmp_path):
    dump, offsets = _copy(tmp_path)
    raw = dump.read_bytes()
    dump.write_bytes(raw[: offsets[2] + 5000])
    with pytest.raises(d.StreamError, match="truncated"):
        d.read_stream(dump, offsets[2])
    reader = d.SequentialReader(dump)
    n = sum(1 for _ in reader)
    assert n >= 200  # the first two page streams are whole
    assert any(f.kind == "stream" and "truncated" in f.message for f in reader.failures)


def _dump_with_broken_page(tmp_path: Path) -> tuple[Path, Path]:
    """A multistream dump of 6 real pages in streams of 2, the 3rd page's XML broken
    (invented damage: ``</title>`` misspelt)."""
    chunks = [c for c in all_chunks(TABLES)] + [all_chunks(DUMP)[1]]  # + Anarchism
    chunks[2] = chunks[2].replace(b"</title>", b"</titel>", 1)
    dump, index = tmp_path / "broken-multistream.xml.bz2", tmp_path / "broken-index.txt.bz2"
    d.write_multistream(d.read_header(DUMP), chunks, dump, index, pages_per_stream=2)
    return dump, index


def test_malformed_page_xml_costs_that_page_only(tmp_path):
    dump, index = _dump_with_broken_page(tmp_path)
    for idx in (index, None):
        items, results = fetch(dump, idx, set(), task=KeepAll(scan_all=True))
        failures = [f for r in results for f in r.failures if f.kind == "xml"]
        assert len(failures) == 1 and "malformed page XML" in failures[0].message
        assert [p["title"] for p in items] == ["Constructive vote of no confidence", "List of Prison Break characters",
                                               "Economy of Estonia", "Brahui language", "Anarchism"]


def test_a_page_task_that_raises_is_reported_for_that_page(tmp_path):
    items, results = fetch(DUMP, INDEX, WANTED, task=KeepAll(fail_on="World War II"), workers=2)
    failures = [f for r in results for f in r.failures]
    assert [(f.kind, f.title) for f in failures] == [("page", "World War II")]
    assert "RuntimeError: simulated converter crash" in failures[0].message
    assert {p["title"] for p in items} == WANTED - {"World War II"}


def test_missing_files_raise_source_error(tmp_path):
    with pytest.raises(d.SourceError, match="dump index not found"):
        list(d.iter_index(tmp_path / "nope.txt.bz2"))
    with pytest.raises(d.SourceError, match="dump not found"):
        d.SequentialReader(tmp_path / "nope.xml.bz2")


def test_normalize_title():
    assert d.normalize_title("  world_war  II ") == "World war II"
    assert d.normalize_title("eBay") == "EBay"  # enwiki is first-letter case
