"""The triple store: export the KG into an embedded Oxigraph store (or a remote one), and query it.

Flow: ``kg assemble`` writes ``data/kg/`` (N-Triples chunks listed in its manifest);
``export`` loads them into ``data/store/oxigraph`` (an on-disk Oxigraph database) in the named
graph ``kg.graph``, and the Base KG (``data/wikidata/base_kg.jsonl``) in ``kg.base_graph``.
With an ``endpoint`` it sends the same files to any server speaking the SPARQL 1.1 Graph Store
HTTP Protocol instead (``kg/graphstore.py``). ``query`` runs SPARQL over the embedded store.

The embedded store is written as generations (``causalkg.core.generations``): an export copies the
current database (``Store.backup``: hard links, cheap) into a new generation folder, replaces the
graphs there (bulk load into a staging graph, then one update that drops the old graph and moves
the staging graph into its place), closes it and switches ``data/store/current`` to it in one
rename. ``data/store/oxigraph`` and ``data/store/manifest.json`` are links into the current
generation. A published database is never written again, so readers open it read-only beside a
running export and never see a half-loaded graph or a RocksDB file deleted under them (RocksDB
does not support read-only handles beside a writer); a killed export leaves only an unpublished
folder (its staging graph included), which the next export removes. ``manifest.json`` records
what was loaded; an export whose inputs did not change is skipped.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalkg.core import faults, generations
from causalkg.core.config import Config
from causalkg.core.contracts import BaseKGLine
from causalkg.core.errors import ConfigError, SourceError, StoreError
from causalkg.core.jsonl import read_jsonl
from causalkg.core.layout import Layout, default_paths, kg_dir
from causalkg.core.manifest import build_manifest, file_sha256, fingerprint, read_manifest, write_manifest
from causalkg.core.ntriples import bulk_load_slices
from causalkg.core.progress import progress
from causalkg.core.tables import render_table
from causalkg.kg import rdf
from causalkg.kg.kgfiles import MANIFEST_FILE, reading_kg
from causalkg.kg.rdf import staging_iri

log = logging.getLogger(__name__)

QUERY_FORMATS = ("table", "md", "csv", "json")
# N-Triples lines per bulk load (causalkg.core.ntriples): Oxigraph's loader holds a call's triples in
# memory while it sorts them, and a KG's files hold up to kg.nt_chunk_triples (500,000) each.
BULK_LOAD_LINES = 100_000


def store_dir(cfg: Config) -> Path:
    """``<paths.data>/store``: the store's folder (the database is in ``oxigraph/``)."""
    return Layout.from_config(cfg).store_dir


def _named_node(iri: str, what: str):
    import pyoxigraph

    try:
        return pyoxigraph.NamedNode(iri)
    except ValueError as exc:
        raise ConfigError(f"{what} is not a valid IRI: {iri!r} ({exc})") from None


def _open(path: Path, *, read_only: bool = False):
    import pyoxigraph

    try:
        if read_only:
            return pyoxigraph.Store.read_only(str(path))
        return pyoxigraph.Store(str(path))
    except OSError as exc:
        raise StoreError(f"cannot open the triple store in {path}: {exc}",
                         hint="is another causalkg process using it?") from None


# --- what to load ----------------------------------------------------------------------------


@dataclass
class GraphFiles:
    """One named graph to load: its IRI, the N-Triples files, and the triple count they hold."""

    graph: str
    files: list[Path]
    triples: int
    checksum: str


@dataclass
class ExportPlan:
    graphs: list[GraphFiles]
    notes: list[str] = field(default_factory=list)
    sources: dict[str, Path] = field(default_factory=dict)
    tmp: tempfile.TemporaryDirectory | None = None
    hold: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)  # the KG generation read

    def cleanup(self) -> None:
        self.hold.close()
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None


