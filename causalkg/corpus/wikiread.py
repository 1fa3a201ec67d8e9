"""The Wikipedia half of ``corpus build``, reading the dump: the page task that runs in the worker
processes (or Ray tasks), the per-unit checkpoints (``causalkg.core.shards``), the tally of what was
read, and the two ways through a dump (by its multistream index, or in one sequential pass).
"""

from __future__ import annotations

import heapq
import json
import logging
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from causalkg.core.jsonl import atomic_write
from causalkg.core.shards import Shards
from causalkg.corpus import dump as dumplib
from causalkg.corpus.dump import Failure, Page, Unit, UnitResult, normalize_title
from causalkg.corpus.wikitext import ConvertOptions, convert_wikitext, infobox_names
from causalkg.corpus.wikiplan import SEQ_BATCH_BYTES, SEQ_BATCH_PAGES, _Plan, EventInfoboxes


log = logging.getLogger(__name__)


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


# --- checkpoints -----------------------------------------------------------------------------


class _Parts:
    """Per-unit checkpoints (a ``causalkg.core.shards`` folder): ``<key>.jsonl`` holds one kept document
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
