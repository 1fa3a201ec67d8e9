"""Soft edge measures: precision, recall and F1 of a predicted graph against a gold graph that
accept near matches of node labels and give partial credit.

For a textual similarity s (``evaluation.graph.similarity``), a threshold theta, the textual edge
attributes (source and target labels) and the non-textual ones (by default the direction):

- a predicted edge *reaches* a gold edge when s >= theta on its source and on its target;
- TP: a predicted edge that reaches some gold edge with equal non-textual attributes;
- PP: a predicted edge that reaches some gold edge, but none with equal non-textual attributes;
- FP: a predicted edge that reaches no gold edge;
- FN: a gold edge that no predicted edge reaches;
- P = (TP + w*PP) / (TP + PP + FP), R = (TP + w*PP) / (TP + PP + FN), F1 their harmonic mean.

With ``assignment="one-to-one"`` each gold edge is used by at most one predicted edge (a maximum
matching preferring TP over PP) and unmatched gold edges are FN. With ``exact`` at theta 1 and
no PP this is the classical edge F1. A unit with no edges on either side scores 1; any other zero
denominator scores 0. Micro averages pool the counts of all units; macro averages are the means
of the units' P, R and F1.

``mode="reference"`` reproduces the published code of the soft-measures study instead
(``similarity_measures/Measure_Evaluation.ipynb`` in kuldeep7688/soft-measures-causal-intelligence,
commit 307d722eb4c1937a7bd344738e8db44b76595745; see docs/graph-measures.md), quirks included:
source and target nodes are matched separately, the two maps merged with the target map
overriding the source map, TP counts distinct gold edges, FP = |pred| - TP (negative when one
predicted edge matches several gold edges), and a unit with no edges scores 0.

Part of the evaluation stage; ``causalkg eval soft`` wraps ``soft``.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import ReadStats, write_json, write_jsonl
from causalkg.core.layout import Layout
from causalkg.core.models import stage_device
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.core.progress import progress
from causalkg.registry import versioned_spec
from causalkg.evaluation.graph.graphs import Edge, Graph, read_graphs
from causalkg.evaluation.graph.similarity import Similarity, canonical_name, get_similarity, reference_name

log = logging.getLogger(__name__)

MODES = ("ours", "reference")
ASSIGNMENTS = ("any", "one-to-one")
NON_TEXTUAL = ("direction", "type", "validation")
_DIRECTION_ALIASES = {"positive": "increase", "+": "increase", "increase": "increase",
                      "negative": "decrease", "-": "decrease", "decrease": "decrease"}


# -- similarities between the labels of two graphs -------------------------------------------


@dataclass
class PairSims:
    """Label similarities for one (gold, pred) pair: predicted sources x gold sources and
    predicted targets x gold targets (distinct labels), computed once and reused for every
    threshold and both modes."""

    pred_src: list[str]
    gold_src: list[str]
    pred_tgt: list[str]
    gold_tgt: list[str]
    src: np.ndarray
    tgt: np.ndarray

    def src_index(self) -> tuple[dict[str, int], dict[str, int]]:
        return {t: i for i, t in enumerate(self.pred_src)}, {t: i for i, t in enumerate(self.gold_src)}

    def tgt_index(self) -> tuple[dict[str, int], dict[str, int]]:
        return {t: i for i, t in enumerate(self.pred_tgt)}, {t: i for i, t in enumerate(self.gold_tgt)}


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def edge_labels(g: Graph) -> list[tuple[str, str, Edge]]:
    """(source label, target label, edge) for each edge of ``g``, in order."""
    return [(g.label(e.source), g.label(e.target), e) for e in g.edges]


def pair_sims(gold: Graph, pred: Graph, sim: Similarity) -> PairSims:
    """Compute the source and target similarity matrices of one unit."""
    pe, ge = edge_labels(pred), edge_labels(gold)
    ps, gs = _distinct(s for s, _, _ in pe), _distinct(s for s, _, _ in ge)
    pt, gt = _distinct(t for _, t, _ in pe), _distinct(t for _, t, _ in ge)
    return PairSims(ps, gs, pt, gt, sim.matrix(ps, gs), sim.matrix(pt, gt))


# -- counts and scores -----------------------------------------------------------------------


@dataclass
class UnitScore:
    unit: str
    tp: int
    pp: int
    fp: int
    fn: int
    n_pred: int
    n_gold: int
    precision: float
    recall: float
    f1: float


def _prf(tp: float, pp: float, fp: float, fn: float, w: float) -> tuple[float, float, float]:
    den_p, den_r = tp + pp + fp, tp + pp + fn
    if den_p == 0 and den_r == 0:
        return 1.0, 1.0, 1.0
    p = (tp + w * pp) / den_p if den_p else 0.0
    r = (tp + w * pp) / den_r if den_r else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def _reference_prf(tp: float, fp: float, fn: float) -> tuple[float, float, float]:
    # calculate_f1_score of the study: 0 on any zero denominator, so an empty unit scores 0.
    p = tp / (tp + fp) if tp + fp != 0 else 0.0
    r = tp / (tp + fn) if tp + fn != 0 else 0.0
    f = 2 * p * r / (p + r) if p + r != 0 else 0.0
    return p, r, f


def _norm_direction(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().casefold()
    return _DIRECTION_ALIASES.get(v, v)


def _non_textual(e: Edge, attrs: Sequence[str]) -> tuple:
    out = []
    for a in attrs:
        if a == "direction":
            out.append(_norm_direction(e.direction))
        else:
            out.append(getattr(e, a))
    return tuple(out)


def score_unit(
    unit: str,
    gold: Graph,
    pred: Graph,
    sims: PairSims,
    theta: float,
    *,
    w: float = 0.5,
    non_textual: Sequence[str] = ("direction",),
    assignment: str = "any",
) -> UnitScore:
    """Our soft counts for one unit (see the module docstring)."""
    pe, ge = edge_labels(pred), edge_labels(gold)
    n_p, n_g = len(pe), len(ge)
    if n_p == 0 or n_g == 0:
        tp = pp = 0
        fp, fn = n_p, n_g
    else:
        ps_i, gs_i = sims.src_index()
        pt_i, gt_i = sims.tgt_index()
        src_ok = sims.src >= theta
        tgt_ok = sims.tgt >= theta
        p_s = np.array([ps_i[s] for s, _, _ in pe])
        p_t = np.array([pt_i[t] for _, t, _ in pe])
        g_s = np.array([gs_i[s] for s, _, _ in ge])
        g_t = np.array([gt_i[t] for _, t, _ in ge])
        reach = src_ok[np.ix_(p_s, g_s)] & tgt_ok[np.ix_(p_t, g_t)]
        pk = [_non_textual(e, non_textual) for _, _, e in pe]
        gk = [_non_textual(e, non_textual) for _, _, e in ge]
        equal = np.array([[a == b for b in gk] for a in pk], dtype=bool)
        if assignment == "one-to-one":
            from scipy.optimize import linear_sum_assignment

            # Weight 2 for a full match, 1 for a partial one, a tiny similarity term to prefer
            # the closer of equally good pairs; pairs that do not reach are never used.
            closeness = (sims.src[np.ix_(p_s, g_s)] + sims.tgt[np.ix_(p_t, g_t)]) * 1e-3
            weight = np.where(reach, np.where(equal, 2.0, 1.0) + closeness, 0.0)
            rows, cols = linear_sum_assignment(-weight)
            used = [(i, j) for i, j in zip(rows, cols) if reach[i, j]]
            tp = sum(1 for i, j in used if equal[i, j])
            pp = len(used) - tp
            fp = n_p - len(used)
            fn = n_g - len(used)
        else:
            full = (reach & equal).any(axis=1)
            any_reach = reach.any(axis=1)
            tp = int(full.sum())
            pp = int((any_reach & ~full).sum())
            fp = int((~any_reach).sum())
            fn = int((~reach.any(axis=0)).sum())
    p, r, f = _prf(tp, pp, fp, fn, w)
    return UnitScore(unit, tp, pp, fp, fn, n_p, n_g, p, r, f)


def reference_unit(unit: str, gold: Graph, pred: Graph, sims: PairSims, theta: float) -> UnitScore:
    """The study's per-row computation (``ScoreCalculator.calculate_scores``), reproduced.

    Edges are (source label, direction.strip(), target label) tuples; a predicted source label
    maps to every gold *source* label with s >= theta, a predicted target label to every gold
    *target* label; the maps are merged with ``src_map | tgt_map`` (a label that is both a
    source and a target takes its target candidates for both roles); a predicted edge matches a
    gold edge (ms, d, mt) for every ms in map[s] and mt in map[t] with identical direction.
    """
    pred_edges = [(s, (e.direction or "").strip(), t) for s, t, e in edge_labels(pred)]
    gold_edges = [(s, (e.direction or "").strip(), t) for s, t, e in edge_labels(gold)]
    gold_set = set(gold_edges)

    def mapping(pred_nodes: list[str], gold_nodes: list[str], m: np.ndarray) -> dict[str, list[str]]:
        binary = m >= theta
        out: dict[str, list[str]] = {}
        for i, pn in enumerate(pred_nodes):
            for j, gn in enumerate(gold_nodes):
                if binary[i, j]:
                    out.setdefault(pn, []).append(gn)
        return out

    merged = mapping(sims.pred_src, sims.gold_src, sims.src) | mapping(sims.pred_tgt, sims.gold_tgt, sims.tgt)
    matched: set[tuple[str, str, str]] = set()
    for s, d, t in pred_edges:
        if s in merged and t in merged:
            for ms in merged[s]:
                for mt in merged[t]:
                    if (ms, d, mt) in gold_set:
                        matched.add((ms, d, mt))
    tp = len(matched)
    fp = len(pred_edges) - tp
    fn = len(gold_edges) - tp
    p, r, f = _reference_prf(tp, fp, fn)
    return UnitScore(unit, tp, 0, fp, fn, len(pred_edges), len(gold_edges), p, r, f)


# -- a whole file pair -----------------------------------------------------------------------


@dataclass
class SoftResult:
    """One measure at one threshold over all units."""

    measure: str
    theta: float
    mode: str
    w: float
    units: list[UnitScore] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        return {k: sum(getattr(u, k) for u in self.units) for k in ("tp", "pp", "fp", "fn", "n_pred", "n_gold")}

    def micro(self) -> dict[str, float]:
        t = self.totals()
        if self.mode == "reference":
            p, r, f = _reference_prf(t["tp"], t["fp"], t["fn"])
        else:
            p, r, f = _prf(t["tp"], t["pp"], t["fp"], t["fn"], self.w)
        return {"precision": p, "recall": r, "f1": f}

    def macro(self) -> dict[str, float]:
        if not self.units:
            return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
        return {k: float(np.mean([getattr(u, k) for u in self.units])) for k in ("precision", "recall", "f1")}

    def row(self) -> dict[str, Any]:
        mi, ma = self.micro(), self.macro()
        return {
            "measure": self.measure, "theta": self.theta, "mode": self.mode, "units": len(self.units),
            **{k.upper(): v for k, v in self.totals().items() if k in ("tp", "pp", "fp", "fn")},
            "micro_p": mi["precision"], "micro_r": mi["recall"], "micro_f1": mi["f1"],
            "macro_p": ma["precision"], "macro_r": ma["recall"], "macro_f1": ma["f1"],
        }


def pair_units(gold: dict[str, Graph], pred: dict[str, Graph]) -> tuple[list[tuple[str, Graph, Graph]], dict[str, int]]:
    """Units in gold order, then predicted-only units; a missing side is an empty graph."""
    units = []
    missing_pred = missing_gold = 0
    for uid, g in gold.items():
        p = pred.get(uid)
        if p is None:
            missing_pred += 1
            p = Graph(uid)
        units.append((uid, g, p))
    for uid, p in pred.items():
        if uid not in gold:
            missing_gold += 1
            units.append((uid, Graph(uid), p))
    return units, {"units_missing_pred": missing_pred, "units_missing_gold": missing_gold}


def all_labels(units: Iterable[tuple[str, Graph, Graph]]) -> list[str]:
    labels: dict[str, None] = {}
    for _, g, p in units:
        for graph in (g, p):
            for s, t, _ in edge_labels(graph):
                labels[s] = None
                labels[t] = None
    return list(labels)


def score_units(
    units: Sequence[tuple[str, Graph, Graph]],
    sim: Similarity,
    thetas: Sequence[float],
    *,
    mode: str = "ours",
    w: float = 0.5,
    non_textual: Sequence[str] = ("direction",),
    assignment: str = "any",
    measure: str | None = None,
) -> list[SoftResult]:
    """Score every unit with one similarity at each threshold (matrices computed once)."""
    if mode not in MODES:
        raise ConfigError(f"unknown soft-measure mode {mode!r}", hint="use ours or reference")
    if assignment not in ASSIGNMENTS:
        raise ConfigError(f"unknown assignment {assignment!r}", hint="use any or one-to-one")
    bad = [a for a in non_textual if a not in NON_TEXTUAL]
    if bad:
        raise ConfigError(f"unknown non-textual attribute(s) {', '.join(bad)}", hint=f"choose from {', '.join(NON_TEXTUAL)}")
    sim.prepare(all_labels(units))
    results = [SoftResult(measure or sim.spec, float(th), mode, w) for th in thetas]
    for uid, g, p in progress(units, desc=f"soft {measure or sim.spec}", unit="unit"):
        sims = pair_sims(g, p, sim)
        for res in results:
            if mode == "reference":
                res.units.append(reference_unit(uid, g, p, sims, res.theta))
            else:
                res.units.append(score_unit(uid, g, p, sims, res.theta, w=w, non_textual=non_textual, assignment=assignment))
    return results


def parse_measure(item: str, thresholds: dict[str, float], mode: str = "ours") -> tuple[str, float]:
    """``NAME[:ARG][=THETA]`` -> (spec, theta). In ``reference`` mode the spec becomes the study's
    variant (bleu -> ref-bleu, ...). The default theta is ``thresholds`` of the resulting name."""
    spec, sep, theta = item.partition("=")
    spec = spec.strip()
    if mode == "reference":
        spec = reference_name(spec)
    if sep:
        try:
            return spec, float(theta)
        except ValueError:
            raise ConfigError(f"--measure {item!r}: threshold {theta!r} is not a number") from None
    key = canonical_name(spec)
    if key not in thresholds:
        raise ConfigError(f"no default threshold for measure {spec!r}", hint=f"write it as {spec}=THETA")
    return spec, float(thresholds[key])


@dataclass
class SoftRun:
    results: list[SoftResult]
    counts: dict[str, int]
    out_dir: Path | None = None

    def rows(self) -> list[dict[str, Any]]:
        return [r.row() for r in self.results]


def soft(
    gold: str | os.PathLike,
    pred: str | os.PathLike,
    *,
    measures: Sequence[str] | None = None,
    mode: str | None = None,
    w: float | None = None,
    non_textual: Sequence[str] | None = None,
    assignment: str | None = None,
    lenient: bool = False,
    out_dir: str | os.PathLike | None = None,
    cfg: Config | None = None,
) -> SoftRun:
    """Score a predicted graph file against a gold one with each measure (``causalkg eval soft``).

    ``measures``: specs ``NAME[:ARG][=THETA]`` (default ``eval.soft.measures`` with thresholds
    from ``eval.soft.thresholds``). In ``reference`` mode bleu/meteor/exact become the study's
    variants. ``out_dir`` (default ``<paths.data>/eval/soft``) receives ``units.jsonl``,
    ``summary.json`` and ``manifest.json``; an empty string writes nothing. Returns the results. Raises SchemaError on bad input lines, ConfigError on bad
    options, ModelError when a measure's model or WordNet is missing.
    """
    from causalkg.core.config import load_config

    cfg = cfg or load_config(search_cwd=False)
    ev = cfg["eval"]
    mode = mode or ev["soft"]["mode"]
    w = float(ev["soft"]["partial_weight"] if w is None else w)
    non_textual = list(non_textual if non_textual is not None else ev["soft"]["non_textual"])
    assignment = assignment or ev["soft"]["assignment"]
    if mode not in MODES:
        raise ConfigError(f"unknown soft-measure mode {mode!r}", hint="use ours or reference")
    specs = [parse_measure(m, ev["soft"]["thresholds"], mode) for m in (measures or ev["soft"]["measures"])]
    stats_g, stats_p = ReadStats(), ReadStats()
    gold_graphs = read_graphs(gold, lenient=lenient, stats=stats_g)
    pred_graphs = read_graphs(pred, lenient=lenient, stats=stats_p)
    units, counts = pair_units(gold_graphs, pred_graphs)
    counts.update(units=len(units), gold_skipped=stats_g.skipped, pred_skipped=stats_p.skipped)
    for st in (stats_g, stats_p):
        if st.skipped:
            log.warning("%s", st.summary())
    options = {"wordnet_dir": ev["soft"]["wordnet_dir"] or None, "device": stage_device(cfg, "eval.soft.device")}
    results: list[SoftResult] = []
    by_measure: dict[str, list[float]] = {}
    for spec, theta in specs:
        by_measure.setdefault(spec, []).append(theta)
    for spec, thetas in by_measure.items():
        sim = get_similarity(spec, **options)
        results += score_units(units, sim, thetas, mode=mode, w=w, non_textual=non_textual,
                               assignment=assignment, measure=spec)
    run = SoftRun(results, counts)
    if out_dir is None:
        out_dir = Layout.from_config(cfg).eval_out("soft")
    if out_dir:
        out = Path(out_dir)
        write_jsonl(out / "units.jsonl", (
            {"measure": r.measure, "theta": r.theta, "mode": r.mode, **asdict(u)} for r in results for u in r.units
        ))
        write_json(out / "summary.json", {"rows": run.rows(), "counts": counts})
        write_manifest(out, build_manifest(
            "eval.soft", cfg, inputs={"gold": gold, "pred": pred}, outputs={"units": "units.jsonl", "summary": "summary.json"},
            counts=counts, extra={"options": {"mode": mode, "w": w, "non_textual": non_textual,
                                              "assignment": assignment,
                                              "measures": [f"{versioned_spec('similarity', s)}={t}" for s, t in specs]}},
        ))
        run.out_dir = out
    return run
