"""``causalkg eval soft | elo | meta | align | agreement | setup-wordnet``: thin wrappers over
``evaluation.soft.soft``, ``evaluation.elo.elo``, ``evaluation.meta.meta``,
``evaluation.align.align``, ``evaluation.agreement.agreement`` and
``evaluation.wordnet.setup_wordnet`` (graph measures; docs/graph-measures.md)."""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config
from causalkg.options import add_force, add_format, add_lenient, add_no_write, add_out

_GRAPH_FORMATS = ("Graph files: the documented graph JSONL, the tuple form {id, text, edges: [{src, tgt, direction}]},\n"
                  "or a Label Studio JSON export (.json). See docs/graph-measures.md.")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out: list[str] = []
    for v in values:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


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
        group, "meta", _meta, "meta-evaluate soft measures against Elo ratings (Spearman, bootstrap CIs, theta search)",
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
    add_format(p, "table")
    add_out(p, "output folder (default <data>/eval/agreement)")
    add_no_write(p)

    p = add_command(
        group, "setup-wordnet", _setup_wordnet, "install WordNet 3.0 for NLTK offline (METEOR needs it)",
        description=(
            "Copy Debian's wordnet-base files (/usr/share/wordnet) into an NLTK data folder (default\n"
            "<venv>/nltk_data/corpora/wordnet) and generate the lexnames and index.sense files NLTK also reads."
        ),
    )
    p.add_argument("--source", metavar="DIR", help="the WordNet database folder (default eval.soft.wordnet_source)")
    p.add_argument("--target", metavar="DIR", help="the NLTK data folder (default <venv>/nltk_data)")
    add_force(p, "replace files already installed")
    add_format(p)


def _soft(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import soft

    print(soft(args.gold, args.pred, measures=args.measure, mode=args.mode, w=args.w,
               non_textual=_split([args.non_textual]) if args.non_textual else None,
               one_to_one=args.assignment == "one-to-one", lenient=args.lenient, out=args.out,
               write=not args.no_write, cfg=cfg).to_table(args.format))


def _elo(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import elo
    from causalkg.evaluation.graph.graphs import parse_named_paths

    print(elo(args.judgements, graphs=parse_named_paths(args.graphs) if args.graphs else None, judge=args.judge,
              k=args.k, start=args.start, ties=args.ties, rounds=args.rounds, seed=args.seed, out=args.out,
              write=not args.no_write, cfg=cfg).to_table(args.format))


def _meta(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import meta
    from causalkg.evaluation.graph.graphs import parse_named_paths

    print(meta(parse_named_paths(args.graphs), ratings=args.ratings, judgements=args.judgements,
               measures=args.measure, mode=args.mode, orientation=args.orientation, bootstrap=args.bootstrap,
               seed=args.seed, ties=args.ties, out=args.out, write=not args.no_write, cfg=cfg).to_table(args.format))


def _align(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import align

    print(align(args.gold, args.pred, views=_split([args.views]) if args.views else None,
                orders=_split([args.orders]) if args.orders else None, timeout=args.timeout,
                validation=args.validation, node_encoder=args.node_encoder, all_orders=args.all_orders,
                lenient=args.lenient, out=args.out, write=not args.no_write, mode=args.mode,
                cfg=cfg).to_table(args.format))


def _agreement(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import agreement

    print(agreement(args.files, names=_split([args.names]) if args.names else None, mapping=args.mapping,
                    ordered=args.ordered, timeout=args.timeout, out=args.out, write=not args.no_write,
                    cfg=cfg).to_table(args.format))


def _setup_wordnet(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import setup_wordnet

    print(setup_wordnet(source=args.source, target=args.target, force=args.force, cfg=cfg).to_table(args.format))


__all__ = ["register"]
