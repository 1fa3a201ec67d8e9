"""Reading English Wikipedia XML dumps: pages by title through the multistream index, or all
pages in one streaming pass, in a process pool, with every bad stream or page reported.

Where it sits: ``corpus/wikipedia.py`` (``build_documents``) decides which pages it wants and
what to do with each (``PageTask``); this module finds and decodes them. It knows the dump
formats and nothing about documents.

Formats:

- ``enwiki-<date>-pages-articles-multistream.xml.bz2`` with ``...-multistream-index.txt.bz2``:
  the XML is a series of independent bz2 streams of at most 100 ``<page>`` elements (the
  ``<mediawiki><siteinfo>`` header and the closing tag are streams of their own); the index has
  one ``offset:page_id:title`` line per page, ``offset`` being the byte offset of the page's
  stream. With it, wanted titles are looked up, grouped by stream, and only those streams are
  read and decompressed (``scan_index``, ``read_stream``), and only the wanted pages parsed.
- A plain ``pages-articles.xml.bz2`` (one or many streams) or an uncompressed ``.xml``: read once
  from the start (``SequentialReader``) with bounded memory, stopping when the caller says so.

Pages are cut out of the decompressed bytes at their ``<page>`` / ``</page>`` tags (which cannot
occur unescaped inside XML text) and each is parsed on its own with ElementTree. That keeps
memory bounded like ``iterparse`` with cleared elements, and, unlike one ``iterparse`` over the
whole file, a malformed page costs that page only: the parser can not resume after an XML
error, the cutter can. A corrupt region of a multistream file without index is skipped to the
next stream's ``BZh`` signature.

Work is split into units (a few streams, or a batch of pages) that run in a process pool
(``run_units``); results come back in unit order, so output order never depends on the number
of workers. Everything that goes wrong is a ``Failure`` naming the stream offset or the page
title; nothing is dropped silently.
"""

from __future__ import annotations

import bz2
import html
import multiprocessing
import os
import re
import xml.etree.ElementTree as ET
from collections import deque
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

from causalkg.core.errors import SourceError
from causalkg.core.processes import process_pool

READ_BLOCK = 1 << 20  # bytes read from the dump per call
_PAGE_OPEN = b"<page>"
_PAGE_CLOSE = b"</page>"
# A bz2 stream starts with "BZh", the block size digit, and the block magic (pi in BCD).
_BZ2_STREAM_START = re.compile(rb"BZh[1-9]\x31\x41\x59\x26\x53\x59")

_TITLE_RE = re.compile(rb"<title>(.*?)</title>", re.S)
_NS_RE = re.compile(rb"<ns>\s*(-?\d+)\s*</ns>")
_ID_RE = re.compile(rb"<id>\s*(\d+)\s*</id>")
_REDIRECT_RE = re.compile(rb"<redirect\s+title=\"([^\"]*)\"")


# --- titles ----------------------------------------------------------------------------------


def normalize_title(title: str) -> str:
    """A page title as MediaWiki stores it: underscores as spaces, runs of spaces collapsed,
    no leading/trailing space, first letter upper case (enwiki's ``case="first-letter"``)."""
    t = " ".join(title.replace("_", " ").split())
    return t[:1].upper() + t[1:] if t else t


# --- records ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexEntry:
    """One line of a multistream index."""

    offset: int
    page_id: int
    title: str


@dataclass(frozen=True)
class PageHeader:
    """What a page says before its revision: read cheaply, without parsing the XML."""

    title: str
    ns: int | None
    page_id: int | None
    redirect: str | None


@dataclass
class Page:
    """A parsed ``<page>``: the last revision's id, timestamp and wikitext.

    ``order`` is the page's place in the dump: ``(stream offset, position in the stream)`` when
    read through the index, ``(page number, 0)`` when read sequentially; both sort in dump order.
    ``text`` is None when the revision has no text (suppressed, or missing).
    """

    title: str
    ns: int
    page_id: int
    revision_id: int | None
    timestamp: str | None
    redirect: str | None
    text: str | None
    order: tuple[int, int]
    stream_offset: int | None = None


