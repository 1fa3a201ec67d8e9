"""The KG-building commands, each one function of the Python API with its result class and its
parser, in this module (``import causalkg as ck`` re-exports the functions and classes).

- ``assemble`` / ``Assembly`` / ``causalkg kg assemble`` (the work: ``kg.assemble.assemble``; its
  result, which the step returns: ``kg.assembly.Assembly``)
- ``export`` / ``Export`` / ``causalkg kg export`` (embedded Oxigraph, or ``--endpoint`` via GSP: ``kg.store.export``)
- ``query`` / ``QueryAnswer`` / ``causalkg kg query`` (``kg.store.query``)
- ``stats`` / ``Stats`` / ``causalkg kg stats`` (``kg.stats.stats``)
- ``summary`` / ``Summary`` / ``causalkg kg summary`` (``kg.stats.summary``)

Each command prints the result's ``to_table(--format)``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.errors import ConfigError
from causalkg.core.results import Result, check_format, table
from causalkg.kg.assembly import Assembly
from causalkg.options import add_command, add_dry_run, add_force, add_format, add_lenient, add_out


def assemble(*, extractions: PathLike | None = None, linked: PathLike | None = None, corpus: PathLike | None = None,
             concepts: PathLike | None = None, out: PathLike | None = None, lift: str | None = None,
             min_support: int | None = None, allow_self_loops: bool | None = None, shard_size: int | None = None,
             force: bool = False, lenient: bool = False, dry_run: bool = False, cfg: CfgLike = None) -> Assembly:
    """Link the extracted pairs and build the causal KG (``causalkg kg assemble``) in ``out``
    (default ``<paths.data>/kg``): flat pairs, the WikiCausal nested shape, Turtle, N-Triples,
    GraphML and a manifest. ``linked``: mentions already linked (no linker is run), instead of
    ``extractions``. ``lift``, ``min_support``, ``allow_self_loops``, ``shard_size``: the kg.*
    settings. Skipped when current unless ``force`` (which relinks every shard too); resumes
    after a kill."""
    from causalkg.kg.assemble import assemble as _assemble

    if extractions and linked:
        raise ConfigError("give --extractions or --linked, not both")
    c = resolve_config(cfg).with_overrides({"kg.lift": lift, "kg.min_support": min_support,
                                            "kg.allow_self_loops": allow_self_loops, "kg.shard_size": shard_size},
                                           origin="kg assemble")
    return _assemble(c, extractions=extractions, linked=linked, corpus=corpus, concepts=concepts, out=out,
                     force=force, lenient=lenient, dry_run=dry_run)


@dataclass
class Export(Result):
    """What ``export`` did: the target store, the triples per named graph, notes."""

    target: str = ""
    graphs: dict[str, int] = field(default_factory=dict)
    skipped: bool = False
    dry_run: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        return [{"graph": g, "triples": n} for g, n in self.graphs.items()]

    def _render(self, fmt: str) -> str:
        if fmt == "csv":
            return table(self.rows(), ["graph", "triples"], "csv")
        if self.dry_run:
            head = f"plan: load into {self.target}"
        else:
            state = "is up to date (--force reloads it)" if self.skipped else f"loaded in {self.seconds:.1f} s"
            head = f"{self.target} {state}:"
        lines = [head] + [f"  <{g}>: {n} triples" for g, n in self.graphs.items()]
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])


def export(*, endpoint: str | None = None, sparql_endpoint: str | None = None, graph: str | None = None,
           store: PathLike | None = None, kg: PathLike | None = None, base_kg: PathLike | None = None,
           with_base_kg: bool = True, chunk_triples: int | None = None, force: bool = False, dry_run: bool = False,
           cfg: CfgLike = None) -> Export:
    """Load the KG (and the Base KG) into the embedded Oxigraph store in ``<paths.data>/store``,
    or, with ``endpoint``, into any SPARQL 1.1 Graph Store HTTP Protocol service
    (``causalkg kg export``); ``kg.target`` names the export target (default ``auto``). Raises
    SourceError when the store or server fails, ConfigError for an unknown target."""
    from causalkg.kg.store import export as _export

    r = _export(resolve_config(cfg), endpoint=endpoint, sparql_endpoint=sparql_endpoint, graph=graph, store=store,
                kg=kg, base_kg=base_kg, with_base_kg=with_base_kg, chunk_triples=chunk_triples, force=force,
                dry_run=dry_run)
    return Export(target=r.target, graphs=dict(r.graphs), skipped=r.skipped, dry_run=dry_run, seconds=r.seconds,
                  notes=list(r.notes), detail=r)


@dataclass
class QueryAnswer(Result):
    """The answer of ``query``: SELECT rows, an ASK boolean or CONSTRUCT triples."""

    def _json(self) -> Any:
        from causalkg.kg.store import format_result

        return json.loads(format_result(self.detail, "json"))

    def to_table(self, fmt: str = "text") -> str:
        from causalkg.kg.store import format_result

        check_format(fmt)
        return format_result(self.detail, {"text": "table"}.get(fmt, fmt))

    def to_dict(self) -> dict[str, Any]:
        return self._json()


def query(sparql: str, *, store: PathLike | None = None, union: bool = False, allow_service: bool = False,
          cfg: CfgLike = None) -> QueryAnswer:
    """Run a SPARQL query over the embedded store (``causalkg kg query``); the KG's named graph
    is the default graph unless ``union``. A ``SERVICE`` clause is refused (ConfigError) unless
    ``allow_service``. Raises SourceError when the store is missing."""
    from causalkg.kg.store import query as _query

    if not sparql or not sparql.strip():
        raise ConfigError("no query given", hint="causalkg kg query 'SELECT ...' or --file query.rq")
    return QueryAnswer(detail=_query(resolve_config(cfg), sparql, store=store, union=union, allow_service=allow_service))


@dataclass
class Stats(Result):
    """Graph statistics of the KG (``stats``) and its agreement with the Base KG."""

    def to_table(self, fmt: str = "text") -> str:
        from causalkg.kg.stats import render_stats

        check_format(fmt)
        if fmt == "csv":  # the headline measures; the other tables are in the json
            s = self.detail
            rows = [{"measure": "nodes", "value": s.nodes}, {"measure": "edges", "value": s.edges},
                    *({"measure": f"edges_{k}", "value": v} for k, v in s.levels.items()),
                    {"measure": "self_loops", "value": s.self_loops}, {"measure": "cycles", "value": s.cycles},
                    {"measure": "components", "value": s.components},
                    {"measure": "largest_component", "value": s.largest_component}]
            return table(rows, ["measure", "value"], "csv")
        return render_stats(self.detail, fmt)

    def to_dict(self) -> dict[str, Any]:
        return self.detail.to_dict()


def stats(*, kg: PathLike | None = None, base_kg: PathLike | None = None, level: str = "all", top: int | None = None,
          cfg: CfgLike = None) -> Stats:
    """Graph statistics of the KG (``causalkg kg stats``) and its agreement with the Base KG."""
    from causalkg.kg.stats import stats as _stats

    return Stats(detail=_stats(resolve_config(cfg), kg=kg, base_kg=base_kg, level=level, top=top))


@dataclass
class Summary(Result):
    """Counts and the best-supported edges of the KG (``summary``)."""

    def to_table(self, fmt: str = "text", width: int | None = None) -> str:
        """``width``: fit the text lines to that many columns (the CLI's terminal unless --wide)."""
        from causalkg.kg.stats import render_summary

        check_format(fmt)
        if fmt == "csv":  # the best-supported edges; the counts are in the json
            return table(self.detail.top, ["cause", "effect", "level", "sentences", "documents", "best_score",
                                            "evidence"], "csv", ".3f")
        return render_summary(self.detail, fmt, width)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self.to_table("json"))


