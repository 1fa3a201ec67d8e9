"""The ``causalkg link ...`` commands: thin wrappers over the linking library functions.

- ``causalkg link build``  -> ``linking.index.build_index``
- ``causalkg link query``  -> ``linking.linker.query`` (``Linker.load(cfg).link(...)``)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from causalkg.cli import add_command, add_group
from causalkg.config import Config
from causalkg.tables import render_table


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
    build.add_argument("--refresh", action="store_true", help="rebuild even when the index is current")
    build.add_argument("--model", metavar="NAME", help="sentence-transformers model name or path (linking.model)")
    build.add_argument("--index", choices=["flat", "hnsw", "ivf"], help="index type (linking.index)")
    build.add_argument("--concepts", metavar="FILE", help="the vocabulary (default: <paths.data>/wikidata/concepts.jsonl)")
    build.add_argument("--lenient", action="store_true", help="skip and count bad concept lines instead of failing")

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
    query.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")


def _build(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.linking.index import build_index

    result = build_index(cfg, concepts_path=args.concepts, refresh=args.refresh, model=args.model,
                         index=args.index, lenient=args.lenient)
    c = result["counts"]
    what = (f"{c.get('surfaces')} surface forms of {c.get('concepts')} concepts "
            f"({c.get('classes')} classes, {c.get('instances')} instances), "
            f"model {result['model']}, index {result['index']['type']}")
    if result["built"]:
        print(f"built concept index in {result['folder']}: {what} ({result['seconds']:.1f} s)")
        for reason in result["reasons"]:
            print(f"  reason: {reason}")
    else:
        print(f"concept index in {result['folder']} is current: {what} (--refresh rebuilds it)")
    for note in result["notes"]:
        print(f"  note: {note}")
    return 0


def _query(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.linking.linker import query

    rows = query(cfg, args.phrases, top_k=args.top_k, threshold=args.threshold, kind=args.kind,
                 under=args.under, document_concept=args.document_concept,
                 instance_threshold=args.instance_threshold)
    if args.format == "json":
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    blocks = []
    for row in rows:
        shown = row["phrase"] if len(row["phrase"]) <= 80 else row["phrase"][:77] + "..."
        head = f"{json.dumps(shown, ensure_ascii=False)} -> {json.dumps(row['normalised'][:80], ensure_ascii=False)}"
        lines = [head]
        if row["candidates"]:
            table = [{"rank": i + 1, **c} for i, c in enumerate(row["candidates"])]
            text = render_table(table, ["rank", "qid", "label", "surface", "score", "kind", "match"], "text", floatfmt=".3f")
            lines += ["  " + line for line in text.splitlines()]
        if row["note"]:
            lines.append(f"  ({row['note']})")
        blocks.append("\n".join(lines))
    print("\n\n".join(blocks))
    return 0
