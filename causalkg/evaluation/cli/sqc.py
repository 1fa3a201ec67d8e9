"""``causalkg eval sqc`` and ``eval consistency``: thin wrappers over ``evaluation.sqc.sqc`` and
``evaluation.consistency.consistency`` (judging the judges: docs/judging-the-judges.md)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config
from causalkg.options import add_dry_run, add_format, add_lenient, add_out

log = logging.getLogger("evaluation")



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
    p.add_argument("--predicted", metavar="FILE", help="predicted facts JSONL, each naming its unit (eval.sqc.unit_key, doc_id)")
    p.add_argument("--gold", metavar="FILE", help="gold facts JSONL, each naming its unit")
    p.add_argument("--texts", metavar="FILE", help='the units\' source texts: JSONL {"id", "text"} (a corpus file works)')
    p.add_argument("--matcher", metavar="SPEC", help="embedding:ENCODER | openai:MODEL (default: eval.sqc.matcher)")
    p.add_argument("--complementer", metavar="SPEC",
                   help="nli:NAME_OR_PATH | openai:MODEL | none (default: eval.sqc.complementer)")
    p.add_argument("--threshold", type=float, help="embedding matcher: least cosine for a match")
    p.add_argument("--tau", type=float, help="a fixed entailment threshold instead of the gold percentile")
    p.add_argument("--tau-percentile", type=float, metavar="P", help="tau = the P-th percentile of gold scores (default 60)")
    p.add_argument("--duplicates", choices=["drop", "count"], help="a repeated prediction: scored once, or counted without credit")
    add_format(p, "table")
    p.add_argument("--explain", action="store_true", help="also print what matched and why, item by item")
    add_out(p, "output folder (default: <data>/eval/sqc/<input name>)")
    add_lenient(p)
    add_dry_run(p, "read and check the inputs, print the plan, score nothing")

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
                   "(default: eval.consistency.judge, else openai:<llm.model>)")
    p.add_argument("--generator", metavar="SPEC", help="openai:MODEL that writes missing intermediates "
                   "(default: the judge when it is an openai judge)")
    p.add_argument("--limit", type=int, metavar="N", help="a seeded random sample of N pairs (0 = all)")
    p.add_argument("--seed", type=int, help="sample and presentation-order seed")
    p.add_argument("--igc", choices=["silhouette", "density"], help="IGC variant (default silhouette)")
    p.add_argument("--conjunction", action="append", metavar="WORD",
                   help="token-probability judge: a conjunction (repeatable; default so, therefore, thus, hence, because, since, as)")
    add_format(p, "table")
    add_out(p, "output folder (default: <data>/eval/consistency/<judge>/<run>)")
    add_lenient(p)
    add_dry_run(p, "read the pairs, print the plan, ask nothing")


def _sqc(args: argparse.Namespace, cfg: Config) -> int | None:
    from causalkg.api import sqc

    r = sqc(units=args.units, predicted=args.predicted, gold=args.gold, texts=args.texts, matcher=args.matcher,
            complementer=args.complementer, threshold=args.threshold, tau=args.tau, tau_percentile=args.tau_percentile,
            duplicates=args.duplicates, explain=args.explain, out=args.out, lenient=args.lenient,
            dry_run=args.dry_run, cfg=cfg)
    print(r.to_table(args.format))
    failed = [] if r.plan is not None else r.summary["failed_units"]
    if failed:
        print(f"error: {len(failed)} unit(s) could not be graded (first: {failed[0]['unit']}: {failed[0]['error']}); "
              f"the incomplete result is in {r.out}/summary.partial.json, any complete one there is kept "
              "(rerun: answers already given come from the cache)", file=sys.stderr)
        return 1
    if r.out:
        log.info("wrote %s", r.out)
    return None


def _consistency(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import consistency

    r = consistency(args.pairs, judge=args.judge, generator=args.generator, limit=args.limit, seed=args.seed,
                    igc=args.igc, conjunctions=args.conjunction, out=args.out, lenient=args.lenient,
                    dry_run=args.dry_run, cfg=cfg)
    print(r.to_table(args.format))
    if r.plan is None:
        if r.failures:
            log.warning("%d pair(s) without a ranking (first: %s: %s)", len(r.failures), r.failures[0]["id"],
                        r.failures[0]["error"])
        log.info("wrote %s", r.out)
