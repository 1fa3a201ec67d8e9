"""``causalkg eval recall``, ``eval precision`` and ``eval report``: thin wrappers over
``causalkg.recall``, ``causalkg.precision`` and ``causalkg.report``, which print the result's
``to_table(--format)``."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config
from causalkg.core.errors import SourceError
from causalkg.options import add_format, add_lenient, add_out

log = logging.getLogger("evaluation")


def register(group: Any) -> None:
    """Add ``recall``, ``precision`` and ``report`` to the ``eval`` group."""
    p = add_command(
        group, "recall", _recall, "recall of KGs against the Base KG (WikiCausal definitions, and more)",
        description=(
            "Score each --kg against the Base KG as the WikiCausal reference does: views full, classes,\n"
            "instances; hit_count, rel_count, base_kg_size, recall, base_count, base_coverage (then\n"
            "precision = hit/rel). Extra columns: --any-id, and reachable recall with --corpus.\n"
            "KG lines may be in the nested base-KG shape or the flat {cause, effect} shape."
        ),
    )
    p.add_argument("--kg", action="append", required=True, metavar="FILE", help="a KG JSONL to score (repeatable)")
    p.add_argument("--base-kg", metavar="FILE", help="the Base KG JSONL (default: eval.recall.base_kg, the bundled v1)")
    add_format(p, "table")
    p.add_argument("--any-id", action="store_true", default=None,
                   help="add any_id_* columns: a flat pair hits when any of its candidate ids matches")
    p.add_argument("--corpus", metavar="FILE",
                   help="a corpus JSONL: add reachable_* columns (Base pairs whose cause has a document)")
    p.add_argument("--per-class", action="store_true", help="also print the per-class breakdown")
    add_out(p, "write tables, per-class CSV, every Base pair found/missed (JSONL) and a PNG plot here")
    add_lenient(p)

    p = add_command(
        group, "precision", _precision, "precision of KGs judged by a language model (WikiCausal definitions)",
        description=(
            "Ask a judge whether each unique (cause label, effect label) pair is causal, K times; a pair is\n"
            "correct when floor(K/2)+1 answers start with 'yes'. Views full, types, instances.\n"
            "Judges: openai:MODEL (any OpenAI-compatible endpoint, [llm] config) or\n"
            "transformers:NAME_OR_PATH (a local seq2seq or causal LM). Answers are cached on disk."
        ),
    )
    p.add_argument("--kg", action="append", metavar="FILE", help="a KG JSONL to judge (repeatable; required "
                   "unless --human)")
    p.add_argument("--human", metavar="FILE", help="precision from people's judgements instead (the JSONL that "
                   "causalkg serve appends to, data/judgements/judgements.jsonl), with a Wilson interval")
    p.add_argument("--llm", action="append", metavar="FILE", help="with --human: an LLM judge's judgements.jsonl "
                   "(from eval precision) for Cohen's kappa (default: every <data>/eval/precision/*/judgements.jsonl)")
    p.add_argument("--judge", metavar="BACKEND:MODEL", help="openai:MODEL or transformers:NAME_OR_PATH "
                   "(default: eval.precision.judge)")
    p.add_argument("--tries", type=int, metavar="K", help="answers per pair (default: eval.precision.tries, 5)")
    p.add_argument("--template", metavar="NAME|FILE", help="instruction | question | a file (default instruction)")
    p.add_argument("--temperature", type=float, help="sampling temperature for K > 1 (0 = greedy)")
    p.add_argument("--seed", type=int, help="try t is sampled with seed SEED + t")
    p.add_argument("--concurrency", type=int, help="requests in flight at once (openai judge; llm.concurrency)")
    p.add_argument("--limit", type=int, metavar="N", help="judge only the first N unique pairs of each KG")
    p.add_argument("--reference-quirks", action="store_true",
                   help="reproduce the reference script's defects (first character of flat cause labels; "
                        "pairs filed under the view first seen) to show their effect")
    add_format(p, "table")
    p.add_argument("--reference-table", action="store_true",
                   help="print the reference's table layout (full/types/instances precision) instead")
    add_out(p, "output folder (default: <data>/eval/precision)")
    add_lenient(p)

    p = add_command(
        group, "report", _report, "write data/eval/report.md: recall and precision of our KG and the peers",
        description=(
            "Recall of our KG (data/kg/) and the CauseNet KGs against the Base KG built by `make corpus` and\n"
            "the bundled WikiCausal Base KG, and precision when a judge is configured; tables and plots in\n"
            "data/eval/report.md. Missing inputs are listed with the command that makes them."
        ),
    )
    p.add_argument("--judge", metavar="BACKEND:MODEL", help="judge for precision (default: eval.precision.judge; "
                   "none = precision skipped)")
    p.add_argument("--tries", type=int, metavar="K", help="answers per pair (default: eval.precision.tries)")
    p.add_argument("--limit", type=int, metavar="N", help="judge only the first N unique pairs of each KG")
    add_out(p, "output folder (default: <data>/eval)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    add_format(p)


def _recall(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import recall

    r = recall(args.kg, base_kg=args.base_kg, any_id=args.any_id, corpus=args.corpus, per_class=args.per_class,
               out=args.out, lenient=args.lenient, cfg=cfg)
    print(r.to_table(args.format))
    _log(r.notes, r.written)


def _precision(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import human_precision, precision

    if args.human:
        r = human_precision(args.human, llm=args.llm, lenient=args.lenient, cfg=cfg)
        print(r.to_table(args.format))
        return _log(r.notes, {})
    try:
        r = precision(args.kg, judge=args.judge, tries=args.tries, template=args.template,
                      temperature=args.temperature, seed=args.seed, concurrency=args.concurrency, limit=args.limit,
                      reference_quirks=args.reference_quirks, reference_table=args.reference_table, out=args.out,
                      lenient=args.lenient, cfg=cfg)
    except SourceError as exc:  # some pairs failed: show what was judged, then the error
        if getattr(exc, "result", None) is not None:
            print(exc.result.to_table(args.format))
        raise
    print(r.to_table(args.format))
    _log(r.notes, {"summary_md": r.written.get("summary_md", "")})


def _report(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.api import report

    r = report(judge=args.judge, out=args.out, tries=args.tries, limit=args.limit, plots=not args.no_plots, cfg=cfg)
    print(r.to_table(args.format))
    if r.status:
        kept = "; the last complete report.md beside it is kept" if r.path.with_name("report.md").exists() else ""
        print("error: " + (r.precision_error or "some pairs could not be judged; see the report")
              + f" (this run's report is {r.path}{kept})", file=sys.stderr)
    return r.status


def _log(notes: list[str], written: dict[str, str]) -> None:
    for note in notes:
        log.warning("%s", note)
    if any(written.values()):
        log.info("wrote %s", ", ".join(v for v in written.values() if v))
