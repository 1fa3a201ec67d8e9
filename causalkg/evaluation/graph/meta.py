"""Meta-evaluation: how well does a soft edge measure agree with human (or LLM) preferences?

Per unit (passage), the annotation with the highest Elo rating is taken as gold; every other
annotation of the unit is scored against it with a measure (unit F1); the scores are correlated
with the annotations' Elo ratings (Spearman; an undefined correlation, e.g. from constant scores
or fewer than two annotations, counts as 0, as in the study). The measure's figure is the mean
correlation over units, with bootstrap 90% and 95% percentile intervals over units. A threshold
grid search picks theta per measure by that mean (the first of equal values wins).

Orientation: ``winner-gold`` scores each annotation as the prediction against the winner;
``winner-pred`` swaps the roles, as the study's notebook did (it passed the winner as the
"generated" graph). The default follows the mode: ``ours`` -> winner-gold, ``reference`` ->
winner-pred. Part of the evaluation stage; ``causalkg eval meta`` wraps ``meta``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import write_json, write_jsonl
from causalkg.core.layout import Layout
from causalkg.core.models import stage_device
from causalkg.core.manifest import build_manifest, write_manifest
from causalkg.core.progress import progress
from causalkg.registry import versioned_spec
from causalkg.evaluation.graph.elo import elo_ratings, read_judgements, read_ratings
from causalkg.evaluation.graph.graphs import Graph, read_graphs
from causalkg.evaluation.graph.similarity import Similarity, canonical_name, get_similarity, reference_name
from causalkg.evaluation.graph.soft import MODES, pair_sims, reference_unit, score_unit

ORIENTATIONS = ("winner-gold", "winner-pred")


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho, 0.0 where it is undefined (fewer than two points, a constant side)."""
    if len(x) < 2:
        return 0.0
    from scipy.stats import spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho = spearmanr(x, y).correlation
    if rho is None or not np.isfinite(rho):
        return 0.0
    return float(rho)


def bootstrap_intervals(values: Sequence[float], *, resamples: int = 1000, seed: int = 11) -> dict[str, float]:
    """Percentile intervals of the mean over resampled units: ci90 (5-95) and ci95 (2.5-97.5)."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        nan = float("nan")
        return {"ci90_low": nan, "ci90_high": nan, "ci95_low": nan, "ci95_high": nan}
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(max(1, resamples), arr.size))].mean(axis=1)
    lo90, hi90, lo95, hi95 = np.percentile(means, [5, 95, 2.5, 97.5])
    return {"ci90_low": float(lo90), "ci90_high": float(hi90), "ci95_low": float(lo95), "ci95_high": float(hi95)}


def unit_winner(ratings: dict[str, float]) -> str:
    # The first of equal top ratings, in the ratings' order (first appearance in the judgements).
    return max(ratings, key=lambda name: ratings[name])


@dataclass
class MetaRow:
    measure: str
    theta: float
    mode: str
    orientation: str
    rhos: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, float] = field(default_factory=dict)
    best: bool = False

    @property
    def mean(self) -> float:
        return float(np.mean(list(self.rhos.values()))) if self.rhos else 0.0

    def row(self) -> dict[str, Any]:
        return {"measure": self.measure, "theta": self.theta, "mode": self.mode, "orientation": self.orientation,
                "units": len(self.rhos), "rho": self.mean, **self.intervals, "best": self.best}


def correlate_measure(
    annotations: dict[str, dict[str, Graph]],
    ratings: dict[str, dict[str, float]],
    sim: Similarity,
    thetas: Sequence[float],
    *,
    mode: str = "ours",
    orientation: str | None = None,
    w: float = 0.5,
    non_textual: Sequence[str] = ("direction",),
    measure: str | None = None,
) -> list[MetaRow]:
    """Per-unit Spearman correlations of one measure at each theta (similarities computed once)."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}", hint="use ours or reference")
    orientation = orientation or ("winner-pred" if mode == "reference" else "winner-gold")
    if orientation not in ORIENTATIONS:
        raise ConfigError(f"unknown orientation {orientation!r}", hint="use winner-gold or winner-pred")
    rows = [MetaRow(measure or sim.spec, float(t), mode, orientation) for t in thetas]
    labels: list[str] = []
    for by_unit in annotations.values():
        for g in by_unit.values():
            labels += [g.label(e.source) for e in g.edges] + [g.label(e.target) for e in g.edges]
    sim.prepare(labels)
    for uid, unit_ratings in progress(list(ratings.items()), desc=f"meta {measure or sim.spec}", unit="unit"):
        present = {n: r for n, r in unit_ratings.items() if uid in annotations.get(n, {})}
        if not present:
            continue
        winner = unit_winner(present)
        others = [n for n in present if n != winner]
        win_graph = annotations[winner][uid]
        per_theta: list[list[float]] = [[] for _ in rows]
        for name in others:
            g = annotations[name][uid]
            gold, pred = (win_graph, g) if orientation == "winner-gold" else (g, win_graph)
            sims = pair_sims(gold, pred, sim)
            for i, row in enumerate(rows):
                if mode == "reference":
                    score = reference_unit(uid, gold, pred, sims, row.theta).f1
                else:
                    score = score_unit(uid, gold, pred, sims, row.theta, w=w, non_textual=non_textual).f1
                per_theta[i].append(score)
        elo_values = [present[n] for n in others]
        for i, row in enumerate(rows):
            row.rhos[uid] = spearman(elo_values, per_theta[i])
    return rows


