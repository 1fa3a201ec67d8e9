"""``causalkg eval sqc`` and ``eval consistency``: thin wrappers over ``evaluation.judging.sqc.sqc`` and
``evaluation.judging.consistency.consistency`` (judging the judges: docs/judging-the-judges.md)."""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from causalkg.cli import add_command
from causalkg.config import Config
from causalkg.errors import SourceError
from causalkg.tables import render_table

log = logging.getLogger("evaluation")

FORMATS = ["md", "csv", "json", "text"]
SQC_COLUMNS = ["scope", "units", "predicted", "gold", "matched", "credited", "weight", "precision", "recall", "sqc"]


def register(group: Any) -> None:
    """Add ``sqc`` and ``consistency`` to the ``eval`` group."""
    p = add_command(
        group, "sqc", _sqc, "SQC-Score: grade predicted facts against gold facts like a teacher",
        description=(
            "Match each predicted fact to at most one gold fact that means the same (embedding or LLM\n"
            "matcher), credit unmatched predictions that the unit's source text entails (NLI or LLM\n"
            "complementer, threshold tau = a percentile of the gold facts' own scores), and report\n"
            "Precision = (matched + Σw)/|predicted|, Recall = (matched + Σw)/(|gold| + Σw) and their\n"
            "harmonic mean, pooled (micro) and per unit (macro). Facts: triples {subject, relation,\n"
            "object}, causal edges {cause, effect} (flat KG shape or strings) or {text}."
        ),
    )
    p.add_argument("--units", metavar="FILE", help='one JSONL line per unit: {"unit", "text", "predicted": [...], "gold": [...]}')
    p.add_argument("--predicted", metavar="FILE", help="predicted facts JSONL, each naming its unit (eval.sqc_unit_key, doc_id)")
    p.add_argument("--gold", metavar="FILE", help="gold facts JSONL, each naming its unit")
    p.add_argument("--texts", metavar="FILE", help='the units\' source texts: JSONL {"id", "text"} (a corpus file works)')
    p.add_argument("--matcher", metavar="SPEC", help="embedding:ENCODER | openai:MODEL (default: eval.sqc_matcher)")
    p.add_argument("--complementer", metavar="SPEC",
                   help="nli:NAME_OR_PATH | openai:MODEL | none (default: eval.sqc_complementer)")
    p.add_argument("--threshold", type=float, help="embedding matcher: least cosine for a match")
    p.add_argument("--tau", type=float, help="a fixed entailment threshold instead of the gold percentile")
    p.add_argument("--tau-percentile", type=float, metavar="P", help="tau = the P-th percentile of gold scores (default 60)")
    p.add_argument("--duplicates", choices=["drop", "count"], help="a repeated prediction: scored once, or counted without credit")
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    p.add_argument("--explain", action="store_true", help="also print what matched and why, item by item")
    p.add_argument("--out", metavar="DIR", help="output folder (default: <data>/eval/sqc/<input name>)")
    p.add_argument("--lenient", action="store_true", help="skip bad lines (counted and reported) instead of failing")
    p.add_argument("--dry-run", action="store_true", help="read and check the inputs, print the plan, score nothing")

    p = add_command(
        group, "consistency", _consistency, "causal epistemic consistency of a judge (rank its own intermediates)",
        description=(
            "For each cause-effect pair with a supporter and a defeater, the judge writes two stronger and\n"
            "two weaker versions of each (ten intermediates in an intended order), then ranks all ten.\n"
            "Reports Kendall tau within supporters, within defeaters and overall, CGP and IGC (mean and\n"
            "sample std over pairs) and a confusion-matrix PNG. Judges: openai:MODEL (prompts) or\n"
            "transformers:NAME_OR_PATH (token probability of the effect after 'C and I, so E', ...).\n"
            "Input: the delta-CAUSAL CSV, a JSONL of pairs (or a previous run's pairs.jsonl) or a KG."
        ),
    )
    p.add_argument("--pairs", metavar="FILE", required=True,
                   help="delta-CAUSAL CSV, pairs JSONL {id, cause, effect, supporter, defeater}, or a flat KG JSONL")
    p.add_argument("--judge", metavar="SPEC", help="openai:MODEL | transformers:NAME_OR_PATH "
                   "(default: eval.consistency_judge, else openai:<llm.model>)")
    p.add_argument("--generator", metavar="SPEC", help="openai:MODEL that writes missing intermediates "
                   "(default: the judge when it is an openai judge)")
    p.add_argument("--limit", type=int, metavar="N", help="a seeded random sample of N pairs (0 = all)")
    p.add_argument("--seed", type=int, help="sample and presentation-order seed")
    p.add_argument("--igc", choices=["silhouette", "density"], help="IGC variant (default silhouette)")
    p.add_argument("--conjunction", action="append", metavar="WORD",
                   help="token-probability judge: a conjunction (repeatable; default so, therefore, thus, hence, because, since, as)")
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: <data>/eval/consistency/<judge>/<run>)")
    p.add_argument("--lenient", action="store_true", help="skip bad lines (counted and reported) instead of failing")
    p.add_argument("--dry-run", action="store_true", help="read the pairs, print the plan, ask nothing")


