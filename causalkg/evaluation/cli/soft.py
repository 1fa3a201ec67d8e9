"""The graph measures' commands, each one function of the Python API with its result class and
its parser, in this module (``import causalkg as ck`` re-exports the functions and classes;
docs/graph-measures.md).

- ``soft`` / ``SoftScores`` / ``causalkg eval soft`` (the work: ``evaluation.graph.soft``)
- ``elo`` / ``EloRatings`` / ``causalkg eval elo`` (``evaluation.graph.elo``)
- ``meta`` / ``MetaEvaluation`` / ``causalkg eval meta`` (``evaluation.graph.meta``)
- ``align`` / ``Alignment`` / ``causalkg eval align`` (``evaluation.graph.align``)
- ``agreement`` / ``Agreement`` / ``causalkg eval agreement`` (``evaluation.graph.agreement``)
- ``setup_wordnet`` / ``WordNetInstall`` / ``causalkg eval setup-wordnet`` (``evaluation.graph.wordnet``)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.results import Result, TableResult, lines_block, path_or_none
from causalkg.options import add_command, add_force, add_format, add_lenient, add_no_write, add_out

_GRAPH_FORMATS = ("Graph files: the documented graph JSONL, the tuple form {id, text, edges: [{src, tgt, direction}]},\n"
                  "or a Label Studio JSON export (.json). See docs/graph-measures.md.")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _out(out: PathLike | None, write: bool) -> PathLike | None:
    return "" if not write else out


@dataclass
class SoftScores(TableResult):
    """Soft edge measures of predicted graphs against gold ones (``soft``): one row per measure."""

    out: Path | None = None

    def note(self) -> str:
        c = self.detail.counts
        note = f"{c['units']} units"
        if c["units_missing_pred"] or c["units_missing_gold"]:
            note += (f" ({c['units_missing_pred']} without a prediction, {c['units_missing_gold']} without gold: "
                     "scored as empty)")
        return note + (f"; per-unit scores in {self.out}/units.jsonl" if self.out else "")


def soft(gold: PathLike, pred: PathLike, *, measures: Sequence[str] | None = None, mode: str | None = None,
         w: float | None = None, non_textual: Sequence[str] | None = None, one_to_one: bool = False,
         out: PathLike | None = None, write: bool = True, lenient: bool = False, cfg: CfgLike = None) -> SoftScores:
    """Soft edge measures of predicted graphs against gold ones (``causalkg eval soft``): P/R/F1
    with near matches (``measures``: ``NAME[:ARG][=THETA]``) and partial credit ``w``. ``write``
    false: nothing is written (``--no-write``)."""
    from causalkg.evaluation.graph.soft import soft as _soft

    run = _soft(gold, pred, measures=measures, mode=mode, w=w, non_textual=non_textual,
                assignment="one-to-one" if one_to_one else None, lenient=lenient, out_dir=_out(out, write),
                cfg=resolve_config(cfg))
    return SoftScores(out=path_or_none(run.out_dir), detail=run)


@dataclass
class EloRatings(TableResult):
    """Elo ratings of annotations (``elo``): one row per unit and player."""

    out: Path | None = None
    COLUMNS: ClassVar[list[str]] = ["unit", "player", "rating", "rank", "games", "wins", "losses", "ties", "winner"]

    def note(self) -> str:
        c = self.detail.counts
        return (f"{c['judgements']} judgements ({c['ties']} ties) over {c['units']} units"
                + (f"; {c['unreadable']} unreadable judge answers recorded as ties" if c.get("unreadable") else "")
                + (f"; written to {self.out}" if self.out else ""))


def elo(judgements: PathLike | None = None, *, graphs: Mapping[str, PathLike] | None = None, judge: str | None = None,
        k: float | None = None, start: float | None = None, ties: str | None = None, rounds: int | None = None,
        seed: int | None = None, out: PathLike | None = None, write: bool = True, cfg: CfgLike = None) -> EloRatings:
    """Elo ratings of annotations from pairwise ``judgements`` (JSONL), or from an LLM tournament
    over ``graphs`` (name -> graph file) judged by ``judge`` (``causalkg eval elo``)."""
    from causalkg.evaluation.graph.elo import elo as _elo

    run = _elo(judgements, graphs=dict(graphs) if graphs else None, judge=judge, k=k, start=start, ties=ties,
               rounds=rounds, seed=seed, out_dir=_out(out, write), cfg=resolve_config(cfg))
    return EloRatings(out=path_or_none(run.out_dir), detail=run)


@dataclass
class MetaEvaluation(TableResult):
    """Soft measures meta-evaluated against Elo ratings (``meta``): one row per measure."""

    out: Path | None = None

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.table()

    def note(self) -> str:
        run = self.detail
        best = ", ".join(f"{m}={t:g}" for m, t in run.best().items())
        unknown = run.counts["unknown_rated_annotators"]
        return (f"best theta: {best}; {run.counts['units_scored']} units"
                + (f"; rated but without graphs: {', '.join(unknown)}" if unknown else ""))


def meta(graphs: Mapping[str, PathLike], *, ratings: PathLike | None = None, judgements: PathLike | None = None,
         measures: Sequence[str] | None = None, mode: str | None = None, orientation: str | None = None,
         bootstrap: int | None = None, seed: int | None = None, ties: str | None = None, out: PathLike | None = None,
         write: bool = True, cfg: CfgLike = None) -> MetaEvaluation:
    """Meta-evaluate soft measures against Elo ratings (``causalkg eval meta``): Spearman per unit,
    bootstrap intervals, and a threshold search for measures given without ``=THETA``."""
    from causalkg.evaluation.graph.meta import meta as _meta

    run = _meta(dict(graphs), ratings=ratings, judgements=judgements, measures=measures, mode=mode,
                orientation=orientation, bootstrap=bootstrap, seed=seed, ties=ties, out_dir=_out(out, write),
                cfg=resolve_config(cfg))
    return MetaEvaluation(out=path_or_none(run.out_dir) if hasattr(run, "out_dir") else None, detail=run)


@dataclass
class Alignment(TableResult):
    """Structure-first alignment of predicted to gold graphs (``align``): one row per view."""

    out: Path | None = None
    COLUMNS: ClassVar[list[str]] = ["view", "units", "exact_units", "matched", "gold_edges", "pred_edges", "micro_p",
                                    "micro_r", "micro_f1", "macro_p", "macro_r", "macro_f1", "macro_f1_gold_units"]

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.summaries

    def columns(self) -> list[str]:
        run = self.detail
        extra = sorted({k for s in run.summaries for k in s if k.endswith("_f1") and k not in self.COLUMNS})
        return self.COLUMNS + extra + (["node_cosine"] if run.tiers else [])

    def note(self) -> str:
        run = self.detail
        c = run.counts
        lower = c["unit_views"] - c["exact_unit_views"]
        lines = [f"{c['units']} units; {c['exact_unit_views']} of {c['unit_views']} unit views solved exactly"
                 + (f", {lower} stopped at the time limit (lower bounds)" if lower else "")
                 + (f"; per-unit results in {self.out}/units.jsonl" if self.out else "")]
        for v, t in (run.tiers or {}).items():
            parts = [f"{name}: {val['pairs']} ({val['share']:.0%})" for name, val in t.items() if isinstance(val, dict)]
            lines.append(f"node validation [{v}] mean cosine {t.get('mean', float('nan')):.3f} over {t['pairs']} pairs; "
                         + "; ".join(parts))
        return "\n".join(lines)


def align(gold: PathLike, pred: PathLike, *, views: Sequence[str] | None = None, orders: Sequence[str] | None = None,
          timeout: float | None = None, validation: str | None = None, node_encoder: str | None = None,
          all_orders: bool = False, out: PathLike | None = None, write: bool = True, lenient: bool = False,
          mode: str | None = None, cfg: CfgLike = None) -> Alignment:
    """Structure-first alignment of predicted to gold graphs (``causalkg eval align``, the
    EmpiriGraph-Psy evaluator): P/R/F1 of matched typed edges per view. ``mode="reference"``
    reproduces the authors' evaluation, quirks included."""
    from causalkg.evaluation.graph.align import align as _align

    run = _align(gold, pred, views=views, orders=orders, timeout=timeout, validation=validation,
                 node_encoder=node_encoder, all_orders=all_orders, lenient=lenient, out_dir=_out(out, write),
                 cfg=resolve_config(cfg), mode=mode)
    return Alignment(out=path_or_none(run.out_dir), detail=run)


