"""``causalkg corpus build``: the Wikidata files, then the Wikipedia documents.

``build`` runs the Wikidata part (``build_wikidata``) into ``<paths.data>/wikidata/`` and then,
unless ``only="wikidata"``, the Wikipedia part (``corpus.wikipedia.build_documents``) into
``<paths.data>/corpus/``.

``build_wikidata`` picks the source (``live``: the SPARQL endpoint; ``snapshot``: the bundled
subset in an embedded Oxigraph store; ``auto``: live when the endpoint answers a tiny probe
quickly, else the snapshot, with a warning on stderr), runs every query first, and only then
writes, atomically and together:

- ``event_classes.jsonl``  (``EventClass``): seed classes, then classes discovered via Wikinews;
- ``concepts.jsonl``       (``Concept``): seed and Base KG classes, instances of seed classes,
  and the Base KG's example instances;
- ``base_kg.jsonl``        (``BaseKGLine``): the WikiCausal base-KG shape;
- ``manifest.json``: resolved config, source and endpoint, counts, query statistics, what could
  not be computed and why, timings.

An error anywhere leaves no partial file behind (and earlier outputs untouched). Answers from
the endpoint are cached on disk, so a killed run restarted costs no repeated requests.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from causalkg.core.cache import DiskCache
from causalkg.core.config import Config
from causalkg.core.errors import CausalKGError, ConfigError, SourceError
from causalkg.core.jsonl import atomic_write, to_json_line
from causalkg.core.manifest import build_manifest, file_sha256, write_manifest
from causalkg.core.progress import progress
from causalkg.core.retry import RetryPolicy
from causalkg.corpus import basekg, queries, wikidata
from causalkg.corpus.dump import default_workers
from causalkg.corpus.jsondump import DumpFilter, JsonDumpEngine
from causalkg.corpus.snapshot import SNAPSHOT_CAUSAL_PROPERTY, SnapshotEngine
from causalkg.corpus.sparql import Engine, SPARQLClient
from causalkg.core.layout import Layout

log = logging.getLogger(__name__)

SOURCES = ("live", "snapshot", "auto", "json-dump")
ONLY = ("wikidata", "wikipedia")
OUTPUT_FILES = {"event_classes": "event_classes.jsonl", "concepts": "concepts.jsonl", "base_kg": "base_kg.jsonl"}


def wikidata_dir(cfg: Config) -> Path:
    return Layout.from_config(cfg).wikidata_dir


def corpus_dir(cfg: Config) -> Path:
    return Layout.from_config(cfg).corpus_dir


def make_client(cfg: Config, *, endpoint: str | None = None, refresh: bool = False,
                sleep: Callable[[float], None] = time.sleep) -> SPARQLClient:
    """A SPARQLClient configured from ``[wikidata]``, caching under ``paths.cache``."""
    w = cfg["wikidata"]
    return SPARQLClient(
        endpoint or w["endpoint"],
        user_agent=w["user_agent"],
        timeout=float(w["timeout"]),
        policy=RetryPolicy(max_retries=int(w["max_retries"]), base=float(w["backoff_base"]),
                           cap=float(w["backoff_cap"])),
        cache=DiskCache(cfg.path("paths.cache") / "sparql.sqlite"),
        refresh=refresh,
        method=str(w.get("method", "auto")),
        server_timeout_param=str(w.get("server_timeout_param", "timeout")),
        sleep=sleep,
    )


def resolve_source(cfg: Config, source: str | None, *, probe: bool = True,
                   sleep: Callable[[float], None] = time.sleep) -> tuple[str, str]:
    """``(live|snapshot, why)`` for the requested source (default ``wikidata.source``).

    ``auto`` probes the endpoint once (``wikidata.probe_timeout`` seconds, no retries) unless
    ``probe`` is false (dry runs), and falls back to the snapshot with a warning on stderr.
    """
    source = source or str(cfg.get("wikidata.source"))
    if source not in SOURCES:
        raise ConfigError(f"--source must be one of {', '.join(SOURCES)}, got {source!r}")
    endpoint = str(cfg.get("wikidata.endpoint") or "")
    if source == "snapshot":
        return "snapshot", "requested"
    if source == "json-dump":
        if not str(cfg.get("wikidata.dump") or ""):
            raise ConfigError("--source json-dump needs a dump", hint="pass --wikidata-dump PATH or set wikidata.dump")
        return "json-dump", "requested"
    if not endpoint:
        if source == "live":
            raise ConfigError("--source live needs an endpoint", hint="set wikidata.endpoint or pass --endpoint URL")
        log.warning("warning: no Wikidata endpoint configured: using the bundled snapshot %s", cfg.get("wikidata.snapshot"))
        return "snapshot", "no endpoint configured"
    if source == "live":
        return "live", "requested"
    if not probe:
        return "auto", f"would probe {endpoint}, falling back to the bundled snapshot"
    client = make_client(cfg, sleep=sleep)
    reason = client.probe(queries.probe(), float(cfg.get("wikidata.probe_timeout", 5.0)))
    if reason is None:
        return "live", f"{endpoint} answered the probe"
    log.warning(
        "warning: the Wikidata endpoint %s did not answer (%s): using the bundled snapshot %s instead; "
        "it has no Wikinews sitelinks and no instance counts (see the manifest's notes)",
        endpoint, reason, cfg.get("wikidata.snapshot"),
    )
    return "snapshot", f"{endpoint} did not answer the probe: {reason}"


def dump_filter(s: wikidata.WikidataSettings) -> DumpFilter:
    """What a JSON dump conversion keeps: what the queries read under these settings."""
    props = ("P31", "P279", *s.subject_properties, *s.object_properties)
    return DumpFilter(languages=tuple(s.languages), properties=tuple(dict.fromkeys(props)),
                      sites=tuple(dict.fromkeys((s.wikipedia_site, s.wikinews_site))))


def plan(cfg: Config, source: str, why: str, s: wikidata.WikidataSettings) -> list[str]:
    """The dry-run plan: what would be read, asked and written."""
    out = wikidata_dir(cfg)
    src = (f"snapshot {cfg.path('wikidata.snapshot')}" if source == "snapshot"
           else f"JSON dump {cfg.path('wikidata.dump')}" if source == "json-dump"
           else f"endpoint {cfg.get('wikidata.endpoint')}" if source == "live"
           else f"auto: {why}")
    return [
        f"source: {src}" + (f" ({why})" if source in ("live", "snapshot", "json-dump") and why != "requested" else ""),
        f"seed classes: {len(s.seeds)} ({', '.join(s.seeds[:5])}{', ...' if len(s.seeds) > 5 else ''})",
        f"discover event classes: Wikinews-linked items' classes under {s.root_class} ({s.wikinews_site})",
        f"instances: P31/P279* of each seed class, pages of {s.page_size}",
        f"causal facts: {', '.join(s.subject_properties)} (subject is the cause), "
        f"{', '.join(s.object_properties)} (object is the cause), VALUES batches of {s.values_batch}",
        f"terms: labels/aliases/descriptions in {', '.join(s.languages)}, P31, P279, {s.wikipedia_site} titles",
        f"counts: {s.counts}",
        f"cache: {cfg.path('paths.cache') / 'sparql.sqlite'}",
        *(f"write: {out / name}" for name in [*OUTPUT_FILES.values(), "manifest.json"]),
    ]


def _dry_run(cfg: Config, chosen: str, why: str, settings: wikidata.WikidataSettings) -> dict[str, Any]:
    """Validate what a real run would open first (the endpoint URL and User-Agent, the snapshot,
    the dump) and return the plan."""
    snapshot_path = cfg.input_path("wikidata.snapshot")
    if chosen in ("live", "auto"):
        make_client(cfg)
    if chosen == "snapshot" and not snapshot_path.is_file():
        SnapshotEngine(snapshot_path)  # raises the missing-snapshot error
    if chosen == "json-dump" and not cfg.path("wikidata.dump").is_file():
        raise SourceError(f"the Wikidata JSON dump {cfg.path('wikidata.dump')} does not exist",
                          hint="pass --wikidata-dump PATH")
    steps = plan(cfg, chosen, why, settings)
    if chosen == "auto":
        steps.insert(1, f"fallback snapshot: {snapshot_path}" + ("" if snapshot_path.is_file() else " (MISSING)"))
    return {"source": chosen, "endpoint": cfg.get("wikidata.endpoint"), "counts": {}, "notes": [],
            "outputs": {}, "plan": steps}


def _open_engine(cfg: Config, chosen: str, settings: wikidata.WikidataSettings, *, refresh: bool,
                 sleep: Callable[[float], None], timings: dict[str, float]) -> Engine:
    """The engine the queries go to: the endpoint, the JSON dump's store, or the snapshot."""
    if chosen == "live":
        return make_client(cfg, refresh=refresh, sleep=sleep)
    t0 = time.perf_counter()
    engine: Engine
    if chosen == "json-dump":
        engine = JsonDumpEngine(cfg.path("wikidata.dump"), cfg.path("paths.cache"), dump_filter(settings),
                                workers=default_workers(int(cfg.get("run.workers", 0) or 0)))
        timings["load_json_dump"] = time.perf_counter() - t0
    else:
        engine = SnapshotEngine(cfg.input_path("wikidata.snapshot"), cache_dir=cfg.path("paths.cache"),
                                store=str(cfg.get("wikidata.snapshot_store")),
                                disk_mb=float(cfg.get("wikidata.snapshot_disk_mb")))
        timings["load_snapshot"] = time.perf_counter() - t0
    return engine