def plan_export(cfg: Config, *, kg: str | Path | None = None, base_kg: str | Path | None = None,
                with_base_kg: bool = True, graph: str | None = None, base_graph: str | None = None) -> ExportPlan:
    """The graphs an export loads: the KG's N-Triples chunks (from ``kg``'s manifest, default
    ``<paths.data>/kg``) and, when ``with_base_kg`` and the file exists, the Base KG converted to
    N-Triples in a temporary folder. Raises SourceError when the KG was not assembled."""
    folder = Path(kg) if kg is not None else kg_dir(cfg)
    hold = contextlib.ExitStack()
    try:
        # The KG's current generation, held (not pruned) until the export is done; its N-Triples
        # are checked against its manifest, so a mix of two builds is never loaded.
        view, manifest = hold.enter_context(reading_kg(folder))
        rels = (manifest.get("outputs") or {}).get("ntriples", [])
        files = [view / p for p in rels]
        missing = [str(p) for p in files if not p.is_file()]
        if missing or not files:
            raise SourceError(f"the KG's N-Triples files are missing: {', '.join(missing) or '(none listed)'}",
                              hint="run causalkg kg assemble --force")
    except BaseException:
        hold.close()
        raise
    kg_graph = graph or cfg["kg"]["graph"]
    _named_node(kg_graph, "kg.graph")
    plan = ExportPlan([GraphFiles(kg_graph, files, int(manifest["counts"]["triples"]),
                                  fingerprint([file_sha256(p) for p in files]))],
                      sources={"kg_manifest": view / MANIFEST_FILE}, hold=hold)
    if with_base_kg:
        path = Path(base_kg) if base_kg is not None else default_paths(cfg)["base_kg"]
        if path.is_file():
            plan.tmp = tempfile.TemporaryDirectory(prefix="causalkg-basekg-")
            options = rdf.RdfOptions(lang=(cfg["wikidata"]["languages"] or ["en"])[0])
            written = rdf.write_rdf(rdf.base_kg_blocks(read_jsonl(path, BaseKGLine), options), turtle=None,
                                    nt_dir=plan.tmp.name, nt_stem="base_kg",
                                    chunk_triples=int(cfg["kg"]["nt_chunk_triples"]))
            bg = base_graph or cfg["kg"]["base_graph"]
            _named_node(bg, "kg.base_graph")
            plan.graphs.append(GraphFiles(bg, written.ntriples, written.triples, file_sha256(path)))
            plan.sources["base_kg"] = path
        else:
            plan.notes.append(f"no Base KG at {path}: the base-kg graph was not loaded (run causalkg corpus build)")
    return plan


# --- the embedded store ----------------------------------------------------------------------


def count_graph(store: Any, graph: str) -> int:
    """Triples in one named graph of an Oxigraph store."""
    import pyoxigraph

    return sum(1 for _ in store.quads_for_pattern(None, None, None, pyoxigraph.NamedNode(graph)))


def load_graph(store: Any, g: GraphFiles) -> int:
    """Put the triples of ``g.files`` into the named graph ``g.graph`` and return the count now
    in it; raises StoreError when it is not ``g.triples``.

    Into a graph that is empty (the export's fresh, unpublished generation: readers see the new
    store only when it is published whole), the files are bulk-loaded straight into the graph,
    ``BULK_LOAD_LINES`` lines per call: memory stays bounded by that slice, whatever the graph's
    or a file's size. A graph that already holds triples is replaced atomically inside this
    store instead (bulk load into a staging graph, then one update that drops the old graph and
    moves the new one in); that transaction holds the whole graph in memory (about 3 GB per
    million triples), which the export avoids. A line Oxigraph cannot parse is a StoreError
    naming it as ``file:line``."""
    import pyoxigraph

    target = pyoxigraph.NamedNode(g.graph)
    staging = pyoxigraph.NamedNode(staging_iri(g.graph))
    store.remove_graph(staging)  # a staging graph left by a killed export
    direct = not any(True for _ in store.quads_for_pattern(None, None, None, target))
    into = target if direct else staging
    for path in g.files:
        try:
            with open(path, "rb") as fh:
                bulk_load_slices(store, fh, to_graph=into, lines=BULK_LOAD_LINES)
        except SyntaxError as exc:
            store.remove_graph(into)
            raise StoreError(f"{path}:{exc.lineno}: Oxigraph cannot parse it: {getattr(exc, 'reason', exc)}",
                             hint="run causalkg kg assemble --force") from None
    faults.point("export.graph-staged")
    if not direct:
        # Terms printed by pyoxigraph are valid SPARQL IRIs (<...>), escaped by the library.
        store.update(f"DROP SILENT GRAPH {target} ; MOVE SILENT GRAPH {staging} TO GRAPH {target}")
    n = count_graph(store, g.graph)
    if n != g.triples:
        raise StoreError(f"graph <{g.graph}> holds {n} triples after loading, expected {g.triples}")
    return n