@dataclass
class Failure:
    """Something that could not be read: a stream, a page's XML, a page's conversion, a title.

    ``kind``: ``stream`` (corrupt or truncated bz2 data, an index offset pointing at garbage),
    ``xml`` (a malformed page), ``page`` (the page task raised), ``missing`` (a title the index
    places in a stream that does not hold it), ``unit`` (a worker crashed on a whole unit).
    """

    kind: str
    message: str
    offset: int | None = None
    title: str | None = None

    def describe(self) -> str:
        where = []
        if self.title is not None:
            where.append(f"page {self.title!r}")
        if self.offset is not None:
            where.append(f"stream at byte {self.offset}")
        return f"{self.kind}: {', '.join(where) + ': ' if where else ''}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "offset": self.offset, "title": self.title}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Failure":
        return cls(d["kind"], d["message"], d.get("offset"), d.get("title"))


class StreamError(Exception):
    """A bz2 stream that can not be decompressed (corrupt, truncated, or not a stream at all)."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset = offset
        self.message = message


# --- is it a dump at all? -------------------------------------------------------------------

_XML_PROLOG = re.compile(rb"^(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*", re.S)


def _snippet(data: bytes, n: int = 40) -> str:
    text = data[:n].decode("utf-8", "replace").split("\n", 1)[0]
    return repr(text) if text.isprintable() else f"binary data ({data[:8].hex(' ')} ...)"


def check_dump(path: str | os.PathLike) -> str:
    """Make sure ``path`` is a MediaWiki XML dump, bz2-compressed or not, before anything is
    read or replaced: bz2 data must decompress and the XML must open with ``<mediawiki``.
    Returns ``"bz2"`` or ``"xml"``; raises SourceError with one line saying what it is instead
    (random bytes, a text file, a compressed HTML error page, ...)."""
    p = Path(path)
    if not p.is_file():
        raise SourceError(f"dump not found: {p}")
    hint = ("pass an enwiki-<date>-pages-articles[-multistream].xml.bz2 from https://dumps.wikimedia.org/enwiki/; "
            "nothing was read or replaced")
    with open(p, "rb") as fh:
        head = fh.read(1 << 16)
        if not head:
            raise SourceError(f"{p} is empty, not a Wikipedia dump", hint=hint)
        kind = "xml"
        if head[:3] == b"BZh":
            kind = "bz2"
            dec = bz2.BZ2Decompressor()
            text = b""
            data = head
            try:
                while len(text) < 4096 and data:
                    text += dec.decompress(data)
                    if dec.eof:  # a multistream dump: the header is a stream of its own
                        rest = dec.unused_data
                        dec = bz2.BZ2Decompressor()
                        data = rest or fh.read(1 << 16)
                    else:
                        data = fh.read(1 << 16)
            except (OSError, EOFError) as exc:
                raise SourceError(f"{p} is not a readable bz2 file ({exc})", hint=hint) from None
            if not text:
                raise SourceError(f"{p} is a bz2 file cut short before any of its text", hint=hint)
        elif p.name.endswith(".bz2"):
            raise SourceError(f"{p} is not a bz2 file: it starts with {_snippet(head)}", hint=hint)
        else:
            text = head
    body = text[_XML_PROLOG.match(text).end():]  # type: ignore[union-attr]
    if not body.startswith(b"<mediawiki"):
        what = "its decompressed text" if kind == "bz2" else "it"
        raise SourceError(f"{p} is not a MediaWiki XML dump: {what} starts with {_snippet(body or text)} "
                          f"instead of '<mediawiki'", hint=hint)
    return kind


def check_index_offsets(dump: str | os.PathLike, index: str | os.PathLike, offsets: Iterable[int]) -> None:
    """Make sure each index offset to be read is the start of a bz2 stream of ``dump`` (an
    index of another dump, or of another date, points into the middle of streams or past the
    end). Raises SourceError naming the first offset that is not."""
    p = Path(dump)
    size = p.stat().st_size
    with open(p, "rb") as fh:
        for off in sorted(set(offsets)):
            if off >= size:
                raise SourceError(
                    f"the index {index} does not belong to the dump {p}: it places a stream at byte {off}, "
                    f"past the end of the dump ({size} bytes)",
                    hint="pass the -multistream-index.txt.bz2 of the same dump and date; nothing was replaced")
            fh.seek(off)
            if not _BZ2_STREAM_START.match(fh.read(10)):
                raise SourceError(
                    f"the index {index} does not belong to the dump {p}: no bz2 stream starts at byte {off}",
                    hint="pass the -multistream-index.txt.bz2 of the same dump and date; nothing was replaced")


# --- the index -------------------------------------------------------------------------------


def _open_text(path: Path):
    if str(path).endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def iter_index(path: str | os.PathLike) -> Iterator[IndexEntry]:
    """Stream the lines of a multistream index (``.txt.bz2`` or ``.txt``).

    Titles are XML-unescaped (Wikimedia writes ``AT&amp;T``). Raises SourceError naming
    ``path:line`` on a line that is not ``offset:page_id:title`` or on unreadable bz2 data.
    """
    p = Path(path)
    if not p.is_file():
        raise SourceError(f"dump index not found: {p}")
    lineno = 0
    try:
        with _open_text(p) as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.rstrip("\n")
                if not line:
                    continue
                parts = line.split(":", 2)
                if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
                    raise SourceError(
                        f"{p}:{lineno}: not a multistream index line (expected offset:page_id:title): {line[:80]!r}",
                        hint="pass the -multistream-index.txt.bz2 that belongs to the dump",
                    )
                title = html.unescape(parts[2]) if "&" in parts[2] else parts[2]
                yield IndexEntry(int(parts[0]), int(parts[1]), title)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise SourceError(f"{p}:{lineno + 1}: can not read the index: {exc}") from None


@dataclass
class IndexScan:
    """What one pass over the index found: the wanted titles' entries, every stream offset."""

    found: dict[str, IndexEntry] = field(default_factory=dict)
    offsets: list[int] = field(default_factory=list)  # sorted, distinct
    entries: int = 0