@dataclass
class Agreement(TableResult):
    """Cohen's and Fleiss' kappa between annotators (``agreement``): one row per pair of annotators."""

    def rows(self) -> list[dict[str, Any]]:
        return self.detail.rows

    def note(self) -> str:
        c = self.detail.counts
        return f"{c['units']} units annotated by all {c['annotators']} annotators"


def agreement(files: Sequence[PathLike], *, names: Sequence[str] | None = None, mapping: str = "exact",
              ordered: bool = True, timeout: float | None = None, out: PathLike | None = None, write: bool = True,
              cfg: CfgLike = None) -> Agreement:
    """Cohen's kappa per pair of annotators and Fleiss' kappa (``causalkg eval agreement``)."""
    from causalkg.evaluation.graph.agreement import agreement as _agreement

    run = _agreement(list(files), names=names, mapping=mapping, ordered=ordered, timeout=timeout,
                     out_dir=_out(out, write), cfg=resolve_config(cfg))
    return Agreement(detail=run)


@dataclass
class WordNetInstall(Result):
    """What ``setup_wordnet`` installed."""

    corpus_dir: Path = Path()
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def _render(self, fmt: str) -> str:
        return lines_block([f"WordNet 3.0 for NLTK in {self.corpus_dir}: {len(self.files)} files written"
                             + (f", {len(self.skipped)} already there (--force replaces them)" if self.skipped else "")],
                            fmt)


