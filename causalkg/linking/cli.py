"""The ``causalkg link ...`` commands, each one function of the Python API with its result class
and its parser, in this module (``import causalkg as ck`` re-exports the functions and classes).

- ``build_index`` / ``IndexBuild`` / ``causalkg link build`` (the work: ``linking.index.build_index``)
- ``link`` / ``Links`` / ``causalkg link query`` (the work: ``linking.linker.query``)
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.results import Result, lines_block, table
from causalkg.options import add_command, add_force, add_format, add_group, add_lenient


@dataclass
class IndexBuild(Result):
    """What ``build_index`` did: built (with the reasons) or found current."""

    folder: Path = Path()
    built: bool = False
    model: str = ""
    index: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "IndexBuild":
        return cls(folder=Path(d["folder"]), built=bool(d["built"]), model=d["model"], index=dict(d["index"]),
                   counts=dict(d["counts"]), reasons=list(d["reasons"]), notes=list(d["notes"]),
                   seconds=float(d["seconds"]), detail=d)

    def _render(self, fmt: str) -> str:
        c = self.counts
        what = (f"{c.get('surfaces')} surface forms of {c.get('concepts')} concepts "
                f"({c.get('classes')} classes, {c.get('instances')} instances), "
                f"model {self.model}, index {self.index.get('type')}")
        if self.built:
            lines = [f"built concept index in {self.folder}: {what} ({self.seconds:.1f} s)"]
            lines += [f"  reason: {r}" for r in self.reasons]
        else:
            lines = [f"concept index in {self.folder} is current: {what} (--force rebuilds it)"]
        lines += [f"  note: {n}" for n in self.notes]
        return lines_block(lines, fmt)


def build_index(*, concepts: PathLike | None = None, model: str | None = None, index: str | None = None,
                force: bool = False, lenient: bool = False, cfg: CfgLike = None) -> IndexBuild:
    """Build the concept index (``causalkg link build``) in ``<paths.data>/linking``, or find it current.

    ``concepts``: the vocabulary (default ``<paths.data>/wikidata/concepts.jsonl``); ``model``,
    ``index``: linking.model and linking.index; ``force`` rebuilds a current index; ``lenient``
    skips and counts bad concept lines. Raises SourceError when the concepts file is missing.
    """
    from causalkg.linking.index import build_index as _build_index

    d = _build_index(resolve_config(cfg), concepts_path=concepts, refresh=force, model=model, index=index,
                     lenient=lenient)
    return IndexBuild.from_dict(d)


@dataclass
class Links(Result):
    """What ``link`` found: per phrase, its normal form, ranked candidates and a note."""

    phrases: list[dict[str, Any]] = field(default_factory=list)

    COLUMNS: ClassVar[list[str]] = ["rank", "qid", "label", "surface", "score", "kind", "match"]

    def _json(self) -> Any:
        return self.phrases

    def rows(self) -> list[dict[str, Any]]:
        """One row per (phrase, candidate)."""
        return [{"phrase": p["phrase"], "rank": i + 1, **c} for p in self.phrases for i, c in enumerate(p["candidates"])]

    def _render(self, fmt: str) -> str:
        if fmt == "csv":
            return table(self.rows(), ["phrase"] + self.COLUMNS, "csv", ".3f")
        blocks = []
        for row in self.phrases:
            shown = row["phrase"] if len(row["phrase"]) <= 80 else row["phrase"][:77] + "..."
            head = f"{json.dumps(shown, ensure_ascii=False)} -> {json.dumps(row['normalised'][:80], ensure_ascii=False)}"
            lines = [head]
            if row["candidates"]:
                ranked = [{"rank": i + 1, **c} for i, c in enumerate(row["candidates"])]
                lines += ["  " + line for line in table(ranked, self.COLUMNS, fmt, ".3f").splitlines()]
            if row["note"]:
                lines.append(f"  ({row['note']})")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def link(phrases: str | Sequence[str], *, top_k: int | None = None, threshold: float | None = None,
         instance_threshold: float | None = None, kind: str | None = None, under: Sequence[str] | None = None,
         document_concept: str | None = None, cfg: CfgLike = None) -> Links:
    """Link phrases to Wikidata concepts (``causalkg link query``): ranked candidates per phrase.

    ``kind``: ``class`` | ``instance``; ``under``: only concepts under these classes;
    ``document_concept``: the phrases' document QID (preferred, with its seed classes). Raises
    SourceError when the index is missing or stale.
    """
    from causalkg.linking.linker import query

    items = [phrases] if isinstance(phrases, str) else list(phrases)
    rows = query(resolve_config(cfg), items, top_k=top_k, threshold=threshold, kind=kind, under=under,
                 document_concept=document_concept, instance_threshold=instance_threshold)
    return Links(phrases=rows, detail=rows)


# --- the command line ----------------------------------------------------------------------


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
    print(build_index(concepts=args.concepts, force=args.force, model=args.model, index=args.index,
                      lenient=args.lenient, cfg=cfg).to_table(args.format))


def _query(args: argparse.Namespace, cfg: Config) -> None:
    print(link(args.phrases, top_k=args.top_k, threshold=args.threshold, kind=args.kind, under=args.under,
               document_concept=args.document_concept, instance_threshold=args.instance_threshold,
               cfg=cfg).to_table(args.format))


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["build_index", "link", "IndexBuild", "Links"]