def summary(*, kg: PathLike | None = None, top: int | None = None, cfg: CfgLike = None) -> Summary:
    """Counts and the best-supported edges of the KG (``causalkg kg summary``)."""
    from causalkg.kg.stats import summary as _summary

    return Summary(detail=_summary(resolve_config(cfg), kg=kg, top=top))


# --- the command line ----------------------------------------------------------------------


def register(group: Any) -> None:
    """Add the assembly, export, query, stats and summary verbs to the ``kg`` group."""
    a = add_command(
        group, "assemble", _assemble_cli, "link extracted pairs and build the causal KG in data/kg/",
        description=(
            "Link the cause and effect phrases of data/kg/extractions.jsonl (one linker call per shard),\n"
            "keep pairs linked at both ends, aggregate them by (cause, effect) concept with support, scores\n"
            "and provenance, lift instance edges to classes, and write causal_kg_pairs.jsonl (flat pairs),\n"
            "causal_kg.jsonl (WikiCausal Base KG shape), causal_kg.ttl, nt/*.nt, causal_kg.graphml and a\n"
            "manifest to data/kg/. Skipped when inputs and settings are unchanged; resumes after a kill."
        ),
    )
    a.add_argument("--extractions", metavar="FILE", help="extracted pairs (default: <paths.data>/kg/extractions.jsonl)")
    a.add_argument("--linked", metavar="FILE", help="mentions already linked (KGMention JSONL): no linker is run")
    a.add_argument("--corpus", metavar="FILE", help="titles, URLs, revisions (default: <paths.data>/corpus/corpus.jsonl)")
    a.add_argument("--concepts", metavar="FILE", help="labels, kinds, classes (default: <paths.data>/wikidata/concepts.jsonl)")
    add_out(a, "output folder (default: <paths.data>/kg)")
    a.add_argument("--lift", choices=["seed_classes", "instance_of", "both", "none"], help="lift instance ends to (kg.lift)")
    a.add_argument("--min-support", type=int, metavar="N", help="drop edges with fewer distinct sentences (kg.min_support)")
    a.add_argument("--allow-self-loops", action="store_true", default=None,
                   help="keep pairs whose two ends link to the same concept (kg.allow_self_loops)")
    a.add_argument("--shard-size", type=int, metavar="N", help="extractions per linker call (kg.shard_size)")
    add_force(a, "relink every shard and rewrite the KG, even when the outputs are current")
    add_lenient(a)
    add_dry_run(a)
    add_format(a)

    e = add_command(
        group, "export", _export_cli, "load the KG into the embedded triple store, or a remote one (--endpoint)",
        description=(
            "Load data/kg/nt/*.nt into the named graph kg.graph (and the Base KG into kg.base_graph) of the\n"
            "embedded Oxigraph store in data/store/, replacing the graphs atomically. With --endpoint, upload to\n"
            "any SPARQL 1.1 Graph Store HTTP Protocol service instead, in chunks, with retries, and check the\n"
            "triple count. Credentials come from the environment (kg.user_env / kg.password_env / kg.token_env).\n"
            "Example: causalkg kg export --endpoint http://localhost:8890/sparql-graph-crud-auth"
        ),
    )
    e.add_argument("--endpoint", metavar="URL", help="a Graph Store HTTP Protocol URL (kg.endpoint)")
    e.add_argument("--sparql-endpoint", metavar="URL",
                   help="the same server's SPARQL endpoint: stage + atomic MOVE, COUNT check (kg.sparql_endpoint)")
    e.add_argument("--graph", metavar="IRI", help="the named graph for the KG (kg.graph)")
    e.add_argument("--store", metavar="DIR", help="the embedded store's folder (default: <paths.data>/store)")
    e.add_argument("--kg", metavar="DIR", help="the assembled KG (default: <paths.data>/kg)")
    e.add_argument("--base-kg", metavar="FILE", help="the Base KG (default: <paths.data>/wikidata/base_kg.jsonl)")
    e.add_argument("--no-base-kg", action="store_true", help="do not load the Base KG graph")
    e.add_argument("--chunk-triples", type=int, metavar="N", help="triples per upload request (kg.upload_chunk_triples)")
    add_force(e, "reload the embedded store even when it is current")
    add_dry_run(e, "check the KG files and settings, print the plan, load nothing")
    add_format(e)

    q = add_command(
        group, "query", _query_cli, "run a SPARQL query over the embedded store",
        description=(
            "The default graph is the KG's named graph; the Base KG is in GRAPH <kg.base_graph>. The prefixes\n"
            "ck, wd, wdt, rdfs, prov, dcterms, schema, xsd, edge and mention are predeclared. An empty answer\n"
            "prints '0 rows'; csv and json are the SPARQL 1.1 results formats; updates are refused.\n"
            "Example: causalkg kg query 'SELECT ?effect ?label WHERE { wd:Q7944 ck:causes ?effect .\n"
            "         ?effect rdfs:label ?label }'"
        ),
        skip=("--engine", "--force", "--allow-shrink"),
    )
    q.add_argument("sparql", nargs="?", metavar="SPARQL", help="the query (or --file)")
    q.add_argument("--file", metavar="FILE", help="read the query from a file ('-' for stdin)")
    add_format(q, "answer")
    q.add_argument("--store", metavar="DIR", help="the embedded store's folder (default: <paths.data>/store)")
    q.add_argument("--union", action="store_true", help="query the union of all graphs as the default graph")
    q.add_argument("--allow-service", action="store_true",
                   help="let SERVICE clauses call other SPARQL endpoints (refused by default: no outbound requests)")

    s = add_command(group, "stats", _stats_cli, "graph statistics of the KG (networkx) and agreement with the Base KG",
                    skip=("--engine", "--force", "--allow-shrink"))
    s.add_argument("--level", choices=["all", "class", "instance", "mixed"], default="all", help="which edges (default all)")
    s.add_argument("--kg", metavar="DIR", help="the assembled KG (default: <paths.data>/kg)")
    s.add_argument("--base-kg", metavar="FILE", help="the Base KG (default: <paths.data>/wikidata/base_kg.jsonl)")
    s.add_argument("--top", type=int, metavar="N", help="rows in the top tables (kg.top)")
    add_format(s)

    m = add_command(group, "summary", _summary_cli, "counts and the best-supported edges of the KG (ends make kg)",
                    skip=("--engine", "--force", "--allow-shrink"))
    m.add_argument("--kg", metavar="DIR", help="the assembled KG (default: <paths.data>/kg)")
    m.add_argument("--top", type=int, metavar="N", help="edges shown (kg.top)")
    m.add_argument("--wide", action="store_true", help="full lines (default: text fits the terminal's width)")
    add_format(m)


