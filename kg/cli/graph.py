"""The KG-building verbs of ``causalkg kg``: thin wrappers over one library function each.

- ``causalkg kg assemble`` -> ``kg.assemble.assemble``
- ``causalkg kg export``   -> ``kg.store.export`` (embedded Oxigraph, or ``--endpoint`` via GSP)
- ``causalkg kg query``    -> ``kg.store.query`` + ``kg.store.format_result``
- ``causalkg kg stats``    -> ``kg.stats.stats`` + ``kg.stats.render_stats``
- ``causalkg kg summary``  -> ``kg.stats.summary`` + ``kg.stats.render_summary``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from causalkg.cli import add_command
from causalkg.config import Config
from causalkg.errors import ConfigError


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
    a.add_argument("--out", metavar="DIR", help="output folder (default: <paths.data>/kg)")
    a.add_argument("--lift", choices=["seed_classes", "instance_of", "both", "none"], help="lift instance ends to (kg.lift)")
    a.add_argument("--min-support", type=int, metavar="N", help="drop edges with fewer distinct sentences (kg.min_support)")
    a.add_argument("--allow-self-loops", action="store_true", default=None,
                   help="keep pairs whose two ends link to the same concept (kg.allow_self_loops)")
    a.add_argument("--shard-size", type=int, metavar="N", help="extractions per linker call (kg.shard_size)")
    a.add_argument("--force", action="store_true", help="rebuild even when the outputs are current")
    a.add_argument("--lenient", action="store_true", help="skip and count bad input lines instead of failing")
    a.add_argument("--dry-run", action="store_true", help="check the inputs and settings, print the plan, write nothing")

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
    e.add_argument("--force", action="store_true", help="reload the embedded store even when it is current")
    e.add_argument("--dry-run", action="store_true", help="check the KG files and settings, print the plan, load nothing")

    q = add_command(
        group, "query", _query, "run a SPARQL query over the embedded store",
        description=(
            "The default graph is the KG's named graph; the Base KG is in GRAPH <kg.base_graph>. The prefixes\n"
            "ck, wd, wdt, rdfs, prov, dcterms, schema, xsd, edge and mention are predeclared.\n"
            "Example: causalkg kg query 'SELECT ?effect ?label WHERE { wd:Q7944 ck:causes ?effect .\n"
            "         ?effect rdfs:label ?label }'"
        ),
    )
    q.add_argument("sparql", nargs="?", metavar="SPARQL", help="the query (or --file)")
    q.add_argument("--file", metavar="FILE", help="read the query from a file ('-' for stdin)")
    q.add_argument("--format", choices=["table", "md", "csv", "json"], default="table",
                   help="table (aligned text), md, csv or json (SPARQL results formats for csv/json)")
    q.add_argument("--store", metavar="DIR", help="the embedded store's folder (default: <paths.data>/store)")
    q.add_argument("--union", action="store_true", help="query the union of all graphs as the default graph")

    s = add_command(group, "stats", _stats, "graph statistics of the KG (networkx) and agreement with the Base KG")
    s.add_argument("--level", choices=["all", "class", "instance", "mixed"], default="all", help="which edges (default all)")
    s.add_argument("--kg", metavar="DIR", help="the assembled KG (default: <paths.data>/kg)")
    s.add_argument("--base-kg", metavar="FILE", help="the Base KG (default: <paths.data>/wikidata/base_kg.jsonl)")
    s.add_argument("--top", type=int, metavar="N", help="rows in the top tables (kg.top)")
    s.add_argument("--format", choices=["text", "md", "json"], default="text")

    m = add_command(group, "summary", _summary, "counts and the best-supported edges of the KG (ends make kg)")
    m.add_argument("--kg", metavar="DIR", help="the assembled KG (default: <paths.data>/kg)")
    m.add_argument("--top", type=int, metavar="N", help="edges shown (kg.top)")
    m.add_argument("--format", choices=["text", "md", "json"], default="text")


def _assemble(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.assemble import assemble

    if args.extractions and args.linked:
        raise ConfigError("give --extractions or --linked, not both")
    cfg = cfg.with_overrides({"kg.lift": args.lift, "kg.min_support": args.min_support,
                              "kg.allow_self_loops": args.allow_self_loops, "kg.shard_size": args.shard_size},
                             origin="kg assemble")
    r = assemble(cfg, extractions=args.extractions, linked=args.linked, corpus=args.corpus, concepts=args.concepts,
                 out=args.out, force=args.force, lenient=args.lenient, dry_run=args.dry_run)
    if r.plan is not None:
        p = r.plan
        print(f"plan: assemble the causal KG into {p['out']}")
        print(f"  {p['source']['kind']}: {p['source']['path']}")
        print(f"  corpus: {p['corpus']['path']}{'' if p['corpus']['exists'] else ' (missing: no titles/URLs beyond the extractions)'}")
        print(f"  concepts: {p['concepts']['path']}")
        print(f"  linker: {p['linker']}{'' if p['linking_index_exists'] or 'load' not in p['linker'] else ' (missing: run causalkg link build)'}")
        o = p["options"]
        print(f"  shards of {o['shard_size']} (done: {p['shards_done']}), lift={o['lift']}, min_support={o['min_support']}, "
              f"allow_self_loops={o['allow_self_loops']}, top_k={o['k']}, threshold={o['threshold']}")
        print("  outputs are up to date: nothing to do" if p["up_to_date"] else "  outputs will be (re)built")
        return 0
    c = r.counts
    head = "is up to date (--force rebuilds it)" if r.skipped else "written"
    print(f"causal KG in {r.out} {head}: {c.get('edges', 0)} edges ({c.get('edges_class', 0)} class, "
          f"{c.get('edges_instance', 0)} instance, {c.get('edges_mixed', 0)} mixed), {c.get('nodes', 0)} concepts, "
          f"{c.get('mentions', 0)} mentions, {c.get('triples', 0)} triples")
    if not r.skipped:
        print(f"  linked {c.get('link_linked', 0)} of {c.get('link_extractions', 0)} pairs at both ends; "
              f"{c.get('link_self_loops_dropped', 0)} self-loops dropped; "
              f"{c.get('aggregate_lifted_edges', 0)} class edges lifted from instances")
    for note in r.notes:
        print(f"  note: {note}")
    return 0


def _export(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.store import export

    r = export(cfg, endpoint=args.endpoint, sparql_endpoint=args.sparql_endpoint, graph=args.graph, store=args.store,
               kg=args.kg, base_kg=args.base_kg, with_base_kg=not args.no_base_kg, chunk_triples=args.chunk_triples,
               force=args.force, dry_run=args.dry_run)
    if args.dry_run:
        print(f"plan: load into {r.target}")
        for graph, n in r.graphs.items():
            print(f"  <{graph}>: {n} triples")
        for note in r.notes:
            print(f"  note: {note}")
        return 0
    state = "is up to date (--force reloads it)" if r.skipped else f"loaded in {r.seconds:.1f} s"
    print(f"{r.target} {state}:")
    for graph, n in r.graphs.items():
        print(f"  <{graph}>: {n} triples")
    for note in r.notes:
        print(f"  note: {note}")
    return 0


def _query(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.store import format_result, query

    if args.file and args.sparql:
        raise ConfigError("give the query as an argument or with --file, not both")
    if args.file:
        text = sys.stdin.read() if args.file == "-" else _read(args.file)
    elif args.sparql:
        text = args.sparql
    else:
        raise ConfigError("no query given", hint="causalkg kg query 'SELECT ...' or --file query.rq")
    result = query(cfg, text, store=args.store, union=args.union)
    print(format_result(result, args.format))
    return 0


def _read(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"query file not found: {p}")
    return p.read_text(encoding="utf-8")


def _stats(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.stats import render_stats, stats

    print(render_stats(stats(cfg, kg=args.kg, base_kg=args.base_kg, level=args.level, top=args.top), args.format))
    return 0


def _summary(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.stats import render_summary, summary

    print(render_summary(summary(cfg, kg=args.kg, top=args.top), args.format))
    return 0