def copy_other_graphs(src: Any, dst: Any, skip: set[str], scratch: Path) -> None:
    """Copy every graph of store ``src`` except the named graphs in ``skip`` (and staging graphs
    a killed export left) into store ``dst``, graph by graph through an N-Triples file in
    ``scratch`` and a bulk load, so memory stays bounded whatever their size. Blank nodes keep
    their identity within a graph."""
    import pyoxigraph

    graphs: list[Any] = [pyoxigraph.DefaultGraph()]
    graphs += [g for g in src.named_graphs() if g.value not in skip and not is_staging(g.value)]
    for i, graph in enumerate(graphs):
        path = scratch / f"copy-{i}.nt"
        try:
            src.dump(str(path), format=pyoxigraph.RdfFormat.N_TRIPLES, from_graph=graph)
            if path.stat().st_size:
                dst.bulk_load(path=str(path), format=pyoxigraph.RdfFormat.N_TRIPLES,
                              to_graph=graph if isinstance(graph, pyoxigraph.NamedNode) else None)
        finally:
            path.unlink(missing_ok=True)


@dataclass
class ExportResult:
    """What ``export`` did: where, which graphs with how many triples, whether it was skipped."""

    target: str
    graphs: dict[str, int]
    skipped: bool = False
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    backend: str = ""  # the export target that ran, by versioned name (``oxigraph.v1``)


@dataclass
class ExportRequest:
    """What every export target is given besides the config and the plan: the settings of one
    ``export`` call (a target uses the ones that apply to it)."""

    store: Path                              # the embedded store's folder (oxigraph)
    endpoint: str | None = None              # the Graph Store URL (graph-store)
    sparql_endpoint: str | None = None
    chunk_triples: int | None = None
    sleep: Any = None
    force: bool = False
    dry_run: bool = False
    target: str = ""                         # the versioned target name (export_target), for manifests
    t0: float = field(default_factory=time.perf_counter)


TARGET_CHOICES = ("auto", "oxigraph", "graph-store")


def export_target(cfg: Config, endpoint: str | None = None) -> str:
    """The versioned export target (``causalkg.registry`` kind ``export-target``) an export uses:
    ``kg.target``, where ``auto`` (the default) means ``graph-store`` when an endpoint is given
    (``endpoint`` or ``kg.endpoint``) and ``oxigraph`` otherwise. Raises ConfigError for a name
    that is not registered, or for ``graph-store`` without an endpoint."""
    from causalkg.registry import registry

    name = str(cfg["kg"].get("target", "auto") or "auto").strip()
    endpoint = endpoint if endpoint is not None else (cfg["kg"]["endpoint"] or None)
    targets = registry("export-target")
    if name == "auto":
        name = "graph-store" if endpoint else "oxigraph"
    try:
        resolved = targets.resolve(name)
    except ConfigError:
        raise ConfigError(f"unknown kg.target {name!r}", hint=f"choose one of: auto, {', '.join(targets.bases())}") from None
    if targets.base(resolved) == "graph-store" and not endpoint:
        raise ConfigError("kg.target is graph-store but no endpoint is set",
                          hint="pass --endpoint URL or set kg.endpoint")
    return resolved


def export(
    cfg: Config,
    *,
    endpoint: str | None = None,
    sparql_endpoint: str | None = None,
    graph: str | None = None,
    store: str | Path | None = None,
    kg: str | Path | None = None,
    base_kg: str | Path | None = None,
    with_base_kg: bool = True,
    chunk_triples: int | None = None,
    force: bool = False,
    sleep: Any = None,
    dry_run: bool = False,
) -> ExportResult:
    """Load the assembled KG (and the Base KG) into a triple store.

    The store is an export target from the registry (``export_target``: ``kg.target``, default
    ``auto``). ``oxigraph``, chosen without ``endpoint`` and with ``kg.endpoint`` empty: the
    embedded Oxigraph store in ``store`` (default ``<paths.data>/store``), skipped when the same
    files were loaded before (unless ``force``). ``graph-store``, chosen with ``endpoint``: a
    remote SPARQL 1.1 Graph Store HTTP Protocol service (see ``kg.graphstore.export_remote``;
    ``sparql_endpoint``, ``chunk_triples`` and ``sleep`` apply there). ``graph`` overrides
    ``kg.graph``. ``dry_run``: check the files and settings and return what would be loaded
    (``skipped`` is true), loading nothing.

    Returns an ExportResult. Raises SourceError when the KG was not assembled or a server
    cannot be reached, StoreError when a store refuses or loses data, ConfigError for an
    unknown ``kg.target``.
    """
    from causalkg.registry import registry

    request = ExportRequest(Path(store) if store is not None else store_dir(cfg),
                            endpoint if endpoint is not None else (cfg["kg"]["endpoint"] or None),
                            sparql_endpoint, chunk_triples, sleep, force, dry_run)
    request.target = export_target(cfg, request.endpoint)
    if endpoint and registry("export-target").base(request.target) != "graph-store":
        raise ConfigError(f"an endpoint was given but kg.target is {cfg['kg'].get('target')!r}",
                          hint="drop --endpoint, or set kg.target to auto or graph-store")
    plan = plan_export(cfg, kg=kg, base_kg=base_kg, with_base_kg=with_base_kg, graph=graph)
    try:
        result = registry("export-target").get(request.target)(cfg, plan, request)
        result.backend = request.target
        return result
    finally:
        plan.cleanup()