def scan_index(path: str | os.PathLike, titles: Iterable[str]) -> IndexScan:
    """One pass over the index: where each wanted (normalized) title is, and all stream offsets.

    Memory holds the wanted titles and the distinct offsets only (about 230,000 for the full
    English Wikipedia), never the whole index.
    """
    wanted = {normalize_title(t) for t in titles}
    scan = IndexScan()
    last = -1
    offsets: set[int] = set()
    for entry in iter_index(path):
        scan.entries += 1
        if entry.offset != last:
            offsets.add(entry.offset)
            last = entry.offset
        if entry.title in wanted and entry.title not in scan.found:
            scan.found[entry.title] = entry
    scan.offsets = sorted(offsets)
    return scan


def stream_spans(offsets: list[int], file_size: int) -> dict[int, int]:
    """Compressed length of each stream from the sorted offsets; the last one runs to the end
    of the file (less the small closing stream, which is not in the index)."""
    spans = {}
    for i, off in enumerate(offsets):
        end = offsets[i + 1] if i + 1 < len(offsets) else file_size
        spans[off] = max(0, end - off)
    return spans


# --- bz2 streams -----------------------------------------------------------------------------


def read_stream(path: str | os.PathLike, offset: int, *, block: int = 1 << 16) -> tuple[bytes, int]:
    """Decompress the one bz2 stream that starts at byte ``offset`` of ``path``.

    Returns ``(data, compressed bytes read)``. Raises StreamError when the bytes there are not
    a bz2 stream (an index offset pointing at garbage), are corrupt, or end before the stream
    does (a truncated file).
    """
    dec = bz2.BZ2Decompressor()
    out: list[bytes] = []
    fed = 0
    with open(path, "rb") as fh:
        fh.seek(offset)
        while not dec.eof:
            chunk = fh.read(block)
            if not chunk:
                raise StreamError(offset, f"truncated: the file ends inside this bz2 stream after {fed} bytes")
            if fed == 0 and not _BZ2_STREAM_START.match(chunk):
                raise StreamError(offset, "no bz2 stream starts here (Invalid data stream)")
            try:
                out.append(dec.decompress(chunk))
            except OSError as exc:
                raise StreamError(offset, f"corrupt bz2 data within {fed + len(chunk)} bytes of the stream ({exc})") from None
            fed += len(chunk)
    return b"".join(out), fed - len(dec.unused_data)


# --- cutting and parsing pages ---------------------------------------------------------------


