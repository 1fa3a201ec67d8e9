"""The Wikipedia half of ``causalkg corpus build``: event articles from an English Wikipedia
dump to ``<paths.data>/corpus/corpus.jsonl`` (the ``CorpusDocument`` contract, a superset of
the WikiCausal corpus record) and its ``manifest.json``.

Where it sits: after the Wikidata half (``corpus/build.py`` writes ``concepts.jsonl`` and calls
``build_documents``), before linking and extraction, which read the corpus.

Which pages (``[wikipedia] select``):

- ``concepts``: the English Wikipedia titles (``enwiki_title``, the sitelink) of the instance
  concepts in ``concepts.jsonl``;
- ``infobox``: every article whose first infobox is an event infobox (WEC's list,
  ``[wikipedia] event_infoboxes``); this reads the whole dump;
- ``both``; ``auto``: both on the bundled snapshot, concepts on any other dump.

A page is matched to Wikidata by its title only: the concept whose ``enwiki_title`` is the
page's title, or a title that redirects to it. Otherwise ``document_concept.id`` is null and
``resolved`` false: a QID is never guessed, not even from a label.

How: ``corpus/dump.py`` finds the pages (through the multistream index when there is one, else
in one sequential pass) in a process pool; ``corpus/wikitext.py`` converts each. Work is
checkpointed per unit (a few bz2 streams, or a batch of pages) under
``<out_dir>/.wikipedia-parts/``; a killed run restarted skips the finished units and writes the
same corpus. The corpus is then assembled in dump order, enriched with the Wikidata concepts,
validated against the contract and written atomically with the manifest.
"""

from __future__ import annotations

import heapq
import json
import logging
import re
import shutil
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from pydantic import ValidationError

from causalkg.distributed import RaySettings, engine_of
from causalkg.config import CHECKOUT_ROOT, Config
from causalkg.contracts import Concept, CorpusDocument
from causalkg.errors import ConfigError, SchemaError, SourceError
from causalkg.jsonl import ReadStats, atomic_write, format_validation_error, read_jsonl
from causalkg.manifest import build_manifest, describe_input, file_sha256, fingerprint, read_manifest, write_manifest
from causalkg.progress import progress
from causalkg.shards import Shards
from causalkg.corpus import dump as dumplib
from causalkg.corpus.dump import Failure, Page, Unit, UnitResult, normalize_title
from causalkg.corpus.wikitext import CONVERTER_VERSION, ConvertOptions, convert_wikitext, infobox_key, infobox_names

log = logging.getLogger(__name__)

SELECT_MODES = ("concepts", "infobox", "both", "auto")
CORPUS_NAME = "corpus.jsonl"
PARTS_DIR = ".wikipedia-parts"
HASH_LIMIT = 256 * 1024 * 1024  # inputs larger than this are described by size and mtime, not hashed
SEQ_BATCH_PAGES = 32  # pages per unit in a sequential read
SEQ_BATCH_BYTES = 16 * 1024 * 1024
FILL_FIELDS = ("text", "first_section", "categories", "infobox", "headings", "sections", "timelines",
               "event_concepts", "revision_id", "timestamp")


# --- event infoboxes (WEC) -------------------------------------------------------------------


_TITLE_NUMBER_RE = re.compile(r"\s?\d\d?th\s|[12][90][0-9][0-9]|\b[MDCLXVI]+\b")


@dataclass(frozen=True)
class EventInfoboxes:
    """WEC's event infobox list (``en_all_event_infoboxs.json``), matched as WEC matches it.

    An infobox name is normalized (lower case, no spaces, without ``infobox``: ``Infobox civilian
    attack`` -> ``civilianattack``) and matches a listed name that occurs in it (so
    ``nuclearweaponstest`` matches ``weaponstest``, and ``athleticconference`` matches
    ``conference``: WEC's rule, false positives included). Groups with ``include: false`` never
    match. Groups checked by WEC's ``TitleWithDateInfoboxValidator`` (awards) also need a year,
    an ordinal or a Roman numeral in the title. WEC's further validators (time spans, persons)
    are not applied: a war lasting years is an event for a causal KG.
    """

    groups: tuple[tuple[str, tuple[str, ...], bool], ...]  # (type, names, title needs a number)

    @classmethod
    def load(cls, path: Path) -> "EventInfoboxes":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            groups = []
            for g in data["infoboxConfigs"]:
                if not g.get("include", True):
                    continue
                names = tuple(str(n).lower() for n in g.get("infoboxs", []) if n)
                needs_number = str(g.get("useValidatorClass", "")).endswith("TitleWithDateInfoboxValidator")
                groups.append((str(g["corefType"]), names, needs_number))
        except FileNotFoundError:
            raise SourceError(f"event infobox list not found: {path}",
                              hint="set wikipedia.event_infoboxes (default snapshots/enwiki/event_infoboxes.json)") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise SchemaError(f"{path}: not a WEC infobox config ({{'infoboxConfigs': [...]}}): {exc}") from None
        return cls(tuple(groups))

    def match(self, infobox_name: str, title: str) -> str | None:
        """The event type (WEC's ``corefType``) of an infobox name on a page, or None."""
        key = infobox_key(infobox_name)
        if not key:
            return None
        for kind, names, needs_number in self.groups:
            if any(n in key for n in names):
                if needs_number and not _TITLE_NUMBER_RE.search(title):
                    continue
                return kind
        return None


