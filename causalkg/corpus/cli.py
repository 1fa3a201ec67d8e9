"""The `causalkg corpus ...` commands: thin wrappers over the corpus library functions.

``causalkg corpus build`` calls ``causalkg.build_corpus`` (same arguments) and prints its result;
its flags that are settings (``--endpoint``, ``--dump``, ``--index``, ``--select``,
``--workers``) become config overrides, so the manifest records them with the rest.
"""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command, add_group
from causalkg.core.config import Config
from causalkg.options import add_dry_run, add_force, add_format, add_lenient

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
    add_force(p, "redo the work: ask the endpoint again instead of using cached answers, and reread the dump",
              refresh_alias=True)
    add_lenient(p, "dump streams and pages (the documents they held are lost)")
    add_dry_run(p, "validate the settings and print the plan; write nothing")
    p.add_argument("--only", choices=["wikidata", "wikipedia"], default=None, help="build one part only (default both)")
    add_format(p)
    wp = p.add_argument_group("Wikipedia part")
    wp.add_argument("--dump", metavar="PATH", default=None, help="pages-articles dump (wikipedia.dump)")
    wp.add_argument("--index", metavar="PATH", default=None, help="multistream index (wikipedia.index)")
    wp.add_argument("--select", choices=["concepts", "infobox", "both", "auto"], default=None,
                    help="which pages become documents (wikipedia.select)")
    wp.add_argument("--workers", metavar="N", type=int, default=None, help="worker processes (run.workers)")


def _build(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import build_corpus

    print(build_corpus(source=args.source, endpoint=args.endpoint, wikidata_dump=args.wikidata_dump, force=args.force, only=args.only, dump=args.dump,
                       index=args.index, select=args.select, workers=args.workers, dry_run=args.dry_run,
                       lenient=args.lenient, cfg=cfg).to_table(args.format))