class PageCutter:
    """Cut ``<page>...</page>`` byte strings out of a stream of decompressed dump bytes.

    ``feed(data)`` returns the pages completed so far; ``close()`` returns what is left over
    (an unfinished page, when the input ended inside one). A page that opens again before it
    closes is cut at the second ``<page>`` (it then fails to parse and is reported alone).
    Memory: the current page plus one read block.
    """

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf + data if self._buf else data
        pages = []
        pos = 0
        while True:
            start = buf.find(_PAGE_OPEN, pos)
            if start < 0:
                # keep a tail that could be the start of a split "<page>"
                self._buf = buf[max(pos, len(buf) - len(_PAGE_OPEN) + 1):]
                return pages
            end = buf.find(_PAGE_CLOSE, start)
            reopen = buf.find(_PAGE_OPEN, start + len(_PAGE_OPEN), end if end >= 0 else len(buf))
            if reopen >= 0:
                pages.append(buf[start:reopen])
                pos = reopen
                continue
            if end < 0:
                self._buf = buf[start:]
                return pages
            pages.append(buf[start:end + len(_PAGE_CLOSE)])
            pos = end + len(_PAGE_CLOSE)

    def close(self) -> bytes:
        rest, self._buf = self._buf, b""
        return rest if _PAGE_OPEN in rest else b""


def cut_pages(data: bytes) -> tuple[list[bytes], bytes]:
    """All pages in a decompressed stream, and the unfinished rest (``b""`` when none)."""
    cutter = PageCutter()
    pages = cutter.feed(data)
    return pages, cutter.close()


def peek_header(chunk: bytes) -> PageHeader:
    """Title, namespace, id and redirect target of a page, read from the bytes before its
    revision without parsing the XML (cheap enough to run on every page of a full dump)."""
    head_end = chunk.find(b"<revision")
    head = chunk if head_end < 0 else chunk[:head_end]
    m = _TITLE_RE.search(head)
    title = html.unescape(m.group(1).decode("utf-8", "replace")) if m else ""
    m = _NS_RE.search(head)
    ns = int(m.group(1)) if m else None
    m = _ID_RE.search(head)
    page_id = int(m.group(1)) if m else None
    m = _REDIRECT_RE.search(head)
    redirect = html.unescape(m.group(1).decode("utf-8", "replace")) if m else None
    return PageHeader(title, ns, page_id, redirect)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_page(chunk: bytes, order: tuple[int, int], stream_offset: int | None = None) -> Page:
    """Parse one ``<page>`` element. Raises ``ET.ParseError`` on malformed XML and ValueError
    when a required element (title, ns, id) is missing or not a number."""
    root = ET.fromstring(chunk)
    children = {_local(c.tag): c for c in root}
    title = children.get("title")
    ns = children.get("ns")
    pid = children.get("id")
    if title is None or title.text is None or ns is None or pid is None:
        raise ValueError("page without <title>, <ns> or <id>")
    redirect_el = children.get("redirect")
    revisions = [c for c in root if _local(c.tag) == "revision"]
    rev = revisions[-1] if revisions else None  # pages-meta-history: the last is the newest
    rev_id = timestamp = text = None
    if rev is not None:
        for c in rev:
            name = _local(c.tag)
            if name == "id" and rev_id is None:
                rev_id = int((c.text or "").strip())
            elif name == "timestamp":
                timestamp = (c.text or "").strip() or None
            elif name == "text" and c.get("deleted") is None:
                text = c.text or ""
    return Page(
        title=title.text,
        ns=int((ns.text or "").strip()),
        page_id=int((pid.text or "").strip()),
        revision_id=rev_id,
        timestamp=timestamp,
        redirect=redirect_el.get("title") if redirect_el is not None else None,
        text=text,
        order=order,
        stream_offset=stream_offset,
    )


# --- work units and the pool -----------------------------------------------------------------


class PageTask(Protocol):
    """What the caller does with pages. Must be picklable (it is sent to worker processes).

    ``scan_all``: every article (namespace 0, not a redirect) that ``candidate`` accepts is
    parsed, not only the wanted titles (e.g. to select pages by infobox). ``process(page,
    wanted)`` returns a JSON-able value to keep, or None to skip the page; ``wanted`` says the
    title was asked for. An exception from ``process`` is reported for that page only.
    """

    scan_all: bool

    def candidate(self, chunk: bytes, title: str) -> bool:
        """With ``scan_all``: whether a page not asked for is worth parsing (a cheap look at its
        raw bytes)."""
        ...

    def process(self, page: Page, wanted: bool) -> dict | None: ...