# --- the page task (runs in the worker processes) --------------------------------------------


@dataclass(frozen=True)
class CorpusTask:
    """Converts selected pages to raw documents (without the Wikidata fields, which are added
    at assembly). Picklable: it travels to the worker processes."""

    scan_all: bool
    infoboxes: EventInfoboxes | None
    options: ConvertOptions
    url_base: str

    def candidate(self, chunk: bytes, title: str) -> bool:
        """Cheap pre-filter for pages not asked for by title: some infobox on the page (by
        regex over the raw bytes) is an event infobox."""
        if self.infoboxes is None:
            return False
        return any(self.infoboxes.match(name, title) for name in infobox_names(chunk))

    def process(self, page: Page, wanted: bool) -> dict | None:
        if page.text is None:
            raise ValueError("the revision has no text (deleted or missing <text>)")
        event_type = None
        fields = convert_wikitext(page.text, title=page.title, options=self.options)
        if fields["infobox"] is not None and self.infoboxes is not None:
            event_type = self.infoboxes.match(fields["infobox"]["name"], page.title)
            if event_type is not None:
                fields["infobox"]["event_type"] = event_type
        if not wanted and event_type is None:
            return None  # an event infobox somewhere, but not the first one
        return {
            "id": page.page_id,
            "title": page.title,
            "url": page_url(self.url_base, page.title),
            **fields,
            "revision_id": page.revision_id,
            "timestamp": page.timestamp,
            "selected_by": (["concepts"] if wanted else []) + (["infobox"] if event_type else []),
        }


def page_url(url_base: str, title: str) -> str:
    """The article URL: spaces as underscores, percent-encoded as MediaWiki does."""
    return url_base + urllib.parse.quote(title.replace(" ", "_"), safe="/:(),;@$!*'~-_.")


# --- resolving inputs ------------------------------------------------------------------------


def _resolve(cfg: Config, key: str) -> Path | None:
    """An input path from the config (the bundled snapshot is found from any directory)."""
    return cfg.input_path(key)


def _bundled(key: str) -> Path:
    from causalkg.config import load_defaults

    return CHECKOUT_ROOT / load_defaults()["wikipedia"][key]


def _same_file(a: Path | None, b: Path) -> bool:
    """``a`` is ``b``, or a copy of it (same size and SHA-256: the bundled snapshot copied
    elsewhere, or found in another checkout than the one the package runs from)."""
    try:
        if a is None or not a.is_file() or not b.is_file():
            return False
        if a.samefile(b):
            return True
        return a.stat().st_size == b.stat().st_size and file_sha256(a) == file_sha256(b)
    except OSError:
        return False


def _sibling_index(dump: Path) -> Path | None:
    name = dump.name
    if "multistream" in name and name.endswith(".xml.bz2"):
        cand = dump.with_name(name[: -len(".xml.bz2")] + "-index.txt.bz2")
        if cand.is_file():
            return cand
    return None


def _describe(path: Path) -> dict[str, Any]:
    st = path.stat()
    if st.st_size <= HASH_LIMIT:
        return describe_input(path)
    return {"path": str(path), "bytes": st.st_size, "mtime": int(st.st_mtime), "sha256": None,
            "note": f"not hashed (larger than {HASH_LIMIT // (1024 * 1024)} MiB): size and mtime identify it"}


@dataclass
class _Concepts:
    by_id: dict[str, Concept] = field(default_factory=dict)
    by_title: dict[str, Concept] = field(default_factory=dict)
    instance_titles: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    stats: ReadStats = field(default_factory=ReadStats)


def _load_concepts(path: Path | None) -> _Concepts:
    out = _Concepts()
    if path is None or not path.is_file():
        return out
    for c in read_jsonl(path, Concept, stats=out.stats):
        out.by_id.setdefault(c.id, c)
        if c.enwiki_title:
            t = normalize_title(c.enwiki_title)
            prev = out.by_title.get(t)
            if prev is not None and prev.id != c.id:
                out.conflicts.append(f"{t!r}: {prev.id} and {c.id} (kept {prev.id})")
                continue
            if prev is None:
                out.by_title[t] = c
                if c.kind == "instance":
                    out.instance_titles.append(t)
    return out


