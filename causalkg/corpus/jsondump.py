"""Wikidata from its JSON dump (``latest-all.json.bz2`` / ``.gz`` / ``.json``): the third source
beside the live query service and the bundled snapshot, for jobs beyond the service's limits.

The dump is a JSON array with one entity per line (``[`` first, ``]`` last, every entity line
but the last ending in a comma). ``convert`` streams it once and keeps, of every item, exactly
what the queries of ``corpus.queries`` read, as the triples the query service would hold:

- ``rdfs:label`` / ``skos:altLabel`` / ``schema:description`` in the configured languages;
- ``wdt:P`` (truthy) statements for P31, P279 and the causal properties, item values only: of a
  property's statements the preferred ones if any, else the normal ones; never deprecated ones,
  never ``somevalue`` / ``novalue`` (how the query service derives ``wdt:``);
- sitelinks to the Wikipedia and Wikinews sites configured (``schema:about``,
  ``schema:isPartOf``, ``schema:name``).

Lines are parsed in a process pool (chunks of lines from one decompressing reader; a plain
``.json`` file is split into byte ranges read by the workers themselves), with a bounded number
of chunks in flight, so memory does not grow with the dump. The triples go to an N-Triples file
in the cache, which ``JsonDumpEngine`` loads into an on-disk Oxigraph store; from there the very
same queries run as on the live service and the snapshot, so ``event_classes``, ``concepts``
and ``base_kg`` are computed by the same code on the same data. Both the converted file and the
store are kept under ``paths.cache`` by a fingerprint of the dump (size, mtime) and the filter
settings: a rerun loads nothing twice.

Flow: ``corpus.build`` picks ``JsonDumpEngine`` for ``--source json-dump --wikidata-dump PATH``.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import os
import re
import shutil
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

import orjson
import pyoxigraph as ox

from causalkg.core.errors import SourceError
from causalkg.core.jsonl import atomic_write
from causalkg.core.ntriples import bulk_load_slices
from causalkg.core.processes import process_pool
from causalkg.core.progress import progress
from causalkg.corpus.queries import ENTITY_PREFIX, Query
from causalkg.corpus.sparql import QueryStats

WDT = "http://www.wikidata.org/prop/direct/"
_LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
_ALT = "<http://www.w3.org/2004/02/skos/core#altLabel>"
_DESC = "<http://schema.org/description>"
_ABOUT = "<http://schema.org/about>"
_PART_OF = "<http://schema.org/isPartOf>"
_NAME = "<http://schema.org/name>"
_QID = re.compile(r"^Q[1-9][0-9]*$")
# Site ids of the Wikimedia projects: "enwiki" -> https://en.wikipedia.org/ and so on.
_PROJECTS = {"wiki": "wikipedia", "wikinews": "wikinews", "wikiquote": "wikiquote", "wikisource": "wikisource",
             "wikibooks": "wikibooks", "wikiversity": "wikiversity", "wikivoyage": "wikivoyage"}
_SITE = re.compile(r"^([a-z][a-z0-9_]*?)(wiki|wikinews|wikiquote|wikisource|wikibooks|wikiversity|wikivoyage)$")
CHUNK_LINES = 2000


def site_iri(site_id: str) -> str | None:
    """The site IRI of a sitelink's site id (``enwiki`` -> ``https://en.wikipedia.org/``), or
    None for sites that are not a language edition of a Wikimedia project (commonswiki, ...)."""
    m = _SITE.match(site_id)
    if not m or m.group(1) in ("commons", "species", "meta", "mediawiki", "sources", "wikidata", "outreach",
                               "incubator", "wikimania", "foundation"):
        return None
    return f"https://{m.group(1).replace('_', '-')}.{_PROJECTS[m.group(2)]}.org/"


@dataclass(frozen=True)
class DumpFilter:
    """What of each entity is kept (from the ``[wikidata]`` settings)."""

    languages: tuple[str, ...]
    properties: tuple[str, ...]          # P31, P279 and the causal properties
    sites: tuple[str, ...]               # site IRIs: Wikipedia and Wikinews

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps([self.languages, self.properties, self.sites]).encode()).hexdigest()[:16]


def _lit(text: str, lang: str) -> str:
    return str(ox.Literal(text, language=lang))


def _truthy(statements: list[dict[str, Any]]) -> Iterator[str]:
    """Item ids of the truthy statements: best rank (preferred, else normal), value snaks."""
    ranked = [s for s in statements if s.get("rank", "normal") != "deprecated"]
    if any(s.get("rank") == "preferred" for s in ranked):
        ranked = [s for s in ranked if s.get("rank") == "preferred"]
    for s in ranked:
        snak = s.get("mainsnak") or {}
        if snak.get("snaktype") != "value":
            continue
        dv = snak.get("datavalue") or {}
        value = dv.get("value")
        if dv.get("type") != "wikibase-entityid" or not isinstance(value, dict):
            continue
        qid = value.get("id") or (f"Q{value['numeric-id']}" if value.get("entity-type") == "item"
                                  and "numeric-id" in value else None)
        if qid and _QID.match(qid):
            yield qid


def entity_triples(entity: dict[str, Any], keep: DumpFilter) -> list[str]:
    """The N-Triples lines kept of one dump entity (items only; anything else gives none)."""
    qid = entity.get("id")
    if entity.get("type") != "item" or not isinstance(qid, str) or not _QID.match(qid):
        return []
    s = f"<{ENTITY_PREFIX}{qid}>"
    out: list[str] = []
    for lang in keep.languages:
        label = (entity.get("labels") or {}).get(lang)
        if label and label.get("value"):
            out.append(f"{s} {_LABEL} {_lit(label['value'], lang)} .\n")
        desc = (entity.get("descriptions") or {}).get(lang)
        if desc and desc.get("value"):
            out.append(f"{s} {_DESC} {_lit(desc['value'], lang)} .\n")
        for alias in (entity.get("aliases") or {}).get(lang) or []:
            if alias.get("value"):
                out.append(f"{s} {_ALT} {_lit(alias['value'], lang)} .\n")
    claims = entity.get("claims") or {}
    for pid in keep.properties:
        seen: set[str] = set()
        for value in _truthy(claims.get(pid) or []):
            if value not in seen:
                seen.add(value)
                out.append(f"{s} <{WDT}{pid}> <{ENTITY_PREFIX}{value}> .\n")
    for site_id, link in (entity.get("sitelinks") or {}).items():
        site = site_iri(site_id)
        title = link.get("title") if isinstance(link, dict) else None
        if site is None or site not in keep.sites or not title:
            continue
        article = ox.NamedNode(site + "wiki/" + _quote_title(title))
        out.append(f"{article} {_ABOUT} {s} .\n")
        out.append(f"{article} {_PART_OF} <{site}> .\n")
        out.append(f"{article} {_NAME} {_lit(title, site.split('//', 1)[1].split('.', 1)[0])} .\n")
    return out


def _quote_title(title: str) -> str:
    from urllib.parse import quote

    return quote(title.replace(" ", "_"), safe="()_,'!*:;@$-.~/")


def _parse_line(line: bytes) -> dict[str, Any] | None:
    line = line.strip()
    if line.endswith(b","):
        line = line[:-1]
    if not line or line in (b"[", b"]"):
        return None
    return orjson.loads(line)


@dataclass
class ChunkResult:
    lines: int = 0
    entities: int = 0
    triples: list[str] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)  # "line N: why" (at most a few per chunk)
    bad_count: int = 0


def convert_lines(lines: list[bytes], keep: DumpFilter, first_line: int, where: str = "line") -> ChunkResult:
    """Parse a chunk of dump lines (``first_line`` is the number of the first, for reports;
    ``where`` names what that number counts, e.g. "byte range from 1048576, line")."""
    r = ChunkResult(lines=len(lines))
    for i, line in enumerate(lines):
        try:
            entity = _parse_line(line)
        except orjson.JSONDecodeError as exc:
            r.bad_count += 1
            if len(r.bad) < 5:
                r.bad.append(f"{where} {first_line + i}: not JSON ({exc})")
            continue
        if entity is None:
            continue
        r.entities += 1
        r.triples.extend(entity_triples(entity, keep))
    return r


def _convert_range(path: str, start: int, end: int, keep: DumpFilter) -> ChunkResult:
    """Parse the lines of a plain .json file that begin in [start, end)."""
    lines: list[bytes] = []
    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":
                fh.readline()  # finish the line that started before this range
        while fh.tell() < end:
            line = fh.readline()
            if not line:
                break
            lines.append(line)
    return convert_lines(lines, keep, 1, f"byte range from {start}, line")


def open_dump(path: Path) -> IO[bytes]:
    """The dump's bytes, decompressed on the fly (.bz2 with every stream, .gz, or plain)."""
    name = path.name
    if name.endswith(".bz2"):
        return bz2.open(path, "rb")
    if name.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _chunks(fh: IO[bytes], size: int) -> Iterator[tuple[int, list[bytes]]]:
    n, chunk, first = 0, [], 1
    for line in fh:
        n += 1
        chunk.append(line)
        if len(chunk) >= size:
            yield first, chunk
            chunk, first = [], n + 1
    if chunk:
        yield first, chunk


