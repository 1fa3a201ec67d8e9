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

The pieces: ``corpus/wikiplan.py`` (inputs, selection, the plan), ``corpus/wikiread.py`` (the page
task, checkpoints, reading the dump); this module assembles the corpus and holds the entry point.
"""

from __future__ import annotations

import heapq
import json
import logging
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from causalkg.core.config import Config
from causalkg.core.contracts import CorpusDocument
from causalkg.core.errors import SchemaError, SourceError
from causalkg.core.jsonl import atomic_write, format_validation_error, shrink_allowed
from causalkg.core.manifest import build_manifest, fingerprint, read_manifest, write_manifest
from causalkg.core.interrupts import Interrupted
from causalkg.core.progress import progress
from causalkg.corpus import dump as dumplib
from causalkg.corpus.wikitext import CONVERTER_VERSION
from causalkg.corpus.wikiplan import (
    CORPUS_NAME, FILL_FIELDS, PARTS_DIR, SELECT_MODES, EventInfoboxes, _Concepts, _describe, _make_plan, _TitledConcept,
    _Plan, _plan_lines,
)
from causalkg.corpus.wikiread import CorpusTask, page_url, _Parts, _read_indexed, _read_sequential, _Tally
# Re-exported: the names callers and tests import from here.
from causalkg.corpus.wikiplan import HASH_LIMIT, SEQ_BATCH_BYTES, SEQ_BATCH_PAGES  # noqa: F401

log = logging.getLogger(__name__)


# --- assembly --------------------------------------------------------------------------------


def _labels(c: _TitledConcept) -> list[str]:
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
        events = [{"id": q, "label": concepts.labels.get(q)} for q in concept.seed_classes]
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
              fill: Counter, guard: Callable[[int], None] | None = None) -> tuple[int, int, Counter]:
    """Merge the parts in dump order, drop duplicate pages, add the Wikidata fields, validate,
    write ``out`` atomically. ``guard(documents)`` may refuse the result before it replaces
    ``out`` (by raising). Returns (documents, resolved, selected_by counts)."""
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
        if guard is not None:
            guard(n)
    return n, resolved, selected


def _losses(failures: list[dict]) -> str:
    """Where a run lost documents, for people: the damaged streams by offset and the pages by
    title (the first few of each; every one is in the manifest)."""
    streams = sorted({f["offset"] for f in failures if f["kind"] == "stream" and f.get("offset") is not None})
    pages = sorted({f["title"] for f in failures if f.get("title")})
    other = [f for f in failures if not f.get("title") and f["kind"] != "stream"]
    parts = []
    if streams:
        parts.append(f"{len(streams)} damaged dump stream{'s' if len(streams) != 1 else ''} at byte "
                     + ", ".join(str(o) for o in streams[:5]) + (", ..." if len(streams) > 5 else ""))
    if pages:
        parts.append(f"{len(pages)} page{'s' if len(pages) != 1 else ''} lost: "
                     + ", ".join(repr(t) for t in pages[:5]) + (", ..." if len(pages) > 5 else ""))
    if other:
        parts.append(f"{len(other)} other failure{'s' if len(other) != 1 else ''} ({other[0]['message']})")
    return "; ".join(parts)


def _previous_documents(corpus_path: Path) -> int:
    """Documents in the corpus a run would replace (0 when there is none)."""
    if not corpus_path.is_file():
        return 0
    with corpus_path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


# --- the entry point -------------------------------------------------------------------------


def _fingerprint(cfg: Config, plan: _Plan, concepts_path: Path) -> tuple[dict[str, Any], str]:
    """The inputs as the manifest describes them, and the fingerprint of inputs and settings."""
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
    return inputs, fp


def _up_to_date(out_dir: Path, fp: str) -> dict | None:
    """The result of a run with the same fingerprint whose corpus is intact, else None."""
    corpus_path = out_dir / CORPUS_NAME
    previous = read_manifest(out_dir)
    if (previous is not None and previous.get("fingerprint") == fp and corpus_path.is_file()
            and previous.get("outputs", {}).get("corpus_sha256") == _sha(corpus_path)):
        notes = [f"up to date: {corpus_path} was built from the same inputs and settings (--force rebuilds)"]
        return {"counts": previous.get("counts", {}), "notes": notes + previous.get("notes", []),
                "outputs": {"corpus": str(corpus_path), "manifest": str(out_dir / "manifest.json")}}
    return None


def _read_dump(cfg: Config, plan: _Plan, parts: _Parts, tally: _Tally) -> tuple[dict[str, Any], list[str]]:
    """Read the wanted pages, through the index or in one pass. Returns the read info and the
    wanted titles not found."""
    bar = progress(total=0, unit="B", unit_scale=True, unit_divisor=1024, desc="enwiki dump",
                   mode=str(cfg.get("run.progress", "auto")))
    try:
        if plan.index is not None:
            read_info = _read_indexed(plan, parts, tally, bar)
            return read_info, read_info["not_in_index"]
        read_info = _read_sequential(plan, parts, tally, bar)
        return read_info, read_info["not_in_dump"]
    finally:
        bar.close()


def _counts(plan: _Plan, tally: _Tally, read_info: dict[str, Any], missing: list[str], n: int, resolved: int,
            selected: Counter, fill: Counter) -> dict[str, Any]:
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
    return counts


def _notes(plan: _Plan, tally: _Tally, missing: list[str], n: int, resolved: int, concepts: _Concepts,
           fill: Counter) -> list[str]:
    """What the run says about itself: missing titles, failures, resumption, an empty corpus."""
    failures_by_kind = Counter(f["kind"] for f in tally.failures)
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
        notes.append(f"documents lost to a damaged dump (--lenient): {_losses(tally.failures)}")
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
    return notes


def build_documents(cfg: Config, *, concepts_path: Path, out_dir: Path, refresh: bool = False,
                    dry_run: bool = False, lenient: bool = False) -> dict:
    """Build ``out_dir/corpus.jsonl`` (and ``out_dir/manifest.json``) from the configured dump.

    Reads ``[wikipedia]`` (dump, index, select, event_infoboxes, url_base, drop_sections,
    timeline_words, max_redirect_hops) and ``run.workers``; ``concepts_path`` is the Wikidata
    half's ``concepts.jsonl``. ``refresh``: rebuild even when the outputs are current, and
    drop checkpoints. ``dry_run``: validate the settings and return the plan, reading no dump.

    Returns ``{"counts": {...}, "notes": [...], "outputs": {...}}`` (``"plan"`` too on a dry
    run). Raises SourceError (no dump, no index, no concepts file where one is needed),
    ConfigError (a bad ``select``), SchemaError (an unreadable concepts file).

    Bad streams and pages lose documents. Then, unless ``lenient``, nothing is replaced: a
    SourceError says how many were lost and where (stream offsets, page titles), and a rerun
    resumes from the pages already read. With ``lenient`` the corpus is built without them
    (counted, listed in the notes and the manifest), but it does not replace a corpus with more
    documents unless shrinking is allowed (``allowing_empty_outputs``, the CLI's
    ``--allow-shrink``): ``refresh`` (``--force``) never allows it.
    """
    concepts_path = Path(concepts_path)
    out_dir = Path(out_dir)
    plan, concepts = _make_plan(cfg, concepts_path, dry_run)
    lines = _plan_lines(plan, concepts_path, out_dir)
    if dry_run:
        return {"counts": {"titles_wanted": len(plan.titles)}, "notes": [f"plan: {x}" for x in lines] + plan.notes,
                "plan": lines, "outputs": {}}

    inputs, fp = _fingerprint(cfg, plan, concepts_path)
    corpus_path = out_dir / CORPUS_NAME
    current = None if refresh else _up_to_date(out_dir, fp)
    if current is not None:
        return current

    # Is it a dump at all (random bytes, a text file, a compressed HTML error page)? Checked
    # before anything is read, so an unreadable file stops here with one line.
    dumplib.check_dump(plan.dump)
    started = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = _Parts(out_dir / PARTS_DIR, fp, refresh)
    tally = _Tally()
    log.info("wikipedia: %s", "; ".join(lines[:3]))
    try:
        read_info, missing = _read_dump(cfg, plan, parts, tally)
    except KeyboardInterrupt as exc:
        raise Interrupted.of(exc, f"{_parts(len(parts.shards.keys()))} of the dump read done and kept in {parts.folder}; "
                                  f"run the same command again to resume") from None
    read_s = time.perf_counter() - started

    truncated = [f for f in tally.failures if f["kind"] == "stream" and f["message"].startswith("truncated")]
    if truncated:
        # A download cut short: a corpus from part of a dump would silently lose documents.
        raise SourceError(
            f"the dump {plan.dump} is truncated (stream at byte {truncated[0]['offset']}: {truncated[0]['message']})",
            hint="download it again; the existing corpus is left as it is")
    losses = _losses(tally.failures) if tally.failures else ""
    if losses and not lenient:
        raise SourceError(
            f"the dump {plan.dump} lost documents: {losses}; {corpus_path} is left as it is",
            hint="rerun with --lenient to build the corpus without them (the pages read are kept: it resumes), "
                 "or repair or download the dump again")
    before = _previous_documents(corpus_path) if losses else 0

    def refuse_a_smaller_corpus(n: int) -> None:
        if losses and n < before and not shrink_allowed():
            raise SourceError(
                f"refusing to replace {corpus_path} ({before} documents) with {n}: the dump lost documents "
                f"({losses}); the existing corpus is kept",
                hint="rerun with --allow-shrink to accept the smaller corpus, or repair the dump")

    fill: Counter = Counter()
    n, resolved, selected = _assemble(parts, concepts, tally.redirects, corpus_path, fill,
                                      guard=refuse_a_smaller_corpus)
    counts = _counts(plan, tally, read_info, missing, n, resolved, selected, fill)
    notes = _notes(plan, tally, missing, n, resolved, concepts, fill)

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


def _parts(n: int) -> str:
    return f"{n} part" if n == 1 else f"{n} parts"


def _sha(path: Path) -> str:
    from causalkg.core.manifest import file_sha256

    return file_sha256(path)


__all__ = ["build_documents", "EventInfoboxes", "CorpusTask", "page_url", "SELECT_MODES"]