# --- plan ------------------------------------------------------------------------------------


@dataclass
class _Plan:
    dump: Path
    index: Path | None
    bundled: bool
    mode: str
    workers: int
    titles: list[str]
    infoboxes: EventInfoboxes | None
    infobox_path: Path | None
    options: ConvertOptions
    url_base: str
    max_hops: int
    notes: list[str]
    ray: Any = None  # RaySettings when run.engine = "ray" (units run as Ray tasks)


def _make_plan(cfg: Config, concepts_path: Path, dry_run: bool) -> tuple[_Plan, _Concepts]:
    wp = cfg["wikipedia"]
    notes: list[str] = []
    dump = _resolve(cfg, "wikipedia.dump")
    if dump is None or not dump.is_file():
        raise SourceError(
            f"Wikipedia dump not found: {dump if dump is not None else '(wikipedia.dump is empty)'}",
            hint="download enwiki-<date>-pages-articles-multistream.xml.bz2 and its -index.txt.bz2 from "
                 "https://dumps.wikimedia.org/enwiki/ and pass --dump/--index, or leave them unset for the bundled snapshot",
        )
    bundled = _same_file(dump, _bundled("dump"))
    index = _resolve(cfg, "wikipedia.index")
    if index is not None and not bundled and _same_file(index, _bundled("index")):
        # --dump given alone: the bundled index does not belong to it
        sib = _sibling_index(dump)
        notes.append(f"the configured index is the bundled snapshot's, not {dump.name}'s: "
                     + (f"using {sib} found beside the dump" if sib else "reading the dump sequentially"))
        index = sib
    if index is not None and not index.is_file():
        raise SourceError(f"dump index not found: {index}",
                          hint="pass the dump's -multistream-index.txt.bz2 with --index, or --index '' to read the dump sequentially")
    if index is None and dump.name.endswith(".xml.bz2") and "multistream" in dump.name:
        notes.append("no index: the multistream dump is read sequentially (slower, one decompressing process)")
    if bundled:
        notes.append(f"bundled enwiki snapshot: {dump.name} (264 pages; see snapshots/enwiki/SOURCE.md)")

    select = str(wp["select"])
    if select not in SELECT_MODES:
        raise ConfigError(f"wikipedia.select must be one of {', '.join(SELECT_MODES)}, got {select!r}")
    mode = select
    if select == "auto":
        mode = "both" if bundled else "concepts"
        notes.append(f"select=auto: {mode} ({'the bundled snapshot' if bundled else 'not the bundled snapshot: an infobox scan reads the whole dump; use --select both for it'})")

    concepts = _load_concepts(concepts_path)
    if mode in ("concepts", "both") and not concepts_path.is_file():
        if not dry_run:
            raise SourceError(f"no concepts file at {concepts_path}",
                              hint="build the Wikidata part first: causalkg corpus build --only wikidata")
        notes.append(f"the concepts file {concepts_path} does not exist yet (it is written by the Wikidata part)")
    if mode == "infobox" and not concepts_path.is_file():
        notes.append(f"no concepts file at {concepts_path}: every document is unresolved (document_concept.id null)")
    if concepts.conflicts:
        notes.append(f"{len(concepts.conflicts)} enwiki titles claimed by several concepts: " + "; ".join(concepts.conflicts[:5]))
    titles = sorted(concepts.instance_titles) if mode in ("concepts", "both") else []

    infoboxes = None
    infobox_path = None
    if mode in ("infobox", "both"):
        infobox_path = _resolve(cfg, "wikipedia.event_infoboxes")
        if infobox_path is None:
            raise ConfigError("wikipedia.event_infoboxes is empty but select needs it")
        infoboxes = EventInfoboxes.load(infobox_path)

    workers = dumplib.default_workers(int(cfg.get("run.workers", 0) or 0))
    ray = RaySettings.from_config(cfg) if engine_of(cfg) == "ray" else None
    drop = tuple(str(s) for s in wp.get("drop_sections", ()))
    words = tuple(str(s) for s in wp.get("timeline_words", ())) or ("timeline", "chronolog")
    plan = _Plan(
        dump=dump, index=index, bundled=bundled, mode=mode, workers=workers, titles=titles, ray=ray,
        infoboxes=infoboxes, infobox_path=infobox_path, options=ConvertOptions(drop, words),
        url_base=str(wp["url_base"]), max_hops=int(wp.get("max_redirect_hops", 3)), notes=notes,
    )
    return plan, concepts


