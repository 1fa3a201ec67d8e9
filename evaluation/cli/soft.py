"""``causalkg eval soft | elo | meta | align | agreement | setup-wordnet``: thin wrappers over
``evaluation.graph.soft.soft``, ``evaluation.graph.elo.elo``, ``evaluation.graph.meta.meta``,
``evaluation.graph.align.align``, ``evaluation.graph.agreement.agreement`` and
``evaluation.graph.wordnet.setup_wordnet`` (graph measures; docs/graph-measures.md)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from causalkg.cli import add_command
from causalkg.config import Config
from causalkg.tables import render_table

FORMATS = ["md", "csv", "json", "text"]
_GRAPH_FORMATS = ("Graph files: the documented graph JSONL, the tuple form {id, text, edges: [{src, tgt, direction}]},\n"
                  "or a Label Studio JSON export (.json). See docs/graph-measures.md.")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _out(args: argparse.Namespace) -> Any:
    return "" if getattr(args, "no_write", False) else args.out


def register(group: Any) -> None:
    """Add the graph-measure commands to the ``eval`` group."""
    p = add_command(
        group, "soft", _soft, "soft edge measures (P/R/F1 with near matches and partial credit) of predicted graphs",
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
                   help="a measure, optionally with its threshold (repeatable; default eval.soft_measures)")
    p.add_argument("--mode", choices=["ours", "reference"], help="ours (default) or reference (the study's code)")
    p.add_argument("--w", type=float, metavar="W", help="credit of a partial match (default eval.soft_partial_weight, 0.5)")
    p.add_argument("--non-textual", metavar="ATTRS", help="comma list of attributes that must be equal: direction,type,validation")
    p.add_argument("--one-to-one", action="store_const", const="one-to-one", dest="assignment",
                   help="each gold edge serves at most one predicted edge (maximum matching)")
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    p.add_argument("--out", metavar="DIR", help="output folder (default <data>/eval/soft)")
    p.add_argument("--no-write", action="store_true", help="print the table only")
    p.add_argument("--lenient", action="store_true", help="skip bad lines (counted and reported) instead of failing")

    p = add_command(
        group, "elo", _elo, "Elo ratings of annotations from pairwise judgements (or an LLM tournament)",
        description=(
            "Apply pairwise judgements ({unit, a, b, winner|tie} JSONL, in file order) with Elo: K=32, start\n"
            "1000, expected 1/(1+10^((Rb-Ra)/400)); ties skipped (the study) or 0.5 (--ties half).\n"
            "With --graphs NAME=FILE (two or more) an LLM judge ([llm] server, --judge openai:MODEL) compares\n"
            "every pair of annotations of every unit by the study's rater guidelines first."
        ),
    )
    p.add_argument("judgements", metavar="JUDGEMENTS", nargs="?", help="a judgements JSONL")
    p.add_argument("--graphs", action="append", metavar="NAME=FILE", help="an annotator's graphs, for an LLM tournament (repeatable)")
    p.add_argument("--judge", metavar="openai:MODEL", help="the tournament judge (default eval.elo_judge, else llm.model)")
    p.add_argument("--ties", choices=["skip", "half"], help="tie rule (default eval.elo_ties, skip)")
    p.add_argument("--k", type=float, help="K factor (default 32)")
    p.add_argument("--start", type=float, help="starting rating (default 1000)")
    p.add_argument("--rounds", type=int, help="tournament: meetings per pair and unit (default 1)")
    p.add_argument("--seed", type=int, help="tournament: schedule and A/B order seed")
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    p.add_argument("--out", metavar="DIR", help="output folder (default <data>/eval/elo)")
    p.add_argument("--no-write", action="store_true", help="print the table only")

    p = add_command(
        group, "meta", _meta, "meta-evaluate soft measures against Elo ratings (Spearman, bootstrap CIs, theta search)",
        description=(
            "Per unit, the Elo winner is gold; every other annotation is scored against it; the scores are\n"
            "correlated with the Elo ratings (Spearman, undefined = 0); mean over units with bootstrap 90% and\n"
            "95% intervals. A measure without =THETA is searched over eval.meta_theta_grid.\n" + _GRAPH_FORMATS
        ),
    )
    p.add_argument("--graphs", action="append", required=True, metavar="NAME=FILE", help="an annotator's graphs (repeatable)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--ratings", metavar="FILE", help="ratings.jsonl written by `eval elo`")
    src.add_argument("--judgements", metavar="FILE", help="a judgements JSONL (Elo computed here)")
    p.add_argument("--measure", action="append", metavar="NAME[=THETA]", help="a measure (repeatable; default eval.soft_measures)")
    p.add_argument("--mode", choices=["ours", "reference"], help="scoring mode (default eval.soft_mode)")
    p.add_argument("--orientation", choices=["winner-gold", "winner-pred"],
                   help="the winner as gold (ours' default) or as prediction (the study's, reference's default)")
    p.add_argument("--ties", choices=["skip", "half"], help="tie rule when computing Elo from --judgements")
    p.add_argument("--bootstrap", type=int, metavar="N", help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, help="bootstrap seed")
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    p.add_argument("--out", metavar="DIR", help="output folder (default <data>/eval/meta)")
    p.add_argument("--no-write", action="store_true", help="print the table only")

    p = add_command(
        group, "align", _align, "structure-first alignment of predicted to gold graphs (EmpiriGraph-Psy evaluator)",
        description=(
            "Find the gold-to-predicted node map with the most matched typed edges (exact branch and bound with\n"
            "a time limit per node order), after the preprocessing steps; P = matched/|pred|, R = matched/|gold|.\n"
            "Views: typed, higher, agnostic, higher-agnostic. Per-type scores; micro and macro summaries.\n"
            + _GRAPH_FORMATS
        ),
    )
    p.add_argument("gold", metavar="GOLD", help="the gold graphs")
    p.add_argument("pred", metavar="PRED", help="the predicted graphs (units joined to GOLD by id)")
    p.add_argument("--views", metavar="VIEWS", help="comma list (default eval.align_views: all four)")
    p.add_argument("--orders", metavar="ORDERS", help="comma list of node orders (default eval.align_orders)")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds per order (default eval.align_timeout)")
    p.add_argument("--validation", choices=["ignore", "match", "validated-only"], help="validation variant")
    p.add_argument("--all-orders", action="store_true", help="run every order even after one proved the optimum")
    p.add_argument("--node-encoder", metavar="embedding:MODEL", help="node validation: cosine of aligned labels, in tiers")
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    p.add_argument("--out", metavar="DIR", help="output folder (default <data>/eval/align)")
    p.add_argument("--no-write", action="store_true", help="print the table only")
    p.add_argument("--lenient", action="store_true", help="skip bad lines (counted and reported) instead of failing")

    p = add_command(
        group, "agreement", _agreement, "Cohen's and Fleiss' kappa between annotators of the same units",
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
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    p.add_argument("--out", metavar="DIR", help="output folder (default <data>/eval/agreement)")
    p.add_argument("--no-write", action="store_true", help="print the table only")

    p = add_command(
        group, "setup-wordnet", _setup_wordnet, "install WordNet 3.0 for NLTK offline (METEOR needs it)",
        description=(
            "Copy Debian's wordnet-base files (/usr/share/wordnet) into an NLTK data folder (default\n"
            "<venv>/nltk_data/corpora/wordnet) and generate the lexnames and index.sense files NLTK also reads."
        ),
    )
    p.add_argument("--source", metavar="DIR", help="the WordNet database folder (default eval.wordnet_source)")
    p.add_argument("--target", metavar="DIR", help="the NLTK data folder (default <venv>/nltk_data)")
    p.add_argument("--force", action="store_true", help="replace files already installed")


def _print(rows: list[dict[str, Any]], fmt: str, columns: list[str] | None = None) -> None:
    clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
    print(render_table(clean, columns, fmt, floatfmt=".4f"))


def _soft(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.graph.soft import soft

    run = soft(args.gold, args.pred, measures=args.measure, mode=args.mode, w=args.w,
               non_textual=_split([args.non_textual]) if args.non_textual else None,
               assignment=args.assignment, lenient=args.lenient, out_dir=_out(args), cfg=cfg)
    _print(run.rows(), args.format)
    if args.format != "json":
        c = run.counts
        note = f"{c['units']} units"
        if c["units_missing_pred"] or c["units_missing_gold"]:
            note += f" ({c['units_missing_pred']} without a prediction, {c['units_missing_gold']} without gold: scored as empty)"
        if run.out_dir:
            note += f"; per-unit scores in {run.out_dir}/units.jsonl"
        print(f"\n{note}")
    return 0


def _elo(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.graph.elo import elo
    from causalkg.evaluation.graph.graphs import parse_named_paths

    graphs = parse_named_paths(args.graphs) if args.graphs else None
    run = elo(args.judgements, graphs=graphs, judge=args.judge, k=args.k, start=args.start, ties=args.ties,
              rounds=args.rounds, seed=args.seed, out_dir=_out(args), cfg=cfg)
    _print(run.rows(), args.format, ["unit", "player", "rating", "rank", "games", "wins", "losses", "ties", "winner"])
    if args.format != "json":
        c = run.counts
        print(f"\n{c['judgements']} judgements ({c['ties']} ties) over {c['units']} units"
              + (f"; {c['unreadable']} unreadable judge answers recorded as ties" if c.get("unreadable") else "")
              + (f"; written to {run.out_dir}" if run.out_dir else ""))
    return 0


def _meta(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.graph.graphs import parse_named_paths
    from causalkg.evaluation.graph.meta import meta

    run = meta(parse_named_paths(args.graphs), ratings=args.ratings, judgements=args.judgements, measures=args.measure,
               mode=args.mode, orientation=args.orientation, bootstrap=args.bootstrap, seed=args.seed, ties=args.ties,
               out_dir=_out(args), cfg=cfg)
    _print(run.table(), args.format)
    if args.format != "json":
        best = ", ".join(f"{m}={t:g}" for m, t in run.best().items())
        print(f"\nbest theta: {best}; {run.counts['units_scored']} units" +
              (f"; rated but without graphs: {', '.join(run.counts['unknown_rated_annotators'])}"
               if run.counts["unknown_rated_annotators"] else ""))
    return 0


def _align(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.graph.align import align

    run = align(args.gold, args.pred, views=_split([args.views]) if args.views else None,
                orders=_split([args.orders]) if args.orders else None, timeout=args.timeout,
                validation=args.validation, node_encoder=args.node_encoder, all_orders=args.all_orders,
                lenient=args.lenient, out_dir=_out(args), cfg=cfg)
    cols = ["view", "units", "exact_units", "matched", "gold_edges", "pred_edges", "micro_p", "micro_r", "micro_f1",
            "macro_p", "macro_r", "macro_f1", "macro_f1_gold_units"]
    extra = sorted({k for s in run.summaries for k in s if k.endswith("_f1") and k not in cols})
    _print(run.summaries, args.format, cols + extra + (["node_cosine"] if run.tiers else []))
    if args.format != "json":
        c = run.counts
        lower = c["unit_views"] - c["exact_unit_views"]
        print(f"\n{c['units']} units; {c['exact_unit_views']} of {c['unit_views']} unit views solved exactly"
              + (f", {lower} stopped at the time limit (lower bounds)" if lower else "")
              + (f"; per-unit results in {run.out_dir}/units.jsonl" if run.out_dir else ""))
        if run.tiers:
            for v, t in run.tiers.items():
                parts = [f"{name}: {val['pairs']} ({val['share']:.0%})" for name, val in t.items() if isinstance(val, dict)]
                print(f"node validation [{v}] mean cosine {t.get('mean', float('nan')):.3f} over {t['pairs']} pairs; " + "; ".join(parts))
    return 0


def _agreement(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.graph.agreement import agreement

    run = agreement(args.files, names=_split([args.names]) if args.names else None, mapping=args.mapping,
                    ordered=args.ordered, timeout=args.timeout, out_dir=_out(args), cfg=cfg)
    _print(run.rows, args.format)
    if args.format != "json":
        print(f"\n{run.counts['units']} units annotated by all {run.counts['annotators']} annotators")
    return 0


def _setup_wordnet(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.evaluation.graph.wordnet import setup_wordnet

    done = setup_wordnet(args.source or cfg["eval"]["wordnet_source"], args.target, force=args.force)
    print(f"WordNet 3.0 for NLTK in {done.corpus_dir}: {len(done.files)} files written"
          + (f", {len(done.skipped)} already there (--force replaces them)" if done.skipped else ""))
    return 0


__all__ = ["register"]
