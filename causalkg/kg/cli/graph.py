"""The KG-building verbs of ``causalkg kg``: thin wrappers over one library function each.

- ``causalkg kg assemble`` -> ``causalkg.assemble`` (``kg.assemble.assemble``)
- ``causalkg kg export``   -> ``causalkg.export`` (embedded Oxigraph, or ``--endpoint`` via GSP)
- ``causalkg kg query``    -> ``causalkg.query``
- ``causalkg kg stats``    -> ``causalkg.stats``
- ``causalkg kg summary``  -> ``causalkg.summary``

Each prints the result's ``to_table(--format)``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.options import add_dry_run, add_force, add_format, add_lenient, add_out


def register(group: Any) -> None:
    """Add the assembly, export, query, stats and summary verbs to the ``kg`` group."""
    a = add_command(
        group, "assemble", _assemble, "link extracted pairs and build the causal KG in data/kg/",
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
        group, "export", _export, "load the KG into the embedded triple store, or a remote one (--endpoint)",
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
        group, "query", _query, "run a SPARQL query over the embedded store",
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

    s = add_command(group, "stats", _stats, "graph statistics of the KG (networkx) and agreement with the Base KG",
                    skip=("--engine", "--force", "--allow-shrink"))
    s.add_argument("--level", choices=["all", "class", "instance", "mixed"], default="all", help="which edges (default all)")
    s.add_argument("--kg", metavar="DIR", help="the assembled KG (default: <paths.data>/kg)")
    s.add_argument("--base-kg", metavar="FILE", help="the Base KG (default: <paths.data>/wikidata/base_kg.jsonl)")
    s.add_argument("--top", type=int, metavar="N", help="rows in the top tables (kg.top)")
    add_format(s)

    m = add_command(group, "summary", _summary, "counts and the best-supported edges of the KG (ends make kg)",
                    skip=("--engine", "--force", "--allow-shrink"))
    m.add_argument("--kg", metavar="DIR", help="the assembled KG (default: <paths.data>/kg)")
    m.add_argument("--top", type=int, metavar="N", help="edges shown (kg.top)")
    m.add_argument("--wide", action="store_true", help="full lines (default: text fits the terminal's width)")
    add_format(m)


def _assemble(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import assemble

    print(assemble(extractions=args.extractions, linked=args.linked, corpus=args.corpus, concepts=args.concepts,
                   out=args.out, lift=args.lift, min_support=args.min_support, allow_self_loops=args.allow_self_loops,
                   shard_size=args.shard_size, force=args.force, lenient=args.lenient, dry_run=args.dry_run,
                   cfg=cfg).to_table(args.format))


def _export(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import export

    print(export(endpoint=args.endpoint, sparql_endpoint=args.sparql_endpoint, graph=args.graph, store=args.store,
                 kg=args.kg, base_kg=args.base_kg, with_base_kg=not args.no_base_kg, chunk_triples=args.chunk_triples,
                 force=args.force, dry_run=args.dry_run, cfg=cfg).to_table(args.format))


def _query(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import query

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


def _stats(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import stats

    print(stats(kg=args.kg, base_kg=args.base_kg, level=args.level, top=args.top, cfg=cfg).to_table(args.format))


def _summary(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import summary

    import shutil

    width = None if args.wide else shutil.get_terminal_size((100, 24)).columns
    print(summary(kg=args.kg, top=args.top, cfg=cfg).to_table(args.format, width=width))
