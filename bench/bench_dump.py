"""Dump benchmark: our reader + converter against the peers on the same dump, in the same call.

Input: the bundled enwiki snapshot (264 real pages: 164 articles, 100 redirects), enlarged by
repeating its real pages with " (copy k)" titles and new page ids, written as a multistream dump
with its index into a temporary folder (never into the repository). The output says so.

1. Reader + converter, every article of the enlarged dump, the same number of worker processes:
   - causalkg through the index (``corpus.dump.run_units`` + ``corpus.wikitext.convert_wikitext``:
     text, sections with spans, infobox, categories, headings, timelines), twice: with the units
     ``build_documents`` makes for a dump of fewer than 64 streams, as this one (each stream's
     pages in 4 slices, so each stream is decompressed 4 times), and with one unit per stream,
     as for a full dump (thousands of streams);
   - causalkg reading sequentially (no index: one process decompresses, the pool converts);
   - plain mwparserfromhell ``parse(text).strip_code()`` on our reader (the naive converter);
   - WikiExtractor (pip ``wikiextractor``, AGPL: run as a separate process, never imported),
     ``--json --processes N``: plain text only.
   MB/s is over the uncompressed page XML (the same bytes for every row); CPU seconds (all
   processes of a row) are given too, since wall-clock time on a shared machine depends on its load.
2. Fetching 1% (and 0.1%) of the titles through the index against a sequential scan of the same
   dump that stops when it has found them all, and against a full sequential scan (reading and
   parsing only, no conversion). With 100 pages per stream, 1% of random titles touch about
   1 - 0.99**100 = 63% of the streams, so the index saves less there than for a handful of titles.

Run: ``python -m bench dump`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import os
import random
import re
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import ThroughputTable, timed
from causalkg.corpus import dump as d
from causalkg.corpus.wikitext import convert_wikitext, strip_code_text

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
COPIES_CONVERT = 2  # the converters' input: the snapshot's pages twice
COPIES_FETCH = 10  # the fetch experiment's input: ten times (more streams)


@dataclass(frozen=True)
class ConvertAll:
    """Every article through a converter; keeps only sizes (so the comparison is the work)."""

    how: str  # "causalkg" | "strip_code"
    scan_all: bool = True

    def candidate(self, chunk: bytes, title: str) -> bool:
        return True

    def process(self, page: d.Page, wanted: bool) -> dict:
        text = page.text or ""
        if self.how == "causalkg":
            out = convert_wikitext(text, title=page.title)["text"]
        else:
            out = strip_code_text(text)
        return {"chars": len(out)}


@dataclass(frozen=True)
class Locate:
    """Keeps the title of each wanted page (reading and parsing only)."""

    scan_all: bool = False

    def candidate(self, chunk: bytes, title: str) -> bool:
        return False

    def process(self, page: d.Page, wanted: bool) -> dict:
        return {"title": page.title}


def _copy_page(chunk: bytes, k: int) -> bytes:
    if k == 0:
        return chunk
    suffix = f" (copy {k})".encode()
    chunk = re.sub(rb"<title>(.*?)</title>", lambda m: b"<title>" + m.group(1) + suffix + b"</title>", chunk, count=1)
    chunk = re.sub(rb"<id>(\d+)</id>", lambda m: b"<id>" + str(int(m.group(1)) + k * 10**10).encode() + b"</id>",
                   chunk, count=1)
    return re.sub(rb'<redirect title="([^"]*)"', lambda m: b'<redirect title="' + m.group(1) + suffix + b'"', chunk)


def enlarge(copies: int, folder: Path) -> tuple[Path, Path, int]:
    """The snapshot's pages ``copies`` times as a multistream dump + index; returns the paths
    and the uncompressed size of the page XML."""
    header = d.read_header(SNAPSHOT)
    pages = [c for _, c in d.SequentialReader(SNAPSHOT)]
    dump = folder / f"enwiki-x{copies}-pages-articles-multistream.xml.bz2"
    index = folder / f"enwiki-x{copies}-pages-articles-multistream-index.txt.bz2"
    out = [_copy_page(p, k) for k in range(copies) for p in pages]
    d.write_multistream(header, out, dump, index)
    return dump, index, sum(len(p) for p in out)


def _articles(index: Path, dump: Path) -> tuple[int, int]:
    """(articles, streams) of a dump: namespace 0, not redirects."""
    n = 0
    offsets = d.scan_index(index, ()).offsets
    for o in offsets:
        data, _ = d.read_stream(dump, o)
        n += sum(1 for c in d.cut_pages(data)[0] if (h := d.peek_header(c)).ns == 0 and h.redirect is None)
    return n, len(offsets)


def _stream_units(index: Path, slices: int = 4) -> list[d.Unit]:
    # slices=4: as build_documents does on a dump of few streams: each stream's pages in slices,
    # so that the two workers share the big streams; slices=1: as on a dump of 64 streams or more
    return [d.Unit(f"u{o}-{k}", offsets=((o, frozenset()),), part=(k, slices))
            for o in d.scan_index(index, ()).offsets for k in range(slices)]


def _sequential_units(dump: Path, batch: int = 32):
    buf: list[tuple[int, bytes]] = []
    for seq, chunk in d.SequentialReader(dump):
        h = d.peek_header(chunk)
        if h.ns == 0 and h.redirect is None:
            buf.append((seq, chunk))
        if len(buf) >= batch:
            yield d.Unit(f"s{buf[0][0]}", chunks=tuple(buf))
            buf = []
    if buf:
        yield d.Unit(f"s{buf[0][0]}", chunks=tuple(buf))


def _cpu() -> float:
    """CPU seconds of this process and its finished children (worker pools, subprocesses):
    on a shared machine, a load-independent measure of the work done."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _run(dump: Path, units, task, workers: int) -> tuple[int, float, float]:
    c0 = _cpu()
    with timed() as t:
        n = sum(len(r.items) for r in d.run_units(dump, units, task, workers=workers))
    return n, t.seconds, _cpu() - c0


