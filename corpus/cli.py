"""The `causalkg corpus ...` commands: thin wrappers over the corpus library functions.

``causalkg corpus build`` calls ``corpus.build.build(cfg, source=, refresh=, only=, dry_run=)``;
its flags that are settings (``--endpoint``, ``--dump``, ``--index``, ``--select``,
``--workers``) become config overrides, so the manifest records them with the rest.
"""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command, add_group
from causalkg.config import Config

BUILD_HELP = """\
Build the corpus. The Wikidata part writes <paths.data>/wikidata/: event_classes.jsonl,
concepts.jsonl, base_kg.jsonl and manifest.json, from the SPARQL endpoint (--source live), the
bundled snapshot (--source snapshot), or the endpoint when it answers and else the snapshot
(--source auto, the default). The Wikipedia part then writes <paths.data>/corpus/corpus.jsonl
from the dump, for the concepts found.

examples:
  causalkg corpus build                                   # both parts, auto source
  causalkg corpus build --only wikidata --source snapshot # offline, Wikidata part only
  causalkg corpus build --source live --endpoint https://query.wikidata.org/sparql
  causalkg corpus build --dry-run                         # validate and print the plan
"""


def register(subparsers: Any) -> None:
    """Add the ``corpus`` group and its commands to the top-level parser."""
    group = add_group(subparsers, "corpus", "build the corpus: Wikidata concepts, the Base KG, Wikipedia documents")
    p = add_command(group, "build", _build, "build the Wikidata files and the Wikipedia documents",
                    description=BUILD_HELP)
    p.add_argument("--source", choices=["live", "snapshot", "auto", "json-dump"], default=None,
                   help="where Wikidata comes from (default: wikidata.source, 'auto'); json-dump reads "
                        "--wikidata-dump")
    p.add_argument("--wikidata-dump", metavar="PATH", default=None,
                   help="Wikidata JSON dump, latest-all.json.bz2 / .gz / .json (wikidata.dump)")
    p.add_argument("--endpoint", metavar="URL", default=None, help="the SPARQL endpoint (wikidata.endpoint)")
    p.add_argument("--refresh", action="store_true", help="ask the endpoint again instead of using cached answers")
    p.add_argument("--dry-run", action="store_true", help="validate the settings and print the plan; write nothing")
    p.add_argument("--only", choices=["wikidata", "wikipedia"], default=None, help="build one part only (default both)")
    wp = p.add_argument_group("Wikipedia part")
    wp.add_argument("--dump", metavar="PATH", default=None, help="pages-articles dump (wikipedia.dump)")
    wp.add_argument("--index", metavar="PATH", default=None, help="multistream index (wikipedia.index)")
    wp.add_argument("--select", choices=["concepts", "infobox", "both", "auto"], default=None,
                    help="which pages become documents (wikipedia.select)")
    wp.add_argument("--workers", metavar="N", type=int, default=None, help="worker processes (run.workers)")


def _build(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.corpus.build import build

    cfg = cfg.with_overrides({
        "wikidata.endpoint": args.endpoint,
        "wikidata.dump": args.wikidata_dump,
        "wikipedia.dump": args.dump,
        "wikipedia.index": args.index,
        "wikipedia.select": args.select,
        "run.workers": args.workers,
    })
    result = build(cfg, source=args.source, refresh=args.refresh, only=args.only, dry_run=args.dry_run)
    if args.dry_run:
        print("dry run: nothing written")
    wd = result.get("wikidata")
    if wd is not None:
        if args.dry_run:
            print("wikidata plan:")
            for line in wd["plan"]:
                print(f"  {line}")
        else:
            c = wd["counts"]
            print(f"wikidata (source: {wd['source']}, {wd['endpoint']}):")
            print(f"  {wd['outputs']['event_classes']['path']}: {c['event_classes']} event classes "
                  f"({c['event_classes_seed']} seed, {c['event_classes_discovered']} discovered)")
            print(f"  {wd['outputs']['concepts']['path']}: {c['concepts']} concepts "
                  f"({c['concepts_class']} classes, {c['concepts_instance']} instances, "
                  f"{c['concepts_with_enwiki_title']} with an enwiki title)")
            print(f"  {wd['outputs']['base_kg']['path']}: {c['base_kg_lines']} lines, "
                  f"{c['base_kg_class_pairs']} class pairs, {c['base_kg_instance_pairs']} instance pairs")
            q = wd["queries"]
            print(f"  queries: {q['queries']}" + (f", HTTP requests: {q['requests']}, cache hits: {q['cache_hits']}, "
                                                  f"retries: {q['retries']}" if "requests" in q and wd["source"] == "live"
                                                  else ""))
            for note in wd["notes"]:
                print(f"  note: {note}")
    wp = result.get("wikipedia")
    if wp is not None:
        if args.dry_run:
            print("wikipedia plan:")
            for line in wp.get("plan") or []:
                print(f"  {line}")
        else:
            print("wikipedia:")
            for key, value in (wp.get("outputs") or {}).items():
                print(f"  {key}: {value}")
            for key, value in (wp.get("counts") or {}).items():
                print(f"  {key}: {_show(key, value)}")
        for note in wp.get("notes") or []:
            if not (args.dry_run and note.startswith("plan: ")):  # the plan lines, printed above
                print(f"  note: {note}")
    return 0


def _show(key: str, value: Any) -> str:
    """A count for the summary: fill rates as percentages, other maps as ``k v, k v``."""
    if isinstance(value, dict):
        if not value:
            return "none"
        if key == "fill_rates":
            return ", ".join(f"{k} {v:.0%}" for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)