def export_oxigraph(cfg: Config, plan: ExportPlan, request: ExportRequest) -> ExportResult:
    """The ``oxigraph.v1`` export target: load ``plan`` into the embedded store in ``request.store``."""
    if request.dry_run:
        return ExportResult(str(request.store / "oxigraph"), {g.graph: g.triples for g in plan.graphs}, True,
                            plan.notes, 0.0)
    return _export_local(cfg, plan, request.store, request.force, request.t0,
                         target=request.target or "oxigraph.v1")


def export_graph_store(cfg: Config, plan: ExportPlan, request: ExportRequest) -> ExportResult:
    """The ``graph-store.v1`` export target: upload ``plan`` to the SPARQL 1.1 Graph Store HTTP
    Protocol service at ``request.endpoint`` (``kg.graphstore``)."""
    from causalkg.kg.graphstore import client_from_config, export_remote

    endpoint = request.endpoint
    if not endpoint:
        raise ConfigError("the graph-store export target needs an endpoint", hint="pass --endpoint URL or set kg.endpoint")
    if request.dry_run:
        client_from_config(cfg, endpoint, sparql_endpoint=request.sparql_endpoint)  # validates URLs and auth
        return ExportResult(endpoint, {g.graph: g.triples for g in plan.graphs}, True, plan.notes, 0.0)
    counts = export_remote(cfg, plan.graphs, endpoint=endpoint, sparql_endpoint=request.sparql_endpoint,
                           chunk_triples=request.chunk_triples, sleep=request.sleep)
    return ExportResult(endpoint, counts, False, plan.notes, time.perf_counter() - request.t0)


STORE_NAMES = ("oxigraph", MANIFEST_FILE)  # the documented paths of data/store/: links into the current generation


def is_staging(iri: str) -> bool:
    """A staging graph's IRI (see ``staging_iri``)."""
    return iri.endswith(("#staging", "-staging"))


@contextlib.contextmanager
def reading_store(folder: Path) -> Any:
    """``(database folder, manifest or None)`` of the store's current generation, held against
    pruning while the block runs; the database of a store written before generations existed
    is ``folder/oxigraph`` itself."""
    with generations.reading(folder) as view:
        yield view / "oxigraph", read_manifest(view)


def _export_local(cfg: Config, plan: ExportPlan, folder: Path, force: bool, t0: float, *,
                  target: str = "oxigraph.v1") -> ExportResult:
    fp = fingerprint([(g.graph, g.checksum, g.triples) for g in plan.graphs])
    if not force:
        with reading_store(folder) as (db, manifest):
            if manifest and manifest.get("fingerprint") == fp and db.is_dir():
                st = _open(db, read_only=True)
                try:
                    current = {g.graph: count_graph(st, g.graph) for g in plan.graphs}
                    staging = [g.value for g in st.named_graphs() if is_staging(g.value)]
                finally:
                    del st
                if all(current[g.graph] == g.triples for g in plan.graphs) and not staging:
                    log.debug("the store in %s is up to date; use --force to reload", folder)  # the CLI says it
                    generations.sweep(folder, int(cfg["kg"].get("keep_generations", 2)))  # killed runs' leftovers
                    return ExportResult(str(folder / "oxigraph"), current, True, plan.notes, time.perf_counter() - t0)
    with generations.writer_lock(folder, "kg export"):
        gen = generations.begin(folder)  # removes what a killed export left (staging graph and all)
        db = gen.path / "oxigraph"
        st = _open(db)  # a new database; published (atomically, whole) only once every graph is in
        counts: dict[str, int] = {}
        try:
            with reading_store(folder) as (old, _):
                if old.is_dir():
                    # The graphs this export does not replace (loaded by others) are copied over;
                    # the replaced ones are loaded fresh, never deleted triple by triple.
                    src = _open(old, read_only=True)
                    try:
                        copy_other_graphs(src, st, {g.graph for g in plan.graphs}, gen.path)
                    except OSError as exc:
                        raise StoreError(f"cannot copy the triple store {old}: {exc}") from None
                    finally:
                        del src
            with progress(total=sum(g.triples for g in plan.graphs), desc="loading the store", unit="triple",
                          unit_scale=True) as bar:
                for g in plan.graphs:
                    counts[g.graph] = load_graph(st, g)
                    bar.update(g.triples)
            st.flush()
        finally:
            del st
        seconds = time.perf_counter() - t0
        write_manifest(gen.path, build_manifest(
            "kg.export", cfg, inputs=plan.sources,
            outputs={"store": "oxigraph", "graphs": counts}, counts={"triples": sum(counts.values())},
            timings={"total": seconds}, notes=plan.notes, extra={"fingerprint": fp, "generation": gen.id, "target": target},
        ))
        faults.point("export.before-publish")
        generations.publish(gen, STORE_NAMES, keep=int(cfg["kg"].get("keep_generations", 2)))
    return ExportResult(str(folder / "oxigraph"), counts, False, plan.notes, seconds)