def _assemble_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(assemble(extractions=args.extractions, linked=args.linked, corpus=args.corpus, concepts=args.concepts,
                   out=args.out, lift=args.lift, min_support=args.min_support, allow_self_loops=args.allow_self_loops,
                   shard_size=args.shard_size, force=args.force, lenient=args.lenient, dry_run=args.dry_run,
                   cfg=cfg).to_table(args.format))


def _export_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(export(endpoint=args.endpoint, sparql_endpoint=args.sparql_endpoint, graph=args.graph, store=args.store,
                 kg=args.kg, base_kg=args.base_kg, with_base_kg=not args.no_base_kg, chunk_triples=args.chunk_triples,
                 force=args.force, dry_run=args.dry_run, cfg=cfg).to_table(args.format))


def _query_cli(args: argparse.Namespace, cfg: Config) -> None:
    if args.file and args.sparql:
        raise ConfigError("give the query as an argument or with --file, not both")
    text = (sys.stdin.read() if args.file == "-" else _read(args.file)) if args.file else args.sparql
    print(query(text or "", store=args.store, union=args.union, allow_service=args.allow_service,
                cfg=cfg).to_table(args.format))


def _read(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"query file not found: {p}")
    return p.read_text(encoding="utf-8")


def _stats_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(stats(kg=args.kg, base_kg=args.base_kg, level=args.level, top=args.top, cfg=cfg).to_table(args.format))


def _summary_cli(args: argparse.Namespace, cfg: Config) -> None:
    import shutil

    width = None if args.wide else shutil.get_terminal_size((100, 24)).columns
    print(summary(kg=args.kg, top=args.top, cfg=cfg).to_table(args.format, width=width))


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["assemble", "export", "query", "stats", "summary", "Assembly", "Export", "QueryAnswer", "Stats", "Summary"]