@dataclass(frozen=True)
class Unit:
    """A piece of work: streams of a multistream dump to read (``offsets``, each with the
    wanted titles in it), or page byte strings already cut from a sequential read (``chunks``,
    each with its page number). ``key`` names its checkpoint; units sort in dump order."""

    key: str
    offsets: tuple[tuple[int, frozenset[str]], ...] = ()
    chunks: tuple[tuple[int, bytes], ...] = ()
    titles: frozenset[str] = frozenset()  # wanted titles among ``chunks``
    # (k, n): only the pages at positions k, k+n, k+2n... of each stream. Splits the work of a
    # few big streams over several workers; slice 0 reports the stream's bytes and failures.
    part: tuple[int, int] = (0, 1)


@dataclass
class UnitResult:
    """What a unit gave: kept values in dump order, redirects met among the wanted titles
    (title -> target), failures, and counters (pages seen, pages parsed, compressed bytes)."""

    key: str
    items: list[tuple[tuple[int, int], dict]] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    found: list[str] = field(default_factory=list)  # wanted titles met (pages or redirects)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # wanted titles met but not kept, and why
    pages: int = 0
    parsed: int = 0
    bytes: int = 0


def _handle_chunk(
    chunk: bytes, order: tuple[int, int], stream_offset: int | None, titles: frozenset[str],
    task: PageTask, result: UnitResult,
) -> None:
    result.pages += 1
    try:
        header = peek_header(chunk)
    except Exception as exc:  # noqa: BLE001 - report, never stop the run
        result.failures.append(Failure("xml", f"unreadable page header: {exc}", stream_offset))
        return
    wanted = header.title in titles
    if wanted:
        result.found.append(header.title)
    if header.ns != 0:
        if wanted:
            result.skipped.append((header.title, f"namespace {header.ns}: not an article"))
        return
    if header.redirect is not None:
        if wanted:
            result.redirects.append((header.title, normalize_title(header.redirect)))
        return
    if not wanted and not (task.scan_all and task.candidate(chunk, header.title)):
        return
    try:
        page = parse_page(chunk, order, stream_offset)
    except (ET.ParseError, ValueError) as exc:
        result.failures.append(Failure("xml", f"malformed page XML: {exc}", stream_offset, header.title or None))
        return
    result.parsed += 1
    try:
        value = task.process(page, wanted)
    except Exception as exc:  # noqa: BLE001 - one bad page never kills the run
        result.failures.append(Failure("page", f"{type(exc).__name__}: {exc}", stream_offset, page.title))
        return
    if value is not None:
        result.items.append((order, value))


def run_unit(dump_path: str, unit: Unit, task: PageTask) -> UnitResult:
    """Do one unit (in a worker process, or inline): read its streams or take its chunks, and
    run ``task`` on the selected pages. Never raises for bad input: it reports ``Failure``s."""
    result = UnitResult(unit.key)
    k, n = unit.part
    first = k == 0  # the slice that speaks for the whole stream
    for offset, titles in unit.offsets:
        try:
            data, used = read_stream(dump_path, offset)
        except StreamError as exc:
            if first:
                result.failures.append(Failure("stream", exc.message, offset))
                for t in sorted(titles):
                    result.failures.append(Failure("missing", "its stream could not be read", offset, t))
            continue
        except OSError as exc:
            if first:
                result.failures.append(Failure("stream", f"can not read: {exc}", offset))
            continue
        if first:
            result.bytes += used
        chunks, rest = cut_pages(data)
        for pos, chunk in enumerate(chunks):
            if pos % n == k:
                _handle_chunk(chunk, (offset, pos), offset, titles, task, result)
        if first and rest.strip():
            result.failures.append(Failure("xml", f"the stream ends inside a page ({len(rest)} bytes)", offset,
                                           peek_header(rest).title or None))
        if first and titles:
            met = {peek_header(c).title for c in chunks}
            for t in sorted(titles - met):
                result.failures.append(Failure("missing", "the index places it in this stream, which does not hold it "
                                                          "(index and dump from different dates?)", offset, t))
    for seq, chunk in unit.chunks:
        _handle_chunk(chunk, (seq, 0), None, unit.titles, task, result)
    return result


def default_workers(workers: int | None) -> int:
    """``run.workers``: 0 or None means one per CPU core."""
    if workers is None or workers <= 0:
        return max(1, os.cpu_count() or 1)
    return workers