def _wikiextractor(dump: Path, workers: int, folder: Path) -> tuple[int, float, float, str]:
    out = folder / "wikiextractor-out"
    cmd = [sys.executable, "-m", "wikiextractor.WikiExtractor", str(dump), "-o", str(out), "--json", "-q",
           "--processes", str(workers)]
    c0 = _cpu()
    with timed() as t:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    cpu = _cpu() - c0
    if proc.returncode != 0:
        return 0, t.seconds, cpu, f"failed: {proc.stderr.strip()[-200:]}"
    docs = sum(1 for f in out.rglob("wiki_*") for _ in open(f, encoding="utf-8"))
    return docs, t.seconds, cpu, "plain text only"


def main() -> None:
    workers = d.default_workers(int(os.environ.get("CAUSALKG_BENCH_WORKERS", "0")))
    with tempfile.TemporaryDirectory(prefix="causalkg-bench-dump-") as tmp:
        folder = Path(tmp)
        dump, index, xml_bytes = enlarge(COPIES_CONVERT, folder)
        articles, streams = _articles(index, dump)
        mb = xml_bytes / 1e6
        print(f"input: the bundled snapshot's 264 real pages repeated {COPIES_CONVERT} times (titles suffixed "
              f"' (copy k)'), {articles} articles, {streams} streams, {mb:.1f} MB of page XML "
              f"({dump.stat().st_size / 1e6:.1f} MB bz2), in a temporary folder; {workers} worker processes; "
              f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
        table = ThroughputTable(f"reader + converter, all {articles} articles, {workers} workers", unit="pages")

        def row(name: str, n: int, s: float, cpu: float, baseline: bool = False) -> None:
            table.add(name, n, s, baseline=baseline, **{"MB/s": mb / s if s else 0.0, "CPU s": cpu,
                                                       "MB per CPU s": mb / cpu if cpu else 0.0})

        row("causalkg, index, 4 slices per stream (full document fields)",
            *_run(dump, _stream_units(index), ConvertAll("causalkg"), workers))
        row("causalkg, index, one unit per stream", *_run(dump, _stream_units(index, 1), ConvertAll("causalkg"), workers))
        row("causalkg, sequential (no index)", *_run(dump, _sequential_units(dump), ConvertAll("causalkg"), workers))
        row("mwparserfromhell strip_code(), our reader",
            *_run(dump, _stream_units(index), ConvertAll("strip_code"), workers))
        n, s, cpu, note = _wikiextractor(dump, workers, folder)
        row(f"WikiExtractor ({note})", n, s, cpu, baseline=True)
        table.print()
        print("CPU s: user + system seconds of all processes of the row (a measure of the work that the load of a "
              "shared machine does not distort; wall-clock seconds and ratios do depend on it)\n")

        big, big_index, big_bytes = enlarge(COPIES_FETCH, folder)
        titles = [e.title for e in d.iter_index(big_index)]
        n_streams = len(d.scan_index(big_index, ()).offsets)
        print(f"fetch input: the snapshot's pages repeated {COPIES_FETCH} times: {len(titles)} pages, {n_streams} "
              f"streams, {big_bytes / 1e6:.0f} MB of page XML ({big.stat().st_size / 1e6:.1f} MB bz2)\n")
        # The full sequential scan (every page's header, no early stop), as a reader without an
        # index must do when it cannot know it has every title (e.g. redirects to follow).
        c0 = _cpu()
        with timed() as full:
            full_reader = d.SequentialReader(big)
            full_pages = sum(1 for _ in full_reader)
        full_cpu = _cpu() - c0
        for share in (0.01, 0.001):
            wanted = set(random.Random(7).sample(titles, max(1, round(len(titles) * share))))
            fetch = ThroughputTable(f"fetching {len(wanted)} random titles ({share:.1%} of {len(titles)}): "
                                    "index against a sequential scan", unit="titles")
            c0 = _cpu()
            with timed() as t:
                scan = d.scan_index(big_index, wanted)
                at: dict[int, set[str]] = {}
                for title, e in scan.found.items():
                    at.setdefault(e.offset, set()).add(title)
                units = [d.Unit(f"u{o}", offsets=((o, frozenset(ts)),)) for o, ts in sorted(at.items())]
                got = sum(len(r.items) + len(r.redirects) + len(r.skipped)
                          for r in d.run_units(big, units, Locate(), workers=workers))
            fetch.add(f"index ({len(at)} of {n_streams} streams decompressed)", got, t.seconds,
                      **{"CPU s": _cpu() - c0})
            c0 = _cpu()
            with timed() as t:
                todo = set(wanted)
                reader = d.SequentialReader(big)
                found = 0
                for _, chunk in reader:
                    h = d.peek_header(chunk)
                    if h.title in todo:
                        if h.redirect is None:
                            d.parse_page(chunk, (0, 0))
                        todo.discard(h.title)
                        found += 1
                        if not todo:
                            break
            fetch.add(f"sequential scan, stops when all found ({reader.bytes_read / 1e6:.1f} of "
                      f"{big.stat().st_size / 1e6:.1f} MB read)", found, t.seconds, **{"CPU s": _cpu() - c0})
            fetch.add(f"full sequential scan ({full_pages} pages, {full_reader.bytes_read / 1e6:.1f} MB read; "
                      "timed once for both tables)", len(wanted), full.seconds, baseline=True, **{"CPU s": full_cpu})
            fetch.print()
        print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