@dataclass
class _Fetched:
    """What the queries brought back."""

    discovered: dict
    instances: dict
    members: set[str]
    facts: list
    terms: dict[str, wikidata.Terms]
    class_set: set[str]
    superclasses: Any
    counts: dict[str, tuple[int, int]] | None


def _fetch(cfg: Config, engine: Engine, settings: wikidata.WikidataSettings, *, counting: bool,
           timings: dict[str, float]) -> _Fetched:
    """Ask every query of the build, step by step, timing each step."""
    # A live build asks thousands of queries: the bar counts them, its postfix names the step.
    steps = progress(desc="wikidata", unit="query", mode=str(cfg.get("run.progress")))
    counted = _Counted(engine, steps)

    def step(name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        steps.set_postfix_str(name)
        value = fn()
        timings[name] = time.perf_counter() - t0
        return value

    try:
        discovered = step("discover", lambda: wikidata.discover_event_classes(counted, settings))
        instances = step("instances", lambda: wikidata.instances_of_seeds(counted, settings))
        members = {x for items in instances.values() for x in items}
        facts = step("facts", lambda: basekg.fetch_causal_facts(counted, members | set(settings.seeds), settings))

        def all_terms() -> dict[str, wikidata.Terms]:
            wanted = set(settings.seeds) | set(discovered) | members | {f.effect for f in facts}
            terms = wikidata.fetch_terms(counted, wanted, settings)
            more = basekg.consequence_classes(settings.seeds, instances, facts, terms) - set(terms)
            terms.update(wikidata.fetch_terms(counted, more, settings))
            return terms

        terms = step("terms", all_terms)
        consequence_classes = basekg.consequence_classes(settings.seeds, instances, facts, terms)
        class_set = set(settings.seeds) | consequence_classes
        superclasses = step("superclasses", lambda: wikidata.seed_superclasses(counted, class_set, settings))

        def all_counts() -> dict[str, tuple[int, int]] | None:
            if not counting:
                return None
            wanted = class_set | set(discovered)
            news = wikidata.sitelinked_counts(counted, wanted, settings.wikinews_site, settings)
            wiki = wikidata.sitelinked_counts(counted, wanted, settings.wikipedia_site, settings)
            return {q: (news[q], wiki[q]) for q in wanted}

        counts = step("counts", all_counts)
    finally:
        steps.close()
        if isinstance(engine, SPARQLClient) and engine.cache is not None:
            engine.cache.close()
    return _Fetched(discovered, instances, members, facts, terms, class_set, superclasses, counts)


def _output_counts(f: _Fetched, event_classes: list, concepts: Mapping[str, int], kg_lines: int,
                   kg_pairs: Mapping[str, set], kg_stats: Any) -> dict[str, Any]:
    return {
        "event_classes": len(event_classes),
        "event_classes_seed": sum(1 for e in event_classes if e.seed),
        "event_classes_discovered": len(f.discovered),
        "concepts": concepts["concepts"],
        "concepts_class": concepts["concepts_class"],
        "concepts_instance": concepts["concepts_instance"],
        "concepts_with_enwiki_title": concepts["concepts_with_enwiki_title"],
        "instances_of_seed_classes": len(f.members),
        "base_kg_lines": kg_lines,
        "base_kg_class_pairs": len(kg_pairs["class"]),
        "base_kg_instance_pairs": len(kg_pairs["instance"]),
        **{f"base_kg_{k}": v for k, v in kg_stats.to_dict().items()},
    }


def build_wikidata(
    cfg: Config,
    *,
    source: str | None = None,
    refresh: bool = False,
    dry_run: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Build the Wikidata files under ``<paths.data>/wikidata/``.

    ``source``: live | snapshot | auto (default ``wikidata.source``); ``refresh``: ask the
    endpoint again instead of reading the cache; ``dry_run``: validate and return the plan.
    Returns ``{"source", "endpoint", "counts", "notes", "outputs", "plan"}``. Raises
    ConfigError for bad settings, SourceError when the endpoint or snapshot fails.
    """
    settings = wikidata.WikidataSettings.from_config(cfg)
    if cfg.input_path("wikidata.snapshot") is None:
        raise ConfigError("wikidata.snapshot is empty", hint="name the bundled snapshot file or another N-Triples file")
    chosen, why = resolve_source(cfg, source, probe=not dry_run, sleep=sleep)
    if dry_run:
        return _dry_run(cfg, chosen, why, settings)

    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    engine = _open_engine(cfg, chosen, settings, refresh=refresh, sleep=sleep, timings=timings)
    endpoint = engine.endpoint
    # The JSON dump has every sitelink, like the live service: counts are computed from it too.
    counting = settings.counts == "always" or (settings.counts == "auto" and chosen in ("live", "json-dump"))
    f = _fetch(cfg, engine, settings, counting=counting, timings=timings)

    notes, not_computed = _notes(chosen, f.discovered, counting, settings)
    count_note = not_computed[0]["why"] if not counting else None
    event_classes = wikidata.event_class_records(settings.seeds, f.discovered, f.terms, f.counts, count_note)
    # The Base KG's lines are written as they are made, their pairs counted on the way.
    kg_stats = basekg.BaseKGStats()
    kg_pairs: dict[str, set] = {"class": set(), "instance": set()}

    def lines() -> Iterator[Any]:
        for line in basekg.iter_base_kg(settings.seeds, f.instances, f.facts, f.terms, counts=f.counts,
                                        max_examples=settings.max_examples, stats=kg_stats):
            dumped = [line.model_dump()]  # once for both counts
            kg_pairs["class"] |= basekg.class_pairs(dumped)
            kg_pairs["instance"] |= basekg.instance_pairs(dumped)
            yield line

    # The effects of lifted facts join the vocabulary (as instances) even when they are not
    # instances of a seed class: the linker must be able to name both ends of an example.
    lifted_effects = {x.effect for x in f.facts
                      if x.cause in f.members and basekg.effect_classes(f.terms.get(x.effect))}
    # The concepts are written as they are made, counted on the way (not held as a list).
    concept_counts = {"concepts": 0, "concepts_class": 0, "concepts_instance": 0, "concepts_with_enwiki_title": 0}

    def concepts() -> Iterator[Any]:
        for c in wikidata.concept_records(settings.seeds, f.class_set, f.instances, lifted_effects, f.terms,
                                          f.superclasses):
            concept_counts["concepts"] += 1
            concept_counts[f"concepts_{c.kind}"] += 1
            concept_counts["concepts_with_enwiki_title"] += bool(c.enwiki_title)
            yield c

    out_dir = wikidata_dir(cfg)
    t0 = time.perf_counter()
    outputs = _write_all(out_dir, {"event_classes": event_classes, "concepts": concepts(), "base_kg": lines()})
    timings["write"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_all

    counts_out = _output_counts(f, event_classes, concept_counts, outputs["base_kg"]["records"], kg_pairs, kg_stats)
    stats = engine.stats.to_dict()
    manifest = build_manifest(
        "corpus.wikidata", cfg,
        inputs=({"snapshot": cfg.input_path("wikidata.snapshot")} if chosen == "snapshot"
                else {"json_dump": cfg.path("wikidata.dump")} if chosen == "json-dump" else None),
        outputs=outputs, counts=counts_out, timings=timings, notes=notes,
        extra={"source": chosen, "source_reason": why, "endpoint": endpoint,
               "user_agent": cfg.get("wikidata.user_agent") if chosen == "live" else None,
               "queries": stats, "not_computed": not_computed,
               **({"json_dump": engine.converted, "json_dump_store": str(engine.store_path)}
                  if isinstance(engine, JsonDumpEngine) else {})},
    )
    write_manifest(out_dir, manifest)
    return {"source": chosen, "endpoint": endpoint, "counts": counts_out, "notes": notes, "outputs": outputs,
            "queries": stats, "plan": []}


class _Counted:
    """An Engine that ticks a progress bar for every query it passes on."""

    def __init__(self, engine: Engine, bar: Any):
        self.engine = engine
        self.endpoint = engine.endpoint
        self.bar = bar

    def select(self, query: queries.Query) -> dict[str, Any]:
        doc = self.engine.select(query)
        self.bar.update(1)
        return doc


def _notes(chosen: str, discovered: dict, counting: bool,
           s: wikidata.WikidataSettings) -> tuple[list[str], list[dict[str, str]]]:
    notes: list[str] = []
    not_computed: list[dict[str, str]] = []
    if not counting:
        why = ("the bundled snapshot holds English Wikipedia sitelinks for 8 items only and no Wikinews sitelinks"
               if chosen == "snapshot" else "wikidata.counts is \"never\"")
        not_computed.append({"what": "wikinews_instances / enwiki_instances (event_classes.jsonl), usage_count / "
                                     "page_count (base_kg.jsonl)", "why": why})
    if not discovered:
        why = ("the bundled snapshot holds no Wikinews sitelinks and no subclass-of (P279) statements"
               if chosen == "snapshot" else f"no item with a {s.wikinews_site} article has a class under {s.root_class}")
        not_computed.append({"what": "event class discovery (found none; the curated seed list "
                                     "wikidata.seed_classes is used as is)", "why": why})
    if chosen == "snapshot":
        not_computed.append({"what": "descriptions (concepts.jsonl)",
                             "why": "the sources of the bundled snapshot carry no descriptions"})
        notes.append(f"source: the bundled snapshot; every causal fact in it is stated with {SNAPSHOT_CAUSAL_PROPERTY} "
                     "(has effect) because base-kg-v1 does not record the original property "
                     "(see snapshots/wikidata/SOURCE.md)")
    for item in not_computed:
        notes.append(f"not computed: {item['what']}: {item['why']}")
    return notes, not_computed


def _write_all(out_dir: Path, files: dict[str, Iterable[Any]]) -> dict[str, dict[str, Any]]:
    """Write every output atomically (its records from a list or an iterator, read once); the
    renames happen only once all of them are written, so an error leaves none of them
    half-written (and the previous ones in place)."""
    outputs: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        for key, records in files.items():
            path = out_dir / OUTPUT_FILES[key]
            fh = stack.enter_context(atomic_write(path))
            n = 0
            for record in records:
                fh.write(to_json_line(record))
                fh.write("\n")
                n += 1
            outputs[key] = {"path": str(path), "records": n}
    for key, info in outputs.items():
        info["sha256"] = file_sha256(info["path"])
    return outputs


def build(
    cfg: Config,
    *,
    source: str | None = None,
    refresh: bool = False,
    only: str | None = None,
    dry_run: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    lenient: bool = False,
) -> dict[str, Any]:
    """Build the corpus: the Wikidata files, then (unless ``only="wikidata"``) the Wikipedia
    documents from the concepts file. ``only``: ``wikidata`` | ``wikipedia`` | None (both).
    ``lenient``: build the documents even when a damaged dump lost some (see
    ``build_documents``). Returns ``{"wikidata": {...}, "wikipedia": {...}}`` for the parts that ran."""
    if only is not None and only not in ONLY:
        raise ConfigError(f"--only must be one of {', '.join(ONLY)}, got {only!r}")
    result: dict[str, Any] = {}
    if only in (None, "wikidata"):
        result["wikidata"] = build_wikidata(cfg, source=source, refresh=refresh, dry_run=dry_run, sleep=sleep)
    if only in (None, "wikipedia"):
        concepts = wikidata_dir(cfg) / OUTPUT_FILES["concepts"]
        if not dry_run and not concepts.is_file():
            raise SourceError(f"no concepts file at {concepts}",
                              hint="build the Wikidata part first: causalkg corpus build --only wikidata")
        try:
            from causalkg.corpus.wikipedia import build_documents
        except ImportError as exc:
            raise CausalKGError(f"the Wikipedia part of the corpus is not available ({exc})",
                                hint="run causalkg corpus build --only wikidata") from None
        result["wikipedia"] = build_documents(cfg, concepts_path=concepts, out_dir=corpus_dir(cfg),
                                              refresh=refresh, dry_run=dry_run, lenient=lenient)
    return result


__all__ = ["build", "build_wikidata", "resolve_source", "make_client"]