def run_units(
    dump_path: str | os.PathLike, units: Iterable[Unit], task: PageTask, *, workers: int = 1,
    window: int | None = None, ray: Any = None,
) -> Iterator[UnitResult]:
    """Run units in a process pool of ``workers`` (inline when 1) and yield their results in
    the order of ``units`` (so the output never depends on the worker count).

    ``units`` may be a lazy iterator (a sequential read produces them as it goes): at most
    ``window`` units are in flight. ``ray`` (``causalkg.core.distributed.RaySettings``): run the
    units as Ray tasks instead of a process pool, same results in the same order. A worker that crashes on a unit becomes a ``unit`` failure;
    a pool that dies (a worker killed, e.g. out of memory) raises SourceError.
    """
    path = str(dump_path)
    if ray is not None:
        # run.engine = "ray": each unit is a Ray task (the dump on storage every node reads),
        # results in unit order as here; a failed task is retried, then the read fails.
        from causalkg.core.distributed import map_ordered

        for _, result in map_ordered(run_unit, units, lambda u: (path, u, task), ray, window=window or 0,
                                     what=lambda u: f"dump unit {u.key}"):
            yield result
        return
    if workers <= 1:
        for unit in units:
            yield run_unit(path, unit, task)
        return
    window = window or workers * 3
    # spawn: workers start clean (no copied locks or threads from the parent).
    ctx = multiprocessing.get_context("spawn")
    pending: deque[tuple[Unit, Future]] = deque()
    # process_pool: the workers die with this process (kill -9 of a build leaves none behind).
    with process_pool(workers, ctx) as pool:
        it = iter(units)
        exhausted = False
        while True:
            while not exhausted and len(pending) < window:
                try:
                    unit = next(it)
                except StopIteration:
                    exhausted = True
                    break
                pending.append((unit, pool.submit(run_unit, path, unit, task)))
            if not pending:
                return
            unit, fut = pending.popleft()
            try:
                yield fut.result()
            except BrokenProcessPool as exc:
                raise SourceError(
                    f"a worker process died while reading {path} ({exc})",
                    hint="rerun with fewer --workers (finished units are kept and resumed)",
                ) from None
            except Exception as exc:  # noqa: BLE001 - reported, the run goes on
                yield UnitResult(unit.key, failures=[Failure("unit", f"worker failed: {type(exc).__name__}: {exc}")])


# --- sequential reading ----------------------------------------------------------------------