def _plan_lines(p: _Plan, concepts_path: Path, out_dir: Path) -> list[str]:
    how = f"through the index {p.index}" if p.index else "sequentially (no index)"
    sel = {
        "concepts": f"{len(p.titles)} enwiki titles of instance concepts in {concepts_path}",
        "infobox": f"articles whose first infobox is an event infobox ({p.infobox_path})",
        "both": f"{len(p.titles)} enwiki titles of instance concepts, and articles whose first infobox is an event infobox",
    }[p.mode]
    return [
        f"dump: {p.dump} ({p.dump.stat().st_size / 1e6:.1f} MB), read {how}",
        f"select: {p.mode}: {sel}",
        f"workers: {p.workers}",
        f"drop sections: {', '.join(p.options.drop_sections)}",
        f"write: {out_dir / CORPUS_NAME}, {out_dir / 'manifest.json'} (checkpoints in {out_dir / PARTS_DIR})",
    ]


# --- checkpoints -----------------------------------------------------------------------------


class _Parts:
    """Per-unit checkpoints (a ``causalkg.shards`` folder): ``<key>.jsonl`` holds one kept document
    per line in dump order (``{"order": [a, b], "doc": {...}}``), ``<key>.done.json`` the unit's
    summary, written after it."""

    def __init__(self, folder: Path, fp: str, refresh: bool) -> None:
        self.folder = folder
        # other inputs or settings: the checkpoints belong to another corpus and are dropped
        self.shards = Shards(folder, fp, force=refresh)

    def path(self, key: str) -> Path:
        return self.shards.path(key)

    def done(self, key: str) -> dict | None:
        return self.shards.done(key) if self.path(key).is_file() else None

    def write(self, r: UnitResult) -> dict:
        meta = {
            "key": r.key, "pages": r.pages, "parsed": r.parsed, "bytes": r.bytes,
            "redirects": r.redirects, "found": r.found, "skipped": r.skipped,
            "failures": [f.to_dict() for f in r.failures],
            "kept": [doc["title"] for _, doc in r.items],
        }
        with atomic_write(self.path(r.key), allow_empty=True) as fh:  # a unit may keep no document
            for order, doc in r.items:
                fh.write(json.dumps({"order": list(order), "doc": doc}, ensure_ascii=False) + "\n")
        self.shards.finish(r.key, meta)
        return meta

    @staticmethod
    def _read(p: Path) -> Iterator[tuple[tuple[int, int], dict]]:
        with open(p, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                yield tuple(rec["order"]), rec["doc"]

    def docs(self, prefix: str) -> Iterator[tuple[tuple[int, int], dict]]:
        """The kept documents of every part whose key starts with ``prefix``, in dump order:
        parts in key order, the slices of one stream group (``r0-<offset>-<k>``) interleaved."""
        groups: dict[str, list[Path]] = {}
        finished = set(self.shards.keys())
        for p in sorted(self.folder.glob(f"{prefix}*.jsonl")):
            if p.stem not in finished:
                continue
            bits = p.stem.split("-")
            groups.setdefault("-".join(bits[:2]) if len(bits) == 3 else p.stem, []).append(p)
        for key in sorted(groups):
            files = groups[key]
            if len(files) == 1:
                yield from self._read(files[0])
            else:
                yield from heapq.merge(*(self._read(p) for p in files), key=lambda item: item[0])

    def rounds(self) -> list[str]:
        return sorted({key.split("-", 1)[0] + "-" for key in self.shards.keys()})


@dataclass
class _Tally:
    pages: int = 0
    parsed: int = 0
    bytes: int = 0
    streams: int = 0
    units: int = 0
    resumed_units: int = 0
    failures: list[dict] = field(default_factory=list)
    redirects: dict[str, str] = field(default_factory=dict)  # wanted title -> target
    found: set[str] = field(default_factory=set)
    kept: set[str] = field(default_factory=set)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def add(self, meta: dict, *, resumed: bool) -> None:
        self.units += 1
        self.resumed_units += int(resumed)
        self.pages += meta["pages"]
        self.parsed += meta["parsed"]
        self.bytes += meta["bytes"]
        self.failures.extend(meta["failures"])
        for src, dst in meta["redirects"]:
            self.redirects.setdefault(src, dst)
        self.found.update(meta["found"])
        self.kept.update(meta["kept"])
        self.skipped.extend(tuple(s) for s in meta["skipped"])


# --- reading: through the index --------------------------------------------------------------


def _units_for(prefix: str, offsets: list[int], titles_at: dict[int, set[str]], n_streams: int) -> list[Unit]:
    # The unit layout depends on the dump and the selection only, never on the worker count, so
    # checkpoints stay valid when a resumed run uses another --workers. Many streams: groups of
    # streams per unit; few streams (a small dump): each stream's pages split in slices, so
    # that a handful of big streams still keeps every worker busy.
    group = 1 if n_streams <= 4096 else 16
    slices = 4 if len(offsets) < 64 else 1
    units = []
    for i in range(0, len(offsets), group):
        chunk = offsets[i:i + group]
        for k in range(slices):
            units.append(Unit(
                key=f"{prefix}{chunk[0]:015d}-{k}",
                offsets=tuple((o, frozenset(titles_at.get(o, ()))) for o in chunk),
                part=(k, slices),
            ))
    return units


def _run_units(plan: _Plan, parts: _Parts, units: Iterable[Unit], task: CorpusTask, tally: _Tally, bar) -> None:
    todo: list[Unit] = []
    for unit in units:
        meta = parts.done(unit.key)
        if meta is not None:
            tally.add(meta, resumed=True)
            bar.update(meta["bytes"])
        else:
            todo.append(unit)
    for result in dumplib.run_units(plan.dump, todo, task, workers=plan.workers, ray=plan.ray):
        for f in result.failures:
            log.warning("warning: %s", f.describe())
        meta = parts.write(result)
        tally.add(meta, resumed=False)
        # postfix first: the update's redraw then shows this unit's pages and documents
        bar.set_postfix(pages=tally.pages, docs=len(tally.kept), refresh=False)
        bar.update(result.bytes)


def _read_indexed(plan: _Plan, parts: _Parts, tally: _Tally, bar) -> dict[str, Any]:
    assert plan.index is not None
    size = plan.dump.stat().st_size
    wanted = set(plan.titles)
    scan = dumplib.scan_index(plan.index, wanted)
    # an index of another dump: stop before reading (and so before replacing anything)
    dumplib.check_index_offsets(plan.dump, plan.index, [*(e.offset for e in scan.found.values()), *scan.offsets[:1],
                                                        *scan.offsets[-1:]])
    spans = dumplib.stream_spans(scan.offsets, size)
    not_in_index = sorted(wanted - scan.found.keys())
    titles_at: dict[int, set[str]] = {}
    for t, e in scan.found.items():
        titles_at.setdefault(e.offset, set()).add(t)
    offsets = scan.offsets if plan.infoboxes is not None else sorted(titles_at)
    bar.total = sum(spans[o] for o in offsets)
    bar.refresh()
    task = CorpusTask(plan.infoboxes is not None, plan.infoboxes, plan.options, plan.url_base)
    _run_units(plan, parts, _units_for("r0-", offsets, titles_at, len(scan.offsets)), task, tally, bar)
    tally.streams += len(offsets)

    # redirects: fetch the targets not fetched yet, hop by hop
    hops = 0
    followed = set()
    while hops < plan.max_hops:
        targets = {dst for src, dst in tally.redirects.items() if src not in followed}
        followed.update(tally.redirects)
        targets -= tally.kept | tally.found
        if not targets:
            break
        hops += 1
        scan2 = dumplib.scan_index(plan.index, targets)
        not_in_index += sorted(f"{t} (redirect target)" for t in targets - scan2.found.keys())
        bad = {f["offset"] for f in tally.failures if f["kind"] == "stream"}
        at2: dict[int, set[str]] = {}
        for t, e in sorted(scan2.found.items()):
            if e.offset in bad:  # already reported: do not read it again
                tally.failures.append(Failure("missing", "its stream could not be read", e.offset, t).to_dict())
                continue
            at2.setdefault(e.offset, set()).add(t)
        offs2 = sorted(at2)
        bar.total = (bar.total or 0) + sum(spans.get(o, 0) for o in offs2)
        task2 = CorpusTask(False, plan.infoboxes, plan.options, plan.url_base)
        _run_units(plan, parts, _units_for(f"r{hops}-", offs2, at2, len(scan.offsets)), task2, tally, bar)
        tally.streams += len(offs2)
    return {"index_entries": scan.entries, "streams_in_dump": len(scan.offsets), "not_in_index": not_in_index}


# --- reading: sequentially -------------------------------------------------------------------


def _read_sequential(plan: _Plan, parts: _Parts, tally: _Tally, bar) -> dict[str, Any]:
    wanted = set(plan.titles)
    scan_all = plan.infoboxes is not None
    size = plan.dump.stat().st_size
    seen: set[str] = set()
    passes = 0
    stopped_early = []
    task = CorpusTask(scan_all, plan.infoboxes, plan.options, plan.url_base)
    pages_read = 0
    while True:
        reader = dumplib.SequentialReader(plan.dump, on_bytes=bar.update)
        bar.total = (bar.total or 0) + size
        prefix = f"s{passes}-"
        todo_titles = set(wanted) - seen
        searched_whole_pass = set(todo_titles)

        def units() -> Iterator[Unit]:
            batch: list[tuple[int, bytes]] = []
            batch_titles: set[str] = set()
            nbytes = 0
            nonlocal pages_read
            for seq, chunk in reader:
                pages_read += 1
                h = dumplib.peek_header(chunk)
                w = h.title in todo_titles
                if w:
                    seen.add(h.title)
                    todo_titles.discard(h.title)
                if h.ns != 0:
                    if w:
                        tally.skipped.append((h.title, f"namespace {h.ns}: not an article"))
                    continue
                if h.redirect is not None:
                    if w:
                        dst = normalize_title(h.redirect)
                        tally.redirects.setdefault(h.title, dst)
                        if dst not in seen and dst not in wanted:
                            wanted.add(dst)
                            todo_titles.add(dst)
                    continue
                if w or (scan_all and task.candidate(chunk, h.title)):
                    batch.append((seq, chunk))
                    nbytes += len(chunk)
                    if w:
                        batch_titles.add(h.title)
                if len(batch) >= SEQ_BATCH_PAGES or nbytes >= SEQ_BATCH_BYTES:
                    yield Unit(key=f"{prefix}{batch[0][0]:012d}", chunks=tuple(batch), titles=frozenset(batch_titles))
                    batch, batch_titles, nbytes = [], set(), 0
                if not scan_all and not todo_titles:
                    stopped_early.append(passes)
                    break
            if batch:
                yield Unit(key=f"{prefix}{batch[0][0]:012d}", chunks=tuple(batch), titles=frozenset(batch_titles))

        # run units, skipping finished ones (a sequential resume re-reads but does not re-convert)
        def fresh() -> Iterator[Unit]:
            for unit in units():
                meta = parts.done(unit.key)
                if meta is not None:
                    tally.add(meta, resumed=True)
                else:
                    yield unit

        for result in dumplib.run_units(plan.dump, fresh(), task, workers=plan.workers, ray=plan.ray):
            for f in result.failures:
                log.warning("warning: %s", f.describe())
            meta = parts.write(result)
            tally.add(meta, resumed=False)
            bar.set_postfix(pages=tally.pages, docs=len(tally.kept), refresh=False)
        for f in reader.failures:
            log.warning("warning: %s", f.describe())
            tally.failures.append(f.to_dict())
        tally.bytes += reader.bytes_read
        tally.found.update(seen)
        passes += 1
        # redirect targets met before their redirect need another pass; those searched for in
        # the whole pass and not met are not in the dump
        missing_targets = ({dst for dst in tally.redirects.values() if dst not in seen}
                           - searched_whole_pass - tally.kept)
        if not missing_targets or passes > plan.max_hops:
            break
        wanted = missing_targets
        scan_all = False
        task = CorpusTask(False, plan.infoboxes, plan.options, plan.url_base)
    tally.pages = pages_read  # pages read from the dump (units hold the selected ones only)
    not_found = sorted(t for t in set(plan.titles) | set(tally.redirects.values())
                       if t not in seen and t not in tally.kept)
    return {"passes": passes, "stopped_early": bool(stopped_early), "not_in_dump": not_found}


# --- assembly --------------------------------------------------------------------------------


def _labels(c: Concept) -> list[str]:
    out: dict[str, None] = {}
    for s in [c.label, *c.aliases]:
        if s:
            out.setdefault(s, None)
    return list(out)


def _enrich(doc: dict, concepts: _Concepts, redirected_from: list[str]) -> dict:
    title = doc["title"]
    concept = concepts.by_title.get(title)
    via = None
    if concept is None:
        for src in redirected_from:
            concept = concepts.by_title.get(src)
            if concept is not None:
                via = src
                break
    if concept is not None:
        dc = {"id": concept.id, "label": concept.label, "labels": _labels(concept), "resolved": True,
              "matched_by": "sitelink" if via is None else f"sitelink via redirect {via!r}"}
        events = [{"id": q, "label": concepts.by_id[q].label if q in concepts.by_id else None} for q in concept.seed_classes]
    else:
        dc = {"id": None, "label": title, "labels": [], "resolved": False, "matched_by": None}
        events = []
    out = {
        "schema_version": "1",
        "id": doc["id"], "title": title, "url": doc["url"], "document_concept": dc,
        "text": doc["text"], "first_section": doc["first_section"], "categories": doc["categories"],
        "infobox": doc["infobox"], "headings": doc["headings"], "event_concepts": events,
        "timelines": doc["timelines"], "revision_id": doc["revision_id"], "timestamp": doc["timestamp"],
        "sections": doc["sections"], "selected_by": doc.get("selected_by", []),
        "redirects": redirected_from,
    }
    return out


def _fill(doc: dict, name: str) -> bool:
    v = doc.get(name)
    return v is not None and v != "" and v != [] and v != {}


def _assemble(parts: _Parts, concepts: _Concepts, redirects: dict[str, str], out: Path,
              fill: Counter) -> tuple[int, int, Counter]:
    """Merge the parts in dump order, drop duplicate pages, add the Wikidata fields, validate,
    write ``out`` atomically. Returns (documents, resolved, selected_by counts)."""
    into: dict[str, list[str]] = {}
    for src, dst in sorted(redirects.items()):
        into.setdefault(dst, []).append(src)
    # a redirect chain a -> b -> c: c was reached from a too
    for dst in list(into):
        for src in list(into[dst]):
            if src in into:
                into[dst].extend(s for s in into[src] if s not in into[dst])
    streams = [parts.docs(prefix) for prefix in parts.rounds()]
    merged = heapq.merge(*streams, key=lambda item: item[0])
    seen_ids: set[int] = set()
    n = resolved = 0
    selected: Counter = Counter()
    with atomic_write(out) as fh:
        for _, raw in merged:
            if raw["id"] in seen_ids:
                continue
            seen_ids.add(raw["id"])
            doc = _enrich(raw, concepts, into.get(raw["title"], []))
            try:
                CorpusDocument.model_validate(doc)
            except ValidationError as exc:
                raise SchemaError(f"document {raw['title']!r} breaks the CorpusDocument contract: "
                                  f"{format_validation_error(exc)}") from None
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")
            n += 1
            resolved += int(doc["document_concept"]["resolved"])
            for s in doc["selected_by"]:
                selected[s] += 1
            for name in FILL_FIELDS:
                fill[name] += int(_fill(doc, name))
    return n, resolved, selected


# --- the entry point -------------------------------------------------------------------------


def build_documents(cfg: Config, *, concepts_path: Path, out_dir: Path, refresh: bool = False,
                    dry_run: bool = False) -> dict:
    """Build ``out_dir/corpus.jsonl`` (and ``out_dir/manifest.json``) from the configured dump.

    Reads ``[wikipedia]`` (dump, index, select, event_infoboxes, url_base, drop_sections,
    timeline_words, max_redirect_hops) and ``run.workers``; ``concepts_path`` is the Wikidata
    half's ``concepts.jsonl``. ``refresh``: rebuild even when the outputs are current, and
    drop checkpoints. ``dry_run``: validate the settings and return the plan, reading no dump.

    Returns ``{"counts": {...}, "notes": [...], "outputs": {...}}`` (``"plan"`` too on a dry
    run). Raises SourceError (no dump, no index, no concepts file where one is needed),
    ConfigError (a bad ``select``), SchemaError (an unreadable concepts file). Bad streams and
    pages do not raise: they are counted, logged and listed in the manifest.
    """
    concepts_path = Path(concepts_path)
    out_dir = Path(out_dir)
    plan, concepts = _make_plan(cfg, concepts_path, dry_run)
    lines = _plan_lines(plan, concepts_path, out_dir)
    if dry_run:
        return {"counts": {"titles_wanted": len(plan.titles)}, "notes": [f"plan: {x}" for x in lines] + plan.notes,
                "plan": lines, "outputs": {}}

    inputs = {"dump": _describe(plan.dump)}
    if plan.index is not None:
        inputs["index"] = _describe(plan.index)
    if concepts_path.is_file():
        inputs["concepts"] = _describe(concepts_path)
    if plan.infobox_path is not None:
        inputs["event_infoboxes"] = _describe(plan.infobox_path)
    settings = {k: v for k, v in cfg["wikipedia"].items()}
    fp = fingerprint("corpus.wikipedia", CONVERTER_VERSION, plan.mode, settings,
                     {k: {kk: vv for kk, vv in v.items() if kk != "path"} for k, v in inputs.items()})
    corpus_path = out_dir / CORPUS_NAME
    previous = read_manifest(out_dir)
    if (not refresh and previous is not None and previous.get("fingerprint") == fp and corpus_path.is_file()
            and previous.get("outputs", {}).get("corpus_sha256") == _sha(corpus_path)):
        notes = [f"up to date: {corpus_path} was built from the same inputs and settings (--force rebuilds)"]
        return {"counts": previous.get("counts", {}), "notes": notes + previous.get("notes", []),
                "outputs": {"corpus": str(corpus_path), "manifest": str(out_dir / "manifest.json")}}

    # Is it a dump at all (random bytes, a text file, a compressed HTML error page)? Checked
    # before anything is read, so an unreadable file stops here with one line.
    dumplib.check_dump(plan.dump)
    started = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = _Parts(out_dir / PARTS_DIR, fp, refresh)
    tally = _Tally()
    log.info("wikipedia: %s", "; ".join(lines[:3]))
    bar = progress(total=0, unit="B", unit_scale=True, unit_divisor=1024, desc="enwiki dump",
                   mode=str(cfg.get("run.progress", "auto")))
    try:
        if plan.index is not None:
            read_info = _read_indexed(plan, parts, tally, bar)
            missing = read_info["not_in_index"]
        else:
            read_info = _read_sequential(plan, parts, tally, bar)
            missing = read_info["not_in_dump"]
    finally:
        bar.close()
    read_s = time.perf_counter() - started

    truncated = [f for f in tally.failures if f["kind"] == "stream" and f["message"].startswith("truncated")]
    if truncated:
        # A download cut short: a corpus from part of a dump would silently lose documents.
        raise SourceError(
            f"the dump {plan.dump} is truncated (stream at byte {truncated[0]['offset']}: {truncated[0]['message']})",
            hint="download it again; the existing corpus is left as it is")
    fill: Counter = Counter()
    n, resolved, selected = _assemble(parts, concepts, tally.redirects, corpus_path, fill)
    failures_by_kind = Counter(f["kind"] for f in tally.failures)
    counts = {
        "documents": n,
        "resolved": resolved,
        "unresolved": n - resolved,
        "selected_by_concepts": selected.get("concepts", 0),
        "selected_by_infobox": selected.get("infobox", 0),
        "titles_wanted": len(plan.titles),
        "titles_missing": len(missing),
        "redirects_followed": len(tally.redirects),
        "pages_seen": tally.pages,
        "pages_parsed": tally.parsed,
        "mb_read": round(tally.bytes / 1e6, 3),
        "failures": len(tally.failures),
        "failures_by_kind": dict(sorted(failures_by_kind.items())),
        "fill_rates": {k: round(fill[k] / n, 4) if n else 0.0 for k in FILL_FIELDS},
    }
    if plan.index is not None:
        counts["streams_read"] = tally.streams
        counts["streams_in_dump"] = read_info["streams_in_dump"]
    notes = list(plan.notes)
    if missing:
        notes.append(f"{len(missing)} wanted titles are not in the dump: " + ", ".join(missing[:10])
                     + (", ..." if len(missing) > 10 else "") + " (all in the manifest)")
    if tally.skipped:
        notes.append(f"{len(tally.skipped)} wanted titles are not articles: "
                     + ", ".join(f"{t} ({why})" for t, why in tally.skipped[:5]))
    if tally.failures:
        notes.append(f"{len(tally.failures)} failures ({', '.join(f'{k}: {v}' for k, v in sorted(failures_by_kind.items()))}); "
                     "each is listed in the manifest with its stream offset or page title")
    if tally.resumed_units:
        notes.append(f"resumed: {tally.resumed_units} of {tally.units} units were done by an earlier run")
    if n == 0:
        why = (f"none of the {len(plan.titles)} wanted titles is in the dump" if plan.mode == "concepts"
               else "no page was selected")
        log.warning("warning: the corpus is empty: %s (select: %s; --select infobox or both picks articles by "
                    "their event infobox)", why, plan.mode)
        notes.append(f"the corpus is empty: {why}")
    if n and not resolved:
        notes.append(f"no document matched a Wikidata concept by its sitelink title ({len(concepts.by_title)} "
                     "enwiki titles in the concepts file, none of them a page read here): document_concept.id is "
                     "null and event_concepts empty throughout")
    no_ts = n - fill["timestamp"]
    if no_ts:
        notes.append(f"{no_ts} documents have no revision timestamp (the dump gives none for them)")

    outputs = {"corpus": str(corpus_path), "manifest": str(out_dir / "manifest.json")}
    manifest = build_manifest(
        "corpus.wikipedia", cfg,
        outputs={**outputs, "corpus_sha256": _sha(corpus_path)},
        counts=counts,
        timings={"read_and_convert": read_s, "total": time.perf_counter() - started},
        notes=notes,
        extra={
            "fingerprint": fp,
            "converter_version": CONVERTER_VERSION,
            "selection": {"mode": plan.mode, "requested": str(cfg.get("wikipedia.select")),
                          "bundled_snapshot": plan.bundled, "workers": plan.workers,
                          "engine": "ray" if plan.ray is not None else "local",
                          "read": "index" if plan.index is not None else "sequential", **read_info},
            "missing_titles": missing[:10000],
            "redirects": dict(sorted(tally.redirects.items())),
            "failures": tally.failures[:10000],
        },
    )
    manifest["inputs"] = inputs
    write_manifest(out_dir, manifest)
    shutil.rmtree(parts.folder, ignore_errors=True)
    return {"counts": counts, "notes": notes, "outputs": outputs}


def _sha(path: Path) -> str:
    from causalkg.manifest import file_sha256

    return file_sha256(path)


__all__ = ["build_documents", "EventInfoboxes", "CorpusTask", "page_url", "SELECT_MODES"]
