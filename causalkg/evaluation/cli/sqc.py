"""Judging the judges: each command one function of the Python API with its result class and its
parser, in this module (``import causalkg as ck`` re-exports the functions and classes;
docs/judging-the-judges.md).

- ``sqc`` / ``SQCScore`` / ``causalkg eval sqc`` (the work: ``evaluation.judging.sqc``)
- ``consistency`` / ``Consistency`` / ``causalkg eval consistency`` (``evaluation.judging.consistency``)
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.errors import SourceError
from causalkg.core.results import Result, check_format, dumps, path_or_none, table
from causalkg.options import add_command, add_dry_run, add_format, add_lenient, add_out

log = logging.getLogger("evaluation")



@dataclass
class SQCScore(Result):
    """SQC-Score of predicted facts against gold facts (``sqc``); a dry run's plan."""

    out: Path | None = None
    explain: bool = False
    plan: dict[str, Any] | None = None

    COLUMNS: ClassVar[list[str]] = ["scope", "units", "predicted", "gold", "matched", "credited", "weight",
                                    "precision", "recall", "sqc"]

    def _json(self) -> Any:
        if self.plan is not None:
            return self.plan
        s = self.detail.summary
        return {k: s[k] for k in ("micro", "macro", "tau", "tau_source", "matcher", "complementer", "failed_units")}

    def to_table(self, fmt: str = "text") -> str:
        check_format(fmt)
        if self.plan is not None:
            return dumps(self.plan)
        text = dumps(self._json()) if fmt == "json" else self._render(fmt)
        if self.explain:
            from causalkg.evaluation.judging.sqc import iter_report_lines

            text += "\n\n" + "\n".join(iter_report_lines(self.detail))
        return text

    def _render(self, fmt: str) -> str:
        s = self.detail.summary
        text = table(self.detail.rows(), self.COLUMNS, fmt)
        if fmt in ("md", "text"):
            tau = f"{s['tau']:.4f} ({s['tau_source']})" if s["tau"] is not None else s["tau_source"]  # n/a (why)
            text += f"\n\nmatcher {s['matcher']}; complementer {s['complementer']}; tau {tau}"
        return text


def sqc(*, units: PathLike | None = None, predicted: PathLike | None = None, gold: PathLike | None = None,
        texts: PathLike | None = None, matcher: str | None = None, complementer: str | None = None,
        threshold: float | None = None, tau: float | None = None, tau_percentile: float | None = None,
        duplicates: str | None = None, explain: bool = False, out: PathLike | None = None, lenient: bool = False,
        dry_run: bool = False, cfg: CfgLike = None) -> SQCScore:
    """SQC-Score of predicted facts against gold facts (``causalkg eval sqc``): a matcher
    (eval.sqc.matcher) pairs them, a complementer (eval.sqc.complementer) credits unmatched
    predictions the source text entails. Raises SourceError when no unit could be graded."""
    from causalkg.evaluation.judging.sqc import sqc as _sqc

    r = _sqc(resolve_config(cfg), units=units, predicted=predicted, gold=gold, texts=texts, matcher=matcher,
             complementer=complementer, threshold=threshold, tau=tau, tau_percentile=tau_percentile,
             duplicates=duplicates, out=out, lenient=lenient, dry_run=dry_run)
    if r.plan is not None:
        return SQCScore(plan=r.plan, detail=r)
    s = r.summary
    if s["failed_units"] and not s["micro"]["units"]:
        raise SourceError(f"no unit could be graded (first: {s['failed_units'][0]['error']})",
                          hint="see units.jsonl for the answers; rerun to retry (answers so far are cached)")
    return SQCScore(out=path_or_none(r.out), explain=explain, detail=r)


@dataclass
class Consistency(Result):
    """Causal epistemic consistency of a judge (``consistency``); a dry run's plan."""

    plan: dict[str, Any] | None = None

    def _json(self) -> Any:
        if self.plan is not None:
            return self.plan
        r = self.detail
        return {"judge": r.judge, "method": r.method, "headline": r.headline, "pairs": r.pairs, "scored": r.scored,
                "failures": r.failures, "summary": r.summary}

    def to_table(self, fmt: str = "text") -> str:
        check_format(fmt)
        if self.plan is not None:
            return dumps(self.plan)
        return super().to_table(fmt)

    def _render(self, fmt: str) -> str:
        from causalkg.evaluation.judging.consistency import METRICS

        r = self.detail
        rows = r.rows()
        if fmt == "csv":
            return table(rows, ["ranking", "pairs"] + [c for m in METRICS for c in (m, f"{m}_std")], "csv")
        shown = [{"ranking": row["ranking"], "pairs": row["pairs"],
                  **{m: (f"{row[m]:.3f}" + (f" ± {row[m + '_std']:.3f}" if row[m + "_std"] is not None else ""))
                     if row[m] is not None else "n/a" for m in METRICS}} for row in rows]
        return (table(shown, ["ranking", "pairs", *METRICS], fmt)
                + f"\n\njudge {r.judge}: {r.scored} of {r.pairs} pairs ranked; headline: {r.headline}")


def consistency(pairs: PathLike, *, judge: str | None = None, generator: str | None = None, limit: int | None = None,
                seed: int | None = None, igc: str | None = None, conjunctions: Sequence[str] | None = None,
                out: PathLike | None = None, lenient: bool = False, dry_run: bool = False,
                cfg: CfgLike = None) -> Consistency:
    """Causal epistemic consistency of a judge (``causalkg eval consistency``): it ranks ten
    intermediates of each pair; Kendall tau, CGP and IGC. Raises SourceError when no pair could
    be ranked."""
    from causalkg.evaluation.judging.consistency import consistency as _consistency

    r = _consistency(resolve_config(cfg), pairs=pairs, judge=judge, generator=generator, limit=limit, seed=seed,
                     igc=igc, conjunctions=conjunctions, out=out, lenient=lenient, dry_run=dry_run)
    if r.plan is not None:
        return Consistency(plan=r.plan, detail=r)
    if r.pairs and not r.scored:
        raise SourceError(f"no pair could be ranked (first: {r.failures[0]['error']})",
                          hint="see pairs.jsonl for the answers; rerun to retry (answers so far are cached)")
    return Consistency(detail=r)


# --- the command line ----------------------------------------------------------------------


def register(group: Any) -> None:
    """Add ``sqc`` and ``consistency`` to the ``eval`` group."""
    p = add_command(
        group, "sqc", _sqc_cli, "SQC-Score: grade predicted facts against gold facts like a teacher",
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
        group, "consistency", _consistency_cli, "causal epistemic consistency of a judge (rank its own intermediates)",
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


def _sqc_cli(args: argparse.Namespace, cfg: Config) -> int | None:
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


def _consistency_cli(args: argparse.Namespace, cfg: Config) -> None:
    r = consistency(args.pairs, judge=args.judge, generator=args.generator, limit=args.limit, seed=args.seed,
                    igc=args.igc, conjunctions=args.conjunction, out=args.out, lenient=args.lenient,
                    dry_run=args.dry_run, cfg=cfg)
    print(r.to_table(args.format))
    if r.plan is None:
        if r.failures:
            log.warning("%d pair(s) without a ranking (first: %s: %s)", len(r.failures), r.failures[0]["id"],
                        r.failures[0]["error"])
        log.info("wrote %s", r.out)


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["sqc", "consistency", "SQCScore", "Consistency"]