@dataclass
class MetaRun:
    rows: list[MetaRow]
    counts: dict[str, Any]
    out_dir: Path | None = None

    def table(self) -> list[dict[str, Any]]:
        return [r.row() for r in self.rows]

    def best(self) -> dict[str, float]:
        return {r.measure: r.theta for r in self.rows if r.best}


def meta(
    graphs: dict[str, str | os.PathLike],
    *,
    ratings: str | os.PathLike | None = None,
    judgements: str | os.PathLike | None = None,
    measures: Sequence[str] | None = None,
    mode: str | None = None,
    orientation: str | None = None,
    bootstrap: int | None = None,
    seed: int | None = None,
    ties: str | None = None,
    out_dir: str | os.PathLike | None = None,
    cfg: Config | None = None,
) -> MetaRun:
    """Meta-evaluate soft measures against Elo ratings (``causalkg eval meta``).

    ``graphs``: {annotator: graph file}. Ratings come from ``ratings`` (``eval elo``'s
    ``ratings.jsonl``) or are computed from ``judgements`` (with ``eval.elo.*``, ``ties``).
    ``measures``: ``NAME[:ARG][=THETA]``; without ``=THETA`` the grid ``eval.meta.theta_grid`` of
    the measure is searched. Writes ``meta.jsonl`` (per unit and theta), ``summary.json`` and
    ``manifest.json`` under ``out_dir`` (default ``<paths.data>/eval/meta``; "" writes nothing).
    """
    from causalkg.core.config import load_config

    cfg = cfg or load_config(search_cwd=False)
    ev = cfg["eval"]
    mode = mode or ev["soft"]["mode"]
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}", hint="use ours or reference")
    if (ratings is None) == (judgements is None):
        raise ConfigError("give exactly one of --ratings FILE or --judgements FILE")
    if not graphs:
        raise ConfigError("no annotations", hint="--graphs NAME=FILE, once per annotator")
    annotations = {name: read_graphs(path) for name, path in graphs.items()}
    if ratings is not None:
        unit_ratings = read_ratings(ratings)
    else:
        units = elo_ratings(read_judgements(judgements), k=float(ev["elo"]["k"]), start=float(ev["elo"]["start"]),
                            ties=ties or ev["elo"]["ties"])
        unit_ratings = {u.unit: u.ratings() for u in units.values()}
    unknown = sorted({n for r in unit_ratings.values() for n in r} - set(annotations))
    bootstrap = int(ev["meta"]["bootstrap"] if bootstrap is None else bootstrap)
    seed = int(ev["meta"]["seed"] if seed is None else seed)
    grid = ev["meta"]["theta_grid"]
    plan: list[tuple[str, list[float]]] = []
    for item in measures or ev["soft"]["measures"]:
        spec, sep, theta = item.partition("=")
        spec = spec.strip()
        if mode == "reference":
            spec = reference_name(spec)
        if sep:
            try:
                thetas = [float(theta)]
            except ValueError:
                raise ConfigError(f"--measure {item!r}: threshold {theta!r} is not a number") from None
        else:
            key = canonical_name(spec)
            if key not in grid:
                raise ConfigError(f"no threshold grid for measure {spec!r}", hint=f"write it as {spec}=THETA or set eval.meta.theta_grid")
            thetas = [float(t) for t in grid[key]]
        plan.append((spec, thetas))
    options = {"wordnet_dir": ev["soft"]["wordnet_dir"] or None, "device": stage_device(cfg, "eval.soft.device")}
    rows: list[MetaRow] = []
    for spec, thetas in plan:
        sim = get_similarity(spec, **options)
        measure_rows = correlate_measure(annotations, unit_ratings, sim, thetas, mode=mode, orientation=orientation,
                                         w=float(ev["soft"]["partial_weight"]), non_textual=ev["soft"]["non_textual"],
                                         measure=spec)
        best = None
        for r in measure_rows:
            r.intervals = bootstrap_intervals(list(r.rhos.values()), resamples=bootstrap, seed=seed)
            if best is None or r.mean > best.mean:
                best = r
        if best is not None:
            best.best = True
        rows += measure_rows
    counts = {"annotators": len(annotations), "units_rated": len(unit_ratings),
              "units_scored": len(rows[0].rhos) if rows else 0, "unknown_rated_annotators": unknown}
    run = MetaRun(rows, counts)
    if out_dir is None:
        out_dir = Layout.from_config(cfg).eval_out("meta")
    if out_dir:
        out = Path(out_dir)
        write_jsonl(out / "meta.jsonl", ({"measure": r.measure, "theta": r.theta, "unit": u, "rho": rho}
                                         for r in rows for u, rho in r.rhos.items()))
        write_json(out / "summary.json", {"rows": run.table(), "best_theta": run.best(), "counts": counts})
        inputs: dict[str, Any] = {f"graphs.{n}": p for n, p in graphs.items()}
        inputs["ratings" if ratings is not None else "judgements"] = ratings if ratings is not None else judgements
        recorded = {"mode": mode, "orientation": rows[0].orientation if rows else orientation, "bootstrap": bootstrap,
                    "seed": seed, "measures": [versioned_spec("similarity", spec) for spec, _ in plan]}  # rouge1.v1, ...
        write_manifest(out, build_manifest("eval.meta", cfg, inputs=inputs, outputs={"units": "meta.jsonl", "summary": "summary.json"},
                                           counts=counts, extra={"options": recorded}))
        run.out_dir = out
    return run