def setup_wordnet(*, source: PathLike | None = None, target: PathLike | None = None, force: bool = False,
                  cfg: CfgLike = None) -> WordNetInstall:
    """Install WordNet 3.0 for NLTK offline (``causalkg eval setup-wordnet``) from Debian's
    wordnet-base files (default eval.soft.wordnet_source)."""
    from causalkg.evaluation.graph.wordnet import setup_wordnet as _setup

    done = _setup(source or resolve_config(cfg).get("eval.soft.wordnet_source"), target, force=force)
    return WordNetInstall(corpus_dir=Path(done.corpus_dir), files=list(done.files), skipped=list(done.skipped),
                          detail=done)


# --- the command line ----------------------------------------------------------------------


def register(group: Any) -> None:
    """Add the graph-measure commands to the ``eval`` group."""
    p = add_command(
        group, "soft", _soft_cli, "soft edge measures (P/R/F1 with near matches and partial credit) of predicted graphs",
        description=(
            "Score PRED against GOLD per unit with textual similarities of node labels at a threshold:\n"
            "TP (labels reach, direction equal), PP (labels reach, direction differs; credit w), FP, FN;\n"
            "micro and macro P/R/F1. --mode reference reproduces the soft-measures study's code.\n"
            "Measures: exact, verbatim, bleu, ref-bleu, rouge1, meteor, ref-meteor, embedding[:MODEL],\n"
            "bleurt:CHECKPOINT, each NAME[:ARG][=THETA].\n" + _GRAPH_FORMATS
        ),
    )
    p.add_argument("gold", metavar="GOLD", help="the gold graphs")
    p.add_argument("pred", metavar="PRED", help="the predicted graphs (units joined to GOLD by id)")
    p.add_argument("--measure", action="append", metavar="NAME[=THETA]",
                   help="a measure, optionally with its threshold (repeatable; default eval.soft.measures)")
    p.add_argument("--mode", choices=["ours", "reference"], help="ours (default) or reference (the study's code)")
    p.add_argument("--w", type=float, metavar="W", help="credit of a partial match (default eval.soft.partial_weight, 0.5)")
    p.add_argument("--non-textual", metavar="ATTRS", help="comma list of attributes that must be equal: direction,type,validation")
    p.add_argument("--one-to-one", action="store_const", const="one-to-one", dest="assignment",
                   help="each gold edge serves at most one predicted edge (maximum matching)")
    add_format(p, "table")
    add_out(p, "output folder (default <data>/eval/soft)")
    add_no_write(p)
    add_lenient(p)

    p = add_command(
        group, "elo", _elo_cli, "Elo ratings of annotations from pairwise judgements (or an LLM tournament)",
        description=(
            "Apply pairwise judgements ({unit, a, b, winner|tie} JSONL, in file order) with Elo: K=32, start\n"
            "1000, expected 1/(1+10^((Rb-Ra)/400)); ties skipped (the study) or 0.5 (--ties half).\n"
            "With --graphs NAME=FILE (two or more) an LLM judge ([llm] server, --judge openai:MODEL) compares\n"
            "every pair of annotations of every unit by the study's rater guidelines first."
        ),
    )
    p.add_argument("judgements", metavar="JUDGEMENTS", nargs="?", help="a judgements JSONL")
    p.add_argument("--graphs", action="append", metavar="NAME=FILE", help="an annotator's graphs, for an LLM tournament (repeatable)")
    p.add_argument("--judge", metavar="openai:MODEL", help="the tournament judge (default eval.elo.judge, else llm.model)")
    p.add_argument("--ties", choices=["skip", "half"], help="tie rule (default eval.elo.ties, skip)")
    p.add_argument("--k", type=float, help="K factor (default 32)")
    p.add_argument("--start", type=float, help="starting rating (default 1000)")
    p.add_argument("--rounds", type=int, help="tournament: meetings per pair and unit (default 1)")
    p.add_argument("--seed", type=int, help="tournament: schedule and A/B order seed")
    add_format(p, "table")
    add_out(p, "output folder (default <data>/eval/elo)")
    add_no_write(p)

    p = add_command(
        group, "meta", _meta_cli, "meta-evaluate soft measures against Elo ratings (Spearman, bootstrap CIs, theta search)",
        description=(
            "Per unit, the Elo winner is gold; every other annotation is scored against it; the scores are\n"
            "correlated with the Elo ratings (Spearman, undefined = 0); mean over units with bootstrap 90% and\n"
            "95% intervals. A measure without =THETA is searched over eval.meta.theta_grid.\n" + _GRAPH_FORMATS
        ),
    )
    p.add_argument("--graphs", action="append", required=True, metavar="NAME=FILE", help="an annotator's graphs (repeatable)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--ratings", metavar="FILE", help="ratings.jsonl written by `eval elo`")
    src.add_argument("--judgements", metavar="FILE", help="a judgements JSONL (Elo computed here)")
    p.add_argument("--measure", action="append", metavar="NAME[=THETA]", help="a measure (repeatable; default eval.soft.measures)")
    p.add_argument("--mode", choices=["ours", "reference"], help="scoring mode (default eval.soft.mode)")
    p.add_argument("--orientation", choices=["winner-gold", "winner-pred"],
                   help="the winner as gold (ours' default) or as prediction (the study's, reference's default)")
    p.add_argument("--ties", choices=["skip", "half"], help="tie rule when computing Elo from --judgements")
    p.add_argument("--bootstrap", type=int, metavar="N", help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, help="bootstrap seed")
    add_format(p, "table")
    add_out(p, "output folder (default <data>/eval/meta)")
    add_no_write(p)

    p = add_command(
        group, "align", _align_cli, "structure-first alignment of predicted to gold graphs (EmpiriGraph-Psy evaluator)",
        description=(
            "Find the gold-to-predicted node map with the most matched typed edges (exact branch and bound with\n"
            "a time limit per node order), after the preprocessing steps; P = matched/|pred|, R = matched/|gold|.\n"
            "Views: typed, higher, agnostic, higher-agnostic. Per-type scores; micro and macro summaries.\n"
            + _GRAPH_FORMATS
        ),
    )
    p.add_argument("gold", metavar="GOLD", help="the gold graphs")
    p.add_argument("pred", metavar="PRED", help="the predicted graphs (units joined to GOLD by id)")
    p.add_argument("--views", metavar="VIEWS", help="comma list (default eval.align.views: all four)")
    p.add_argument("--orders", metavar="ORDERS", help="comma list of node orders (default eval.align.orders)")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds per order (default eval.align.timeout)")
    p.add_argument("--validation", choices=["ignore", "match", "validated-only"], help="validation variant")
    p.add_argument("--all-orders", action="store_true", help="run every order even after one proved the optimum")
    p.add_argument("--node-encoder", metavar="embedding:MODEL", help="node validation: cosine of aligned labels, in tiers")
    p.add_argument("--mode", choices=["ours", "reference"],
                   help="ours (default eval.align.mode) or reference (the authors' evaluation, self-loops of step 3 included)")
    add_format(p, "table")
    add_out(p, "output folder (default <data>/eval/align)")
    add_no_write(p)
    add_lenient(p)

    p = add_command(
        group, "agreement", _agreement_cli, "Cohen's and Fleiss' kappa between annotators of the same units",
        description=(
            "Align each pair of annotators' graphs per unit, label every pair of aligned nodes none | hierarchy |\n"
            "directional | correlational | moderation, and compute Cohen's kappa per pair of annotators and\n"
            "Fleiss' kappa (three or more; the first file is the pivot).\n" + _GRAPH_FORMATS
        ),
    )
    p.add_argument("files", metavar="FILE", nargs="+", help="one graph file per annotator (two or more)")
    p.add_argument("--names", metavar="A,B,...", help="annotator names (default: the file names)")
    p.add_argument("--mapping", choices=["exact", "greedy"], default="exact", help="node map (greedy = the study's)")
    p.add_argument("--unordered", dest="ordered", action="store_false",
                   help="label unordered node pairs by edges in both directions (the study's choice; "
                        "default: ordered pairs, by the edges from the first node)")
    p.add_argument("--timeout", type=float, metavar="S", help="alignment seconds per order")
    add_format(p, "table")
    add_out(p, "output folder (default <data>/eval/agreement)")
    add_no_write(p)

    p = add_command(
        group, "setup-wordnet", _setup_wordnet_cli, "install WordNet 3.0 for NLTK offline (METEOR needs it)",
        description=(
            "Copy Debian's wordnet-base files (/usr/share/wordnet) into an NLTK data folder (default\n"
            "<venv>/nltk_data/corpora/wordnet) and generate the lexnames and index.sense files NLTK also reads."
        ),
    )
    p.add_argument("--source", metavar="DIR", help="the WordNet database folder (default eval.soft.wordnet_source)")
    p.add_argument("--target", metavar="DIR", help="the NLTK data folder (default <venv>/nltk_data)")
    add_force(p, "replace files already installed")
    add_format(p)