class SequentialReader:
    """Read a whole dump from the start, page by page, with bounded memory.

    Accepts ``.xml.bz2`` (one stream, or many: a multistream file read without its index) and
    uncompressed ``.xml``. Iterating yields ``(page_number, page_bytes)``; ``bytes_read`` is the
    compressed bytes consumed so far (for progress); ``failures`` collects corrupt regions
    (skipped to the next bz2 stream when there is one) and a truncated end.
    """

    def __init__(self, path: str | os.PathLike, *, block: int = READ_BLOCK,
                 on_bytes: Callable[[int], None] | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise SourceError(f"dump not found: {self.path}")
        self.block = block
        self.on_bytes = on_bytes
        self.bytes_read = 0
        self.failures: list[Failure] = []
        self.compressed = self._is_bz2()

    def _is_bz2(self) -> bool:
        with open(self.path, "rb") as fh:
            return fh.read(3) == b"BZh"

    def _raw_blocks(self) -> Iterator[bytes]:
        """Decompressed bytes, block by block, across bz2 streams, skipping corrupt regions."""
        with open(self.path, "rb") as fh:
            if not self.compressed:
                while True:
                    chunk = fh.read(self.block)
                    if not chunk:
                        return
                    self._count(len(chunk))
                    yield chunk
            dec = bz2.BZ2Decompressor()
            stream_start = 0
            pos = 0  # file position of the next byte to feed
            pending = b""
            while True:
                if pending:
                    chunk, pending = pending, b""
                else:
                    chunk = fh.read(self.block)
                    if not chunk:
                        if not dec.eof and pos > stream_start:
                            self.failures.append(Failure(
                                "stream", f"truncated: the file ends inside a bz2 stream after {pos - stream_start} bytes",
                                stream_start))
                        return
                    self._count(len(chunk))
                try:
                    out = dec.decompress(chunk)
                except OSError as exc:
                    skip_to = self._resync(fh, pos + 1)
                    self.failures.append(Failure(
                        "stream", f"corrupt bz2 data ({exc}); "
                        + (f"skipped to the next stream at byte {skip_to}" if skip_to is not None else "nothing after it can be read"),
                        stream_start))
                    yield b"\x00CORRUPT\x00"  # tells the cutter to drop the page it was in
                    if skip_to is None:
                        return
                    fh.seek(skip_to)
                    pos = stream_start = skip_to
                    dec = bz2.BZ2Decompressor()
                    continue
                if out:
                    yield out
                if dec.eof:
                    used = len(chunk) - len(dec.unused_data)
                    pos += used
                    pending = dec.unused_data
                    stream_start = pos
                    dec = bz2.BZ2Decompressor()
                    if not pending:
                        # a new stream, or padding/end of file
                        nxt = fh.read(self.block)
                        if not nxt:
                            return
                        self._count(len(nxt))
                        pending = nxt
                else:
                    pos += len(chunk)

    def _resync(self, fh, start: int) -> int | None:
        """The file offset of the next bz2 stream signature at or after ``start``, if any."""
        fh.seek(start)
        carry = b""
        base = start
        while True:
            chunk = fh.read(self.block)
            if not chunk:
                return None
            data = carry + chunk
            m = _BZ2_STREAM_START.search(data)
            if m:
                return base - len(carry) + m.start()
            carry = data[-9:]
            base += len(chunk)

    def _count(self, n: int) -> None:
        self.bytes_read += n
        if self.on_bytes is not None:
            self.on_bytes(n)

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        cutter = PageCutter()
        seq = 0
        for block in self._raw_blocks():
            if block == b"\x00CORRUPT\x00":
                lost = cutter.close()
                if lost:
                    self.failures.append(Failure("xml", "page lost in a corrupt bz2 region", None,
                                                 peek_header(lost).title or None))
                cutter = PageCutter()
                continue
            for chunk in cutter.feed(block):
                yield seq, chunk
                seq += 1
        rest = cutter.close()
        if rest.strip():
            self.failures.append(Failure("xml", f"the dump ends inside a page ({len(rest)} bytes)", None,
                                         peek_header(rest).title or None))


# --- writing ---------------------------------------------------------------------------------


def read_header(path: str | os.PathLike) -> bytes:
    """The bytes of a dump before its first ``<page>``: ``<mediawiki ...>`` and ``<siteinfo>``."""
    out = b""
    dec = bz2.BZ2Decompressor() if SequentialReader(path).compressed else None
    with open(path, "rb") as fh:
        while _PAGE_OPEN not in out:
            chunk = fh.read(1 << 16)
            if not chunk:
                break
            if dec is not None:
                try:
                    chunk = dec.decompress(chunk)
                except (OSError, EOFError):
                    break
            out += chunk
            if dec is not None and dec.eof:
                break
    cut = out.find(_PAGE_OPEN)
    head = out if cut < 0 else out[:cut]
    # the page element is indented in real dumps: keep the header's own lines only
    return head[: head.rfind(b"\n") + 1] if b"\n" in head else head


def write_multistream(header: bytes, pages: Iterable[bytes], dump_path: str | os.PathLike,
                      index_path: str | os.PathLike, *, pages_per_stream: int = 100,
                      footer: bytes = b"</mediawiki>\n") -> int:
    """Write ``<page>`` byte strings as a multistream dump and its index, the way Wikimedia
    does: ``header`` alone in the first bz2 stream, then streams of ``pages_per_stream`` pages,
    then ``footer`` alone; index lines ``offset:page_id:title`` with XML-escaped titles.

    For bundling real pages (``scripts/build_enwiki_snapshot.py``) and for cutting a sample out
    of a dump. Returns the number of pages written. bz2 output is deterministic.
    """
    lines: list[str] = []
    n = 0
    with open(dump_path, "wb") as fh:
        fh.write(bz2.compress(header, 9))
        group: list[bytes] = []

        def flush() -> None:
            offset = fh.tell()
            body = b"".join(p if p.endswith(b"\n") else p + b"\n" for p in group)
            fh.write(bz2.compress(body, 9))
            for p in group:
                h = peek_header(p)
                title = html.escape(h.title, quote=False).replace('"', "&quot;")
                lines.append(f"{offset}:{h.page_id}:{title}\n")
            group.clear()

        for page in pages:
            group.append(page)
            n += 1
            if len(group) >= pages_per_stream:
                flush()
        if group:
            flush()
        fh.write(bz2.compress(footer, 9))
    data = "".join(lines).encode("utf-8")
    Path(index_path).write_bytes(bz2.compress(data, 9) if str(index_path).endswith(".bz2") else data)
    return n
