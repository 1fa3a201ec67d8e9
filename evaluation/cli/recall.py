"""``causalkg eval recall``, ``eval precision`` and ``eval report``: thin wrappers over
``evaluation.wikicausal.recall.eval_recall``, ``evaluation.wikicausal.precision.eval_precision`` and
``evaluation.wikicausal.report.eval_report``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from causalkg.cli import add_command
from causalkg.config import Config
from causalkg.errors import SourceError

log = logging.getLogger("evaluation")

FORMATS = ["md", "csv", "json"]


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
    p.add_argument("--base-kg", metavar="FILE", help="the Base KG JSONL (default: eval.recall_base_kg, the bundled v1)")
    p.add_argument("--format", choices=FORMATS + ["text"], default="md", help="table format (default md)")
    p.add_argument("--any-id", action="store_true", default=None,
                   help="add any_id_* columns: a flat pair hits when any of its candidate ids matches")
    p.add_argument("--corpus", metavar="FILE",
                   help="a corpus JSONL: add reachable_* columns (Base pairs whose cause has a document)")
    p.add_argument("--per-class", action="store_true", help="also print the per-class breakdown")
    p.add_argument("--out", metavar="DIR",
                   help="write tables, per-class CSV, every Base pair found/missed (JSONL) and a PNG plot here")
    p.add_argument("--lenient", action="store_true", help="skip bad lines (counted and reported) instead of failing")

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
                   "(default: eval.precision_judge)")
    p.add_argument("--tries", type=int, metavar="K", help="answers per pair (default: eval.precision_tries, 5)")
    p.add_argument("--template", metavar="NAME|FILE", help="instruction | question | a file (default instruction)")
    p.add_argument("--temperature", type=float, help="sampling temperature for K > 1 (0 = greedy)")
    p.add_argument("--seed", type=int, help="try t is sampled with seed SEED + t")
    p.add_argument("--concurrency", type=int, help="requests in flight at once (openai judge; llm.concurrency)")
    p.add_argument("--limit", type=int, metavar="N", help="judge only the first N unique pairs of each KG")
    p.add_argument("--reference-quirks", action="store_true",
                   help="reproduce the reference script's defects (first character of flat cause labels; "
                        "pairs filed under the view first seen) to show their effect")
    p.add_argument("--format", choices=FORMATS + ["text"], default="md", help="table format (default md)")
    p.add_argument("--reference-table", action="store_true",
                   help="print the reference's table layout (full/types/instances precision) instead")
    p.add_argument("--out", metavar="DIR", help="output folder (default: <data>/eval/precision)")
    p.add_argument("--lenient", action="store_true", help="skip bad lines (counted and reported) instead of failing")

    p = add_command(
        group, "report", _report, "write data/eval/report.md: recall and precision of our KG and the peers",
        description=(
            "Recall of our KG (data/kg/) and the CauseNet KGs against the Base KG built by `make corpus` and\n"
            "the bundled WikiCausal Base KG, and precision when a judge is configured; tables and plots in\n"
            "data/eval/report.md. Missing inputs are listed with the command that makes them."
        ),
    )
    p.add_argument("--judge", metavar="BACKEND:MODEL", help="judge for precision (default: eval.precision_judge; "
                   "none = precision skipped)")
    p.add_argument("--tries", type=int, metavar="K", help="answers per pair (default: eval.precision_tries)")
    p.add_argument("--limit", type=int, metavar="N", help="judge only the first N unique pairs of each KG")
    p.add_argument("--out", metavar="DIR", help="output folder (default: <data>/eval)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")


def _recall(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.wikicausal.recall import eval_recall
    from causalkg.evaluation.wikicausal.report import bundled_path

    base = args.base_kg or bundled_path(cfg, cfg["eval"]["recall_base_kg"])
    any_id = cfg["eval"]["recall_any_id"] if args.any_id is None else True
    report = eval_recall(args.kg, base, any_id=any_id, corpus=args.corpus, lenient=args.lenient,
                         out=args.out, cfg=cfg)
    print(report.render(args.format))
    if args.per_class:
        print()
        print(report.render_by_class(args.format))
    for note in report.notes:
        log.warning("%s", note)
    if args.out:
        log.info("wrote %s", ", ".join(report.written.values()))
    return 0


def _human_precision(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.wikicausal.human import human_precision

    llm = args.llm or sorted((cfg.path("paths.data") / "eval" / "precision").glob("*/judgements.jsonl"))
    result = human_precision(args.human, llm=llm, lenient=args.lenient)
    print(result.render("md" if args.format == "text" else args.format))
    for note in result.notes:
        log.warning("%s", note)
    return 0


def _precision(args: argparse.Namespace, cfg: Config) -> int:
    if args.human:
        return _human_precision(args, cfg)
    if not args.kg:
        from causalkg.errors import ConfigError

        raise ConfigError("no KG to judge", hint="pass --kg FILE (repeatable), or --human FILE for people's judgements")
    from causalkg.evaluation.wikicausal.judges import create_judge
    from causalkg.evaluation.wikicausal.precision import NO_JUDGE_HINT, check_tries, eval_precision, judge_consistency

    spec = args.judge or cfg["eval"]["precision_judge"]
    if not spec:
        from causalkg.errors import ConfigError

        raise ConfigError("no judge configured", hint=NO_JUDGE_HINT)
    if args.tries is not None:
        check_tries(args.tries)
    judge = create_judge(spec, cfg, temperature=args.temperature, seed=args.seed,
                         **({"concurrency": args.concurrency} if args.concurrency and spec.startswith("openai") else {}))
    report = eval_precision(args.kg, judge, cfg=cfg, tries=args.tries, template=args.template,
                            reference_quirks=args.reference_quirks, limit=args.limit, lenient=args.lenient,
                            out=args.out, consistency=judge_consistency(judge.spec, cfg))
    fmt = args.format
    if fmt == "json":
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(report.render_reference(fmt) if args.reference_table else report.render(fmt))
        if fmt in ("md", "text"):
            print()
            print(report.usage_line())
            if report.consistency_line():
                print(report.consistency_line())
    for note in report.notes:
        log.warning("%s", note)
    log.info("wrote %s", report.written.get("summary_md", ""))
    if report.failed:
        n_pairs = sum(r["pairs"] for r in report.rows if r["view"] == "full")
        raise SourceError(
            f"{len(report.failed)} of {n_pairs} pairs could not be judged (first error: {report.failed[0]['error']})",
            hint="rerun the same command to retry them; answers so far are cached",
        )
    return 0


def _report(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.wikicausal.report import eval_report

    result = eval_report(cfg, judge=args.judge, out=args.out, tries=args.tries, limit=args.limit,
                         plot=not args.no_plots)
    print(f"wrote {result.path}")
    for i in result.missing:
        print(f"missing {i.role}: {i.path} (make it with: {i.make})")
    for i in result.empty:
        print(f"empty {i.role}: {i.path} (0 bytes: the stage that wrote it found nothing; see its output, or: {i.make})")
    if result.precision is None and result.precision_error is None:
        print("precision skipped: no judge configured (set eval.precision_judge or pass --judge)")
    elif result.precision is not None:
        print(result.precision.render_reference("md"))
        print(result.precision.usage_line())
    if result.status:
        print("error: " + (result.precision_error or "some pairs could not be judged; see the report"), file=sys.stderr)
    return result.status