# --- queries ---------------------------------------------------------------------------------


@dataclass
class QueryResult:
    """A SPARQL answer: ``kind`` is select, ask or graph. Select rows hold pyoxigraph terms
    by variable name (None when unbound); graph results hold triples."""

    kind: str
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    boolean: bool | None = None
    triples: list[Any] = field(default_factory=list)

    def values(self) -> list[dict[str, Any]]:
        """Rows with plain Python values: IRIs and literals as their string value, numbers as
        int/float."""
        return [{c: term_value(r.get(c)) for c in self.columns} for r in self.rows]


def term_value(term: Any) -> Any:
    """A pyoxigraph term as a plain value (int/float for numeric literals, else its string)."""
    import pyoxigraph

    if term is None:
        return None
    if isinstance(term, pyoxigraph.Literal):
        dt = term.datatype.value if term.datatype is not None else ""
        try:
            if dt.endswith(("#integer", "#int", "#long", "#nonNegativeInteger")):
                return int(term.value)
            if dt.endswith(("#double", "#decimal", "#float")):
                return float(term.value)
        except ValueError:
            pass
        return term.value
    return term.value


def _term_json(term: Any) -> dict[str, str]:
    import pyoxigraph

    if isinstance(term, pyoxigraph.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, pyoxigraph.BlankNode):
        return {"type": "bnode", "value": term.value}
    out = {"type": "literal", "value": term.value}
    if term.language:
        out["xml:lang"] = term.language
    elif term.datatype is not None and term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
        out["datatype"] = term.datatype.value
    return out


# Parts of a query where the word "service" is not the SERVICE keyword: strings (long ones
# first), IRIs, comments, variables and prefixed names (``ex:service``).
_NOT_KEYWORDS = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r'|<[^<>"{}|^`\\\s]*>'
    r"|#[^\n]*"
    r"|[?$]\w+"
    r"|[\w.-]*:[\w.:%-]*"
)
_SERVICE = re.compile(r"\bservice\b", re.IGNORECASE)
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def uses_service(sparql: str) -> bool:
    """True when the query has a ``SERVICE`` clause (a federated query: Oxigraph would fetch the
    service over HTTP). SPARQL applies ``\\uXXXX`` escapes before parsing, so they are decoded
    first; strings, IRIs, comments, variables and prefixed names are skipped."""
    text = _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), sparql)
    return bool(_SERVICE.search(_NOT_KEYWORDS.sub(" ", text)))


def query(cfg: Config, sparql: str, *, store: str | Path | None = None, graph: str | None = None,
          union: bool = False, allow_service: bool = False) -> QueryResult:
    """Run a SPARQL query over the embedded store (read-only).

    The default graph is the KG's named graph (``graph``, default ``kg.graph``); every named
    graph (the Base KG's too) is reachable with ``GRAPH``. ``union``: the default graph is the
    union of all graphs instead. Common prefixes (ck, wd, wdt, rdfs, prov, dcterms, schema, xsd)
    are predeclared. A ``SERVICE`` clause (a request to another SPARQL endpoint) is refused
    unless ``allow_service``: a local query makes no outbound request. The store is read from its
    current generation, read-only, so a concurrent export does not disturb it.
    Raises SourceError when there is no store (run causalkg kg export),
    ConfigError when the query is not valid SPARQL or uses SERVICE without ``allow_service``.
    """
    update = update_keyword(sparql)
    if update:
        raise ConfigError(f"updates are refused: the store is read-only to queries ({update})",
                          hint="the KG changes with causalkg kg assemble and causalkg kg export")
    if not allow_service and uses_service(sparql):
        raise ConfigError("the query has a SERVICE clause: local queries make no outbound requests",
                          hint="pass --allow-service to let this query call other endpoints")
    folder = Path(store) if store is not None else store_dir(cfg)
    with reading_store(folder) as (db, _):
        if not db.is_dir():
            raise SourceError(f"no triple store in {folder / 'oxigraph'}", hint="run causalkg kg export")
        return _query_db(cfg, db, sparql, graph=graph, union=union)


