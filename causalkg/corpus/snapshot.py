"""The bundled Wikidata snapshot: how it is made, and the local engine that queries it.

``snapshots/wikidata/wikidata-snapshot.nt.gz`` is a small subset of Wikidata as N-Triples in
the Wikidata RDF vocabulary, made by ``scripts/build_wikidata_snapshot.py`` from real data only
(the WikiCausal Base KG v1 and a list of Wikidata historic events; see
``snapshots/wikidata/SOURCE.md`` for exactly what is in it and how each triple follows from the
data). ``snapshot_triples`` holds that mapping, so the script and the tests share it.

``SnapshotEngine`` loads the file into an embedded Oxigraph store and answers the very same
query text as the live endpoint, returning the same SPARQL JSON results document as
``corpus.sparql.SPARQLClient.select``; the code above cannot tell which one it talks to.

Flow: ``corpus.build`` picks this engine for ``--source snapshot`` (or ``auto`` without a
reachable endpoint).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import urllib.parse
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import pyoxigraph as ox

from causalkg.core.contracts import QID_RE
from causalkg.core.errors import ConfigError, SchemaError, SourceError
from causalkg.core.ntriples import bulk_load_slices
from causalkg.corpus.queries import ENTITY_PREFIX, Query, qid_key
from causalkg.corpus.sparql import QueryStats

WDT = "http://www.wikidata.org/prop/direct/"
RDFS_LABEL = ox.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
SKOS_ALT_LABEL = ox.NamedNode("http://www.w3.org/2004/02/skos/core#altLabel")
SCHEMA_ABOUT = ox.NamedNode("http://schema.org/about")
SCHEMA_IS_PART_OF = ox.NamedNode("http://schema.org/isPartOf")
SCHEMA_NAME = ox.NamedNode("http://schema.org/name")
ENWIKI = "https://en.wikipedia.org/"
# base-kg-v1 does not say which of the six causal properties a fact came from; the snapshot
# states every fact with "has effect" (subject is the cause), which the builder reads back.
SNAPSHOT_CAUSAL_PROPERTY = "P1542"


STORE_MODES = ("auto", "memory", "disk")
# N-Triples lines per bulk load into the on-disk store: Oxigraph's bulk loader holds a call's
# triples in memory while it sorts them, so slices keep memory flat in the file's size.
LOAD_SLICE_LINES = 200_000


class SnapshotEngine:
    """An Oxigraph store holding the snapshot; ``select(query)`` -> SPARQL JSON results.

    The store is in memory, or (``cache_dir`` given and ``store`` = ``disk``, or ``auto`` with
    the file over ``disk_mb``) an on-disk store in ``cache_dir/wikidata-snapshot/``, kept by
    a fingerprint of the file (path, size, mtime) and reused by the next run."""

    def __init__(self, path: str | Path, *, cache_dir: str | Path | None = None, store: str = "memory",
                 disk_mb: float = 25.0):
        self.path = Path(path)
        self.endpoint = f"snapshot:{self.path}"
        self.stats = QueryStats()
        if store not in STORE_MODES:
            raise ConfigError(f"wikidata.snapshot_store must be one of {', '.join(STORE_MODES)}, got {store!r}")
        if not self.path.is_file():
            raise SourceError(
                f"the bundled Wikidata snapshot is missing: {self.path}",
                hint="set wikidata.snapshot, or rebuild it with scripts/build_wikidata_snapshot.py",
            )
        on_disk = cache_dir is not None and (
            store == "disk" or (store == "auto" and self.path.stat().st_size > disk_mb * 1e6))
        self.on_disk = on_disk
        self.reused = False
        try:
            if on_disk:
                self.store = self._disk_store(Path(cache_dir))
            else:
                self.store = ox.Store()
                with self._open() as fh:
                    self.store.bulk_load(input=fh, format=ox.RdfFormat.N_TRIPLES)
        except (OSError, SyntaxError, ValueError, RuntimeError) as exc:
            raise SourceError(f"cannot load the Wikidata snapshot {self.path}: {exc}",
                              hint="another corpus build may be using the same paths.cache" if on_disk else None) from None
        self.triples = len(self.store)

    def _open(self):
        return gzip.open(self.path, "rb") if self.path.suffix == ".gz" else open(self.path, "rb")

    def _disk_store(self, cache_dir: Path) -> ox.Store:
        """The on-disk store of this file: reused when an earlier run loaded it (its ``.loaded``
        mark), else loaded afresh in slices of ``LOAD_SLICE_LINES`` lines."""
        st = self.path.stat()
        fp = hashlib.sha256(f"{self.path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
        folder = cache_dir / "wikidata-snapshot" / f"{fp}.store"
        if (folder / ".loaded").is_file():
            self.reused = True
            return ox.Store(str(folder))  # read-write: a second process gets a lock error, not a torn read
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        store = ox.Store(str(folder))
        with self._open() as fh:
            bulk_load_slices(store, fh, lines=LOAD_SLICE_LINES)
        store.flush()
        (folder / ".loaded").write_text("ok\n")
        return store

    def select(self, query: Query) -> dict[str, Any]:
        """Run a SELECT query on the snapshot; the same results document as the endpoint."""
        self.stats.queries += 1
        self.stats.by_name[query.name] = self.stats.by_name.get(query.name, 0) + 1
        try:
            solutions = self.store.query(query.text)
            if not isinstance(solutions, ox.QuerySolutions):
                raise SourceError(f"query '{query.name}' on {self.endpoint} is not a SELECT query")
            return json.loads(solutions.serialize(format=ox.QueryResultsFormat.JSON))
        except (SyntaxError, ValueError, OSError) as exc:
            raise SourceError(f"query '{query.name}' on {self.endpoint} failed: {exc}") from None


# --- making the snapshot ---------------------------------------------------------------------


def _wd(qid: str) -> ox.NamedNode:
    if not QID_RE.match(qid):
        raise SchemaError(f"not a QID: {qid!r}")
    return ox.NamedNode(ENTITY_PREFIX + qid)


def _wdt(pid: str) -> ox.NamedNode:
    return ox.NamedNode(WDT + pid)


def enwiki_title(article_url: str) -> str:
    """The page title of an ``https://en.wikipedia.org/wiki/...`` URL (percent-decoded,
    underscores as spaces), as the query service has it in ``schema:name``."""
    prefix = ENWIKI + "wiki/"
    if not article_url.startswith(prefix):
        raise SchemaError(f"not an English Wikipedia article URL: {article_url!r}")
    return urllib.parse.unquote(article_url[len(prefix):]).replace("_", " ")


def snapshot_triples(
    base_kg: Iterable[dict[str, Any]], historic_events: Iterable[dict[str, Any]], *, language: str = "en"
) -> tuple[list[ox.Triple], dict[str, Any]]:
    """The snapshot's triples (sorted, unique) and statistics, from the lines of
    ``base-kg-v1.jsonl`` and the rows of ``historicEvents.json``.

    From each Base KG line (event class C) and consequence D:
      - ``rdfs:label`` of every QID, and ``skos:altLabel`` for the other strings of a class's
        ``labels`` list;
      - for each example (x, y): ``x wdt:P31 C``, ``y wdt:P31 D`` and ``x wdt:P1542 y``
        (x is an instance of C and y of D by construction of the Base KG; the original
        causal property is not recorded, so "has effect" stands for it);
      - for a consequence without examples: ``C wdt:P1542 D`` (a class-level statement).
    From the historic events, for the QIDs above only: the English Wikipedia sitelink
    (``<article> schema:about wd:X ; schema:isPartOf <https://en.wikipedia.org/> ;
    schema:name "title"@en``). Labels come from the Base KG (the historic events' label is
    kept only in the statistics when it differs).
    Raises SchemaError when the inputs contradict themselves (two labels for one QID).
    """
    triples: set[ox.Triple] = set()
    labels: dict[str, str] = {}
    class_aliases: dict[str, set[str]] = defaultdict(set)
    stats: dict[str, Any] = defaultdict(int)

    def set_label(qid: str, label: str) -> None:
        if not label:
            return
        if labels.setdefault(qid, label) != label:
            raise SchemaError(f"base KG gives two labels for {qid}: {labels[qid]!r} and {label!r}")

    instance_pairs: set[tuple[str, str]] = set()
    class_pairs: set[tuple[str, str]] = set()
    for line in base_kg:
        event = line["event"]
        c = event["id"]
        set_label(c, event.get("label") or "")
        class_aliases[c].update(event.get("labels") or [])
        for cons in line.get("consequences") or []:
            d = cons["id"]
            class_pairs.add((c, d))
            set_label(d, cons.get("label") or "")
            class_aliases[d].update(cons.get("labels") or [])
            examples = cons.get("examples") or []
            if not examples:
                triples.add(ox.Triple(_wd(c), _wdt(SNAPSHOT_CAUSAL_PROPERTY), _wd(d)))
                stats["class_level_statements"] += 1
            for ex in examples:
                x, y = ex["cause"]["id"], ex["effect"]["id"]
                set_label(x, ex["cause"].get("label") or "")
                set_label(y, ex["effect"].get("label") or "")
                triples.add(ox.Triple(_wd(x), _wdt("P31"), _wd(c)))
                triples.add(ox.Triple(_wd(y), _wdt("P31"), _wd(d)))
                triples.add(ox.Triple(_wd(x), _wdt(SNAPSHOT_CAUSAL_PROPERTY), _wd(y)))
                instance_pairs.add((x, y))
    for qid, label in labels.items():
        triples.add(ox.Triple(_wd(qid), RDFS_LABEL, ox.Literal(label, language=language)))
    for qid, strings in class_aliases.items():
        for alias in strings - {labels.get(qid)}:
            if alias:
                triples.add(ox.Triple(_wd(qid), SKOS_ALT_LABEL, ox.Literal(alias, language=language)))
                stats["aliases"] += 1

    sitelinks: list[dict[str, str]] = []
    for row in historic_events:
        qid = str(row.get("event", "")).rsplit("/", 1)[-1]
        if qid not in labels or not row.get("article"):
            continue
        article = ox.NamedNode(row["article"])
        title = enwiki_title(row["article"])
        triples.add(ox.Triple(article, SCHEMA_ABOUT, _wd(qid)))
        triples.add(ox.Triple(article, SCHEMA_IS_PART_OF, ox.NamedNode(ENWIKI)))
        triples.add(ox.Triple(article, SCHEMA_NAME, ox.Literal(title, language=language)))
        sitelinks.append({"qid": qid, "title": title, "historic_events_label": row.get("label", ""),
                          "base_kg_label": labels[qid]})

    stats.update(
        items=len(labels),
        class_pairs=len(class_pairs),
        instance_pairs=len(instance_pairs),
        enwiki_sitelinks=len(sitelinks),
        triples=len(triples),
    )
    stats["sitelinks"] = sorted(sitelinks, key=lambda s: qid_key(s["qid"]))
    ordered = sorted(triples, key=lambda t: (str(t.subject), str(t.predicate), str(t.object)))
    return ordered, dict(stats)


def serialize_ntriples(triples: Iterable[ox.Triple]) -> bytes:
    """N-Triples bytes of ``triples`` in the given order (pyoxigraph does the escaping)."""
    return ox.serialize(list(triples), format=ox.RdfFormat.N_TRIPLES) or b""
