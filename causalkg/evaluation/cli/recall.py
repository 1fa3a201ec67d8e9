"""The WikiCausal measures' commands, each one function of the Python API with its result class
and its parser, in this module (``import causalkg as ck`` re-exports the functions and classes).

- ``recall`` / ``Recall`` / ``causalkg eval recall`` (the work: ``evaluation.wikicausal.recall``)
- ``precision`` / ``Precision`` / ``causalkg eval precision`` (``evaluation.wikicausal.precision``)
- ``human_precision`` / ``HumanPrecisionResult`` / ``causalkg eval precision --human`` (``evaluation.wikicausal.human``)
- ``report`` / ``Report`` / ``causalkg eval report`` (``evaluation.wikicausal.report``)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.results import Result, lines_block, plain
from causalkg.options import add_command, add_format, add_lenient, add_out

log = logging.getLogger("evaluation")


def _kgs(kg: PathLike | Sequence[PathLike]) -> list[PathLike]:
    items = [kg] if isinstance(kg, (str, os.PathLike)) else list(kg)
    if not items:
        raise ConfigError("no KG given", hint="pass one KG JSONL or a list of them")
    return items


@dataclass
class Recall(Result):
    """Recall of each KG against the Base KG (``recall``): rows per KG and view."""

    base_kg: Path = Path()
    per_class: bool = False
    notes: list[str] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One row per KG and view (full, classes, instances)."""
        return self.detail.rows

    def _json(self) -> Any:
        return json.loads(self.detail.render("json"))

    def to_dict(self) -> dict[str, Any]:
        return {"base_kg": str(self.base_kg), "rows": self._json(), "notes": self.notes, "written": self.written}

    def _render(self, fmt: str) -> str:
        text = self.detail.render(fmt)
        if self.per_class:
            text += "\n\n" + self.detail.render_by_class(fmt)
        return text


def recall(kg: PathLike | Sequence[PathLike], *, base_kg: PathLike | None = None, any_id: bool | None = None,
           corpus: PathLike | None = None, per_class: bool = False, out: PathLike | None = None,
           lenient: bool = False, cfg: CfgLike = None) -> Recall:
    """Recall of one or more KGs against the Base KG, as WikiCausal defines it (``causalkg eval recall``).

    ``base_kg``: default eval.recall.base_kg (the bundled WikiCausal Base KG v1); ``any_id``
    (default eval.recall.any_id) adds the any-candidate-id columns; ``corpus`` adds reachable
    recall; ``per_class`` also renders the per-class table; ``out`` writes tables, per-class CSV,
    every Base pair found or missed and a plot. Raises SchemaError on a bad line unless ``lenient``.
    """
    from causalkg.evaluation.wikicausal.recall import eval_recall
    from causalkg.evaluation.wikicausal.report import bundled_path

    c = resolve_config(cfg)
    base = Path(base_kg) if base_kg else bundled_path(c, c.get("eval.recall.base_kg"))
    report = eval_recall(_kgs(kg), base, any_id=c.get("eval.recall.any_id") if any_id is None else any_id,
                         corpus=corpus, lenient=lenient, out=out, cfg=c)
    return Recall(base_kg=base, per_class=per_class, notes=list(report.notes), written=dict(report.written),
                  detail=report)