def _sqc(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.judging.sqc import iter_report_lines, sqc

    result = sqc(cfg, units=args.units, predicted=args.predicted, gold=args.gold, texts=args.texts,
                 matcher=args.matcher, complementer=args.complementer, threshold=args.threshold, tau=args.tau,
                 tau_percentile=args.tau_percentile, duplicates=args.duplicates, out=args.out,
                 lenient=args.lenient, dry_run=args.dry_run)
    if args.dry_run:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    s = result.summary
    if args.format == "json":
        print(json.dumps({k: s[k] for k in ("micro", "macro", "tau", "tau_source", "matcher", "complementer",
                                            "failed_units")}, indent=2, ensure_ascii=False))
    else:
        print(render_table(result.rows(), SQC_COLUMNS, args.format))
        if args.format in ("md", "text"):
            tau = f"{s['tau']:.4f} ({s['tau_source']})" if s["tau"] is not None else s["tau_source"]  # n/a (why)
            print(f"\nmatcher {s['matcher']}; complementer {s['complementer']}; tau {tau}")
    if args.explain:
        print()
        for line in iter_report_lines(result):
            print(line)
    if s["failed_units"]:
        log.warning("%d unit(s) could not be graded and are left out (first: %s: %s)", len(s["failed_units"]),
                    s["failed_units"][0]["unit"], s["failed_units"][0]["error"])
    log.info("wrote %s", result.out)
    if s["failed_units"] and not s["micro"]["units"]:
        raise SourceError(f"no unit could be graded (first: {s['failed_units'][0]['error']})",
                          hint="see units.jsonl for the answers; rerun to retry (answers so far are cached)")
    return 0


def _consistency(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.judging.consistency import METRICS, consistency

    result = consistency(cfg, pairs=args.pairs, judge=args.judge, generator=args.generator, limit=args.limit,
                         seed=args.seed, igc=args.igc, conjunctions=args.conjunction, out=args.out,
                         lenient=args.lenient, dry_run=args.dry_run)
    if args.dry_run:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    rows = result.rows()
    if args.format == "json":
        print(json.dumps({"judge": result.judge, "method": result.method, "headline": result.headline,
                          "pairs": result.pairs, "scored": result.scored, "failures": result.failures,
                          "summary": result.summary}, indent=2, ensure_ascii=False))
    elif args.format == "csv":
        print(render_table(rows, ["ranking", "pairs"] + [c for m in METRICS for c in (m, f"{m}_std")], "csv"))
    else:
        shown = [{"ranking": r["ranking"], "pairs": r["pairs"],
                  **{m: (f"{r[m]:.3f}" + (f" ± {r[m + '_std']:.3f}" if r[m + "_std"] is not None else ""))
                     if r[m] is not None else "n/a" for m in METRICS}} for r in rows]
        print(render_table(shown, ["ranking", "pairs", *METRICS], args.format))
        print(f"\njudge {result.judge}: {result.scored} of {result.pairs} pairs ranked; headline: {result.headline}")
    if result.failures:
        log.warning("%d pair(s) without a ranking (first: %s: %s)", len(result.failures),
                    result.failures[0]["id"], result.failures[0]["error"])
    log.info("wrote %s", result.out)
    if result.pairs and not result.scored:
        raise SourceError(f"no pair could be ranked (first: {result.failures[0]['error']})",
                          hint="see pairs.jsonl for the answers; rerun to retry (answers so far are cached)")
    return 0