def _soft_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(soft(args.gold, args.pred, measures=args.measure, mode=args.mode, w=args.w,
               non_textual=_split([args.non_textual]) if args.non_textual else None,
               one_to_one=args.assignment == "one-to-one", lenient=args.lenient, out=args.out,
               write=not args.no_write, cfg=cfg).to_table(args.format))


def _elo_cli(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.evaluation.graph.graphs import parse_named_paths

    print(elo(args.judgements, graphs=parse_named_paths(args.graphs) if args.graphs else None, judge=args.judge,
              k=args.k, start=args.start, ties=args.ties, rounds=args.rounds, seed=args.seed, out=args.out,
              write=not args.no_write, cfg=cfg).to_table(args.format))


def _meta_cli(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.evaluation.graph.graphs import parse_named_paths

    print(meta(parse_named_paths(args.graphs), ratings=args.ratings, judgements=args.judgements,
               measures=args.measure, mode=args.mode, orientation=args.orientation, bootstrap=args.bootstrap,
               seed=args.seed, ties=args.ties, out=args.out, write=not args.no_write, cfg=cfg).to_table(args.format))


def _align_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(align(args.gold, args.pred, views=_split([args.views]) if args.views else None,
                orders=_split([args.orders]) if args.orders else None, timeout=args.timeout,
                validation=args.validation, node_encoder=args.node_encoder, all_orders=args.all_orders,
                lenient=args.lenient, out=args.out, write=not args.no_write, mode=args.mode,
                cfg=cfg).to_table(args.format))


def _agreement_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(agreement(args.files, names=_split([args.names]) if args.names else None, mapping=args.mapping,
                    ordered=args.ordered, timeout=args.timeout, out=args.out, write=not args.no_write,
                    cfg=cfg).to_table(args.format))


def _setup_wordnet_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(setup_wordnet(source=args.source, target=args.target, force=args.force, cfg=cfg).to_table(args.format))


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["soft", "elo", "meta", "align", "agreement", "setup_wordnet", "SoftScores", "EloRatings", "MetaEvaluation", "Alignment", "Agreement", "WordNetInstall"]