@dataclass
class Precision(Result):
    """Precision of each KG judged by a language model (``precision``)."""

    judge: str = ""
    reference_table: bool = False
    notes: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One row per KG and view (full, types, instances)."""
        return self.detail.rows

    def _json(self) -> Any:
        return self.detail.to_json()

    def to_dict(self) -> dict[str, Any]:
        return self._json()

    def _render(self, fmt: str) -> str:
        r = self.detail
        text = r.render_reference(fmt) if self.reference_table else r.render(fmt)
        if fmt in ("md", "text"):
            text += "\n\n" + r.usage_line()
            if r.consistency_line():
                text += "\n" + r.consistency_line()
        return text


def precision(kg: PathLike | Sequence[PathLike] | None, *, judge: str | None = None, tries: int | None = None,
              template: str | None = None, temperature: float | None = None, seed: int | None = None,
              concurrency: int | None = None, limit: int | None = None, reference_quirks: bool = False,
              reference_table: bool = False, out: PathLike | None = None, lenient: bool = False,
              cfg: CfgLike = None) -> Precision:
    """Precision of KGs judged by a language model, as WikiCausal defines it (``causalkg eval precision``).

    ``judge``: ``openai:MODEL`` or ``transformers:NAME_OR_PATH`` (default eval.precision.judge);
    ``tries`` answers per pair, correct on a majority. Answers are cached on disk. Raises
    ConfigError when no judge is configured, SourceError when some pairs could not be judged
    (the result is on the exception's ``result``; rerunning retries them).
    """
    from causalkg.evaluation.wikicausal.judges import create_judge
    from causalkg.evaluation.wikicausal.precision import NO_JUDGE_HINT, check_tries, eval_precision, judge_consistency

    if not kg:
        raise ConfigError("no KG to judge", hint="pass --kg FILE (repeatable), or --human FILE for people's judgements")
    c = resolve_config(cfg)
    spec = judge or c.get("eval.precision.judge")
    if not spec:
        raise ConfigError("no judge configured", hint=NO_JUDGE_HINT)
    if tries is not None:
        check_tries(tries)
    extra = {"concurrency": concurrency} if concurrency and spec.startswith("openai") else {}
    j = create_judge(spec, c, temperature=temperature, seed=seed, **extra)
    report = eval_precision(_kgs(kg), j, cfg=c, tries=tries, template=template, reference_quirks=reference_quirks,
                            limit=limit, lenient=lenient, out=out, consistency=judge_consistency(j.spec, c))
    result = Precision(judge=j.spec, reference_table=reference_table, notes=list(report.notes),
                       failed=list(report.failed), written=dict(report.written), detail=report)
    if report.failed:
        n_pairs = sum(r["pairs"] for r in report.rows if r["view"] == "full")
        kept = ""
        if report.written.get("partial"):
            partial = Path(report.written["partial"])
            kept = (f"; this run's partial result is in {partial}"
                    + (", the last complete one is kept" if (partial.parent / "precision.json").exists() else ""))
        err = SourceError(f"{len(report.failed)} of {n_pairs} pairs could not be judged "
                          f"(first error: {report.failed[0]['error']}){kept}",
                          hint="rerun the same command to retry them; answers so far are cached")
        err.result = result  # type: ignore[attr-defined]
        raise err
    return result


@dataclass
class HumanPrecisionResult(Result):
    """Precision from people's judgements (``human_precision``), with a Wilson interval."""

    precision: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    notes: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.rows()

    def _json(self) -> Any:
        return self.detail.to_json()

    def to_dict(self) -> dict[str, Any]:
        return self._json()

    def _render(self, fmt: str) -> str:
        return self.detail.render(fmt)


def human_precision(judgements: PathLike, *, llm: Sequence[PathLike] | None = None, lenient: bool = False,
                    cfg: CfgLike = None) -> HumanPrecisionResult:
    """Precision from people's judgements (``causalkg eval precision --human``): the JSONL that
    ``causalkg serve`` appends to, with a 95% Wilson interval, and Cohen's kappa with the LLM
    judge's verdicts in ``llm`` (default: every ``<paths.data>/eval/precision/*/judgements.jsonl``).
    Raises SourceError when the file is missing."""
    from causalkg.evaluation.wikicausal.human import human_precision as _human

    c = resolve_config(cfg)
    from causalkg.core.layout import Layout

    files = list(llm) if llm else sorted(Layout.from_config(c).eval_out("precision").glob("*/judgements.jsonl"))
    r = _human(judgements, llm=files, lenient=lenient)
    return HumanPrecisionResult(precision=r.precision, ci_low=r.ci_low, ci_high=r.ci_high, notes=list(r.notes), detail=r)


@dataclass
class Report(Result):
    """What ``report`` wrote (data/eval/report.md) and what it had to skip."""

    path: Path = Path()
    status: int = 0

    def to_dict(self) -> dict[str, Any]:
        r = self.detail
        return {"path": str(self.path), "status": self.status,
                "missing": [plain(i) for i in r.missing], "empty": [plain(i) for i in r.empty],
                "precision": r.precision.to_json() if r.precision is not None else None,
                "precision_error": r.precision_error}

    def _render(self, fmt: str) -> str:
        r = self.detail
        lines = [f"wrote {self.path}"]
        lines += [f"missing {i.role}: {i.path} (make it with: {i.make})" for i in r.missing]
        lines += [f"empty {i.role}: {i.path} (0 bytes: the stage that wrote it found nothing; see its output, or: {i.make})"
                  for i in r.empty]
        if r.precision is None and r.precision_error is None:
            lines.append("precision skipped: no judge configured (set eval.precision.judge or pass --judge)")
        elif r.precision is not None:
            lines += [r.precision.render_reference("md"), r.precision.usage_line()]
        return lines_block(lines, fmt) if fmt == "csv" else "\n".join(lines)


def report(*, judge: str | None = None, tries: int | None = None, limit: int | None = None, out: PathLike | None = None,
           plots: bool = True, cfg: CfgLike = None) -> Report:
    """Write ``<paths.data>/eval/report.md`` (``causalkg eval report``): recall of our KG and the
    peers against both Base KGs, and precision when a judge is configured. ``status`` is 1 when
    precision was asked for and failed (the report says why)."""
    from causalkg.evaluation.wikicausal.report import eval_report

    r = eval_report(resolve_config(cfg), judge=judge, out=out, tries=tries, limit=limit, plot=plots)
    return Report(path=Path(r.path), status=r.status, detail=r)


# --- the command line ----------------------------------------------------------------------


def register(group: Any) -> None:
    """Add ``recall``, ``precision`` and ``report`` to the ``eval`` group."""
    p = add_command(
        group, "recall", _recall_cli, "recall of KGs against the Base KG (WikiCausal definitions, and more)",
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
        group, "precision", _precision_cli, "precision of KGs judged by a language model (WikiCausal definitions)",
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
        group, "report", _report_cli, "write data/eval/report.md: recall and precision of our KG and the peers",
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


def _recall_cli(args: argparse.Namespace, cfg: Config) -> None:
    r = recall(args.kg, base_kg=args.base_kg, any_id=args.any_id, corpus=args.corpus, per_class=args.per_class,
               out=args.out, lenient=args.lenient, cfg=cfg)
    print(r.to_table(args.format))
    _log(r.notes, r.written)


def _precision_cli(args: argparse.Namespace, cfg: Config) -> None:
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


def _report_cli(args: argparse.Namespace, cfg: Config) -> int:
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


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["recall", "precision", "human_precision", "report", "Recall", "Precision", "HumanPrecisionResult", "Report"]
