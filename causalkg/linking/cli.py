"""The ``causalkg link ...`` commands: thin wrappers over the linking library functions.

- ``causalkg link build``  -> ``causalkg.build_index`` (``linking.index.build_index``)
- ``causalkg link query``  -> ``causalkg.link`` (``linking.linker.query``)
"""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command, add_group
from causalkg.core.config import Config
from causalkg.options import add_force, add_format, add_lenient


def register(subparsers: Any) -> None:
    """Add the ``link`` group and its commands to the top-level parser."""
    group = add_group(subparsers, "link", "link phrases to Wikidata concepts")

    build = add_command(
        group, "build", _build, "build the concept index (FAISS) from data/wikidata/concepts.jsonl",
        description=(
            "Embed every label and alias of the concepts in data/wikidata/concepts.jsonl and write the\n"
            "FAISS index, its metadata and a manifest to data/linking/. Skipped when the index is current\n"
            "(same concepts file, model and index settings); a changed model or vocabulary rebuilds it."
        ),
    )
    add_force(build, "rebuild even when the index is current", refresh_alias=True)
    build.add_argument("--model", metavar="NAME", help="sentence-transformers model name or path (linking.model)")
    build.add_argument("--index", choices=["auto", "flat", "hnsw", "ivf"],
                       help="index type (linking.index; auto: ivf from 50,000 concepts, else flat)")
    build.add_argument("--concepts", metavar="FILE", help="the vocabulary (default: <paths.data>/wikidata/concepts.jsonl)")
    add_lenient(build, "concept lines")
    add_format(build)

    query = add_command(
        group, "query", _query, "link phrases to concept candidates",
        description=(
            "Normalise each phrase, match it exactly against the labels and aliases, then by nearest\n"
            "neighbours in the index; print ranked candidates (qid, label, surface, score, kind, match).\n"
            'Example: causalkg link query "the tsunamis" "a wave of protests" --top-k 3'
        ),
    )
    query.add_argument("phrases", nargs="+", metavar="PHRASE", help="phrases to link")
    query.add_argument("--top-k", type=int, metavar="K", help="candidates per phrase (linking.top_k)")
    query.add_argument("--threshold", type=float, metavar="X", help="lowest cosine similarity returned (linking.threshold)")
    query.add_argument("--instance-threshold", type=float, metavar="X",
                       help="lowest cosine similarity for a nearest-neighbour instance (linking.instance_threshold)")
    query.add_argument("--kind", choices=["class", "instance"], help="only classes, or only instances")
    query.add_argument("--under", metavar="QID", action="append", help="only concepts under this class (repeatable)")
    query.add_argument("--document-concept", metavar="QID", help="the QID of the phrases' document: prefer it and its seed classes")
    add_format(query)


def _build(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import build_index

    print(build_index(concepts=args.concepts, force=args.force, model=args.model, index=args.index,
                      lenient=args.lenient, cfg=cfg).to_table(args.format))


def _query(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import link

    print(link(args.phrases, top_k=args.top_k, threshold=args.threshold, kind=args.kind, under=args.under,
               document_concept=args.document_concept, instance_threshold=args.instance_threshold,
               cfg=cfg).to_table(args.format))