_UPDATE_WORDS = ("INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH")
_NOT_CODE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|<[^<>"{}|^`\\\s]*>|#[^\n]*')
_PROLOGUE = re.compile(r"^\s*(?:(?:PREFIX\s+[\w.-]*:|BASE)\s*)*", re.I)


def update_keyword(sparql: str) -> str | None:
    """The SPARQL Update keyword a request starts with (``INSERT``, ``DELETE``, ...), after its
    prologue, comments and IRIs; None for a query."""
    code = _PROLOGUE.sub("", _NOT_CODE.sub(" ", sparql))
    first = re.match(r"\s*([A-Za-z]+)", code)
    word = first.group(1).upper() if first else ""
    return word if word in _UPDATE_WORDS else None


def _query_db(cfg: Config, db: Path, sparql: str, *, graph: str | None, union: bool) -> QueryResult:
    import pyoxigraph

    st = _open(db, read_only=True)
    try:
        kwargs: dict[str, Any] = {"prefixes": dict(rdf.PREFIXES)}
        if union:
            kwargs["use_default_graph_as_union"] = True
        else:
            kwargs["default_graph"] = _named_node(graph or cfg["kg"]["graph"], "kg.graph")
        try:
            res = st.query(sparql, **kwargs)
        except SyntaxError as exc:
            raise ConfigError(f"the query is not valid SPARQL: {exc}") from None
        except OSError as exc:
            raise StoreError(f"the store failed to answer: {exc}") from None
        if isinstance(res, pyoxigraph.QueryBoolean):
            return QueryResult("ask", boolean=bool(res))
        if isinstance(res, pyoxigraph.QuerySolutions):
            columns = [v.value for v in res.variables]
            rows = [{c: sol[c] for c in columns} for sol in res]
            return QueryResult("select", columns=columns, rows=rows)
        return QueryResult("graph", triples=list(res))
    finally:
        del st


def format_result(result: QueryResult, fmt: str = "table") -> str:
    """Render a query result: ``table`` (aligned text), ``md``, ``csv`` (SPARQL 1.1 CSV
    results) or ``json`` (SPARQL 1.1 JSON results). Graph results are N-Triples in every
    format but json."""
    import json

    if fmt not in QUERY_FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(QUERY_FORMATS)}")
    if result.kind == "ask":
        if fmt == "json":
            return json.dumps({"head": {}, "boolean": result.boolean})
        return "true" if result.boolean else "false"
    if result.kind == "graph":
        if fmt == "json":
            return json.dumps([{"subject": _term_json(t.subject), "predicate": _term_json(t.predicate),
                                "object": _term_json(t.object)} for t in result.triples], ensure_ascii=False)
        return "\n".join(f"{t.subject} {t.predicate} {t.object} ." for t in result.triples)
    if fmt == "json":
        bindings = [{c: _term_json(r[c]) for c in result.columns if r.get(c) is not None} for r in result.rows]
        return json.dumps({"head": {"vars": result.columns}, "results": {"bindings": bindings}},
                          ensure_ascii=False, indent=1)
    rows = [{c: ("" if r.get(c) is None else r[c].value) for c in result.columns} for r in result.rows]
    if not rows and fmt == "table":  # say so, rather than print a bare header
        return "0 rows"
    return render_table(rows, result.columns, {"table": "text", "md": "md", "csv": "csv"}[fmt])


def store_counts(cfg: Config, *, store: str | Path | None = None) -> dict[str, int] | None:
    """Triples per named graph of the embedded store, or None when there is no store."""
    with reading_store(Path(store) if store is not None else store_dir(cfg)) as (db, _):
        if not db.is_dir():
            return None
        st = _open(db, read_only=True)
        try:
            return {g.value: count_graph(st, g.value) for g in st.named_graphs()}
        finally:
            del st