@dataclass
class ConvertStats:
    lines: int = 0
    entities: int = 0
    triples: int = 0
    bad_lines: int = 0
    bad: list[str] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "entities": self.entities, "triples": self.triples,
                "bad_lines": self.bad_lines, "bad_examples": self.bad[:10], "seconds": round(self.seconds, 3),
                "workers": self.workers}


def convert(dump: str | os.PathLike, out: str | os.PathLike, keep: DumpFilter, *, workers: int = 1,
            chunk_lines: int = CHUNK_LINES) -> ConvertStats:
    """Stream ``dump`` into N-Triples at ``out`` (gzip when it ends in .gz), written atomically.
    Results are written in dump order whatever ``workers`` is, so the file is deterministic."""
    dump = Path(dump)
    if not dump.is_file():
        raise SourceError(f"the Wikidata JSON dump {dump} does not exist", hint="pass --wikidata-dump PATH")
    stats = ConvertStats(workers=max(1, int(workers)))
    t0 = time.perf_counter()
    bar = progress(desc="wikidata dump", unit="line", unit_scale=True)

    def take(r: ChunkResult, fh: IO[str]) -> None:
        bar.update(r.lines)
        stats.lines += r.lines
        stats.entities += r.entities
        stats.triples += len(r.triples)
        stats.bad_lines += r.bad_count
        stats.bad.extend(r.bad[: max(0, 10 - len(stats.bad))])
        fh.writelines(r.triples)

    with atomic_write(out) as fh:
        if stats.workers == 1:
            with open_dump(dump) as src:
                for first, lines in _chunks(src, chunk_lines):
                    take(convert_lines(lines, keep, first), fh)
        else:
            # process_pool: workers that die with this process, leave Ctrl-C to it, and are
            # stopped at once by an interrupt
            with process_pool(stats.workers) as pool:
                pending: deque[Future] = deque()
                if not dump.name.endswith((".bz2", ".gz")):
                    size = dump.stat().st_size
                    step = max(1 << 20, size // (stats.workers * 8) + 1)
                    ranges: Iterable = ((a, min(size, a + step)) for a in range(0, size, step))
                    submit = (lambda r: pool.submit(_convert_range, str(dump), r[0], r[1], keep))
                    source: Iterable = ranges
                else:
                    src = open_dump(dump)
                    source = _chunks(src, chunk_lines)
                    submit = (lambda c: pool.submit(convert_lines, c[1], keep, c[0]))
                try:
                    for item in source:
                        pending.append(submit(item))
                        while len(pending) >= 2 * stats.workers:  # bounded: a few chunks in flight
                            take(pending.popleft().result(), fh)
                    while pending:
                        take(pending.popleft().result(), fh)
                finally:
                    if dump.name.endswith((".bz2", ".gz")):
                        src.close()
    bar.close()
    if stats.entities == 0:
        raise SourceError(f"the Wikidata JSON dump {dump} holds no entity",
                          hint="expected a JSON array with one entity per line (latest-all.json.bz2)")
    stats.seconds = time.perf_counter() - t0
    return stats


class JsonDumpEngine:
    """The converted dump in an on-disk Oxigraph store; ``select(query)`` -> SPARQL JSON
    results, like ``SnapshotEngine`` and the live client."""

    def __init__(self, dump: str | os.PathLike, cache_dir: str | os.PathLike, keep: DumpFilter, *, workers: int = 1):
        self.dump = Path(dump)
        if not self.dump.is_file():
            raise SourceError(f"the Wikidata JSON dump {self.dump} does not exist", hint="pass --wikidata-dump PATH")
        st = self.dump.stat()
        fp = hashlib.sha256(f"{self.dump.resolve()}|{st.st_size}|{st.st_mtime_ns}|{keep.fingerprint()}".encode()
                            ).hexdigest()[:16]
        self.endpoint = f"json-dump:{self.dump}"
        self.stats = QueryStats()
        folder = Path(cache_dir) / "wikidata-json-dump"
        self.triples_path = folder / f"{fp}.nt.gz"
        self.store_path = folder / f"{fp}.store"
        info_path = folder / f"{fp}.json"
        self.converted: dict[str, Any] | None = None
        self.reused = info_path.is_file() and (self.store_path / ".loaded").is_file()
        if not self.reused:
            if not (info_path.is_file() and self.triples_path.is_file()):
                self.converted = convert(self.dump, self.triples_path, keep, workers=workers).to_dict()
                with atomic_write(info_path) as fh:
                    fh.write(json.dumps(self.converted, indent=2) + "\n")
            shutil.rmtree(self.store_path, ignore_errors=True)
            store = ox.Store(str(self.store_path))
            with gzip.open(self.triples_path, "rb") as fh:
                # in slices: one call holds what it is given while it sorts it, and the
                # converted triples grow with the dump's kept entities (no blank nodes in them)
                bulk_load_slices(store, fh)
            store.flush()
            (self.store_path / ".loaded").write_text("ok\n")
            self.store = store
        else:
            self.store = ox.Store(str(self.store_path))
        if self.converted is None:
            self.converted = json.loads(info_path.read_text())

    def select(self, query: Query) -> dict[str, Any]:
        self.stats.queries += 1
        self.stats.by_name[query.name] = self.stats.by_name.get(query.name, 0) + 1
        try:
            solutions = self.store.query(query.text)
            return json.loads(solutions.serialize(format=ox.QueryResultsFormat.JSON))
        except (SyntaxError, ValueError, OSError) as exc:
            raise SourceError(f"query '{query.name}' on {self.endpoint} failed: {exc}") from None
