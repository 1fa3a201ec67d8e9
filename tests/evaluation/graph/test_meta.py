"""Meta-evaluation: per-unit Spearman with undefined = 0, the mean, bootstrap intervals, the
threshold grid search, and the command (invented annotations with hand-checked correlations)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from causalkg.core.errors import ConfigError
from causalkg.evaluation.graph.graphs import Edge, Graph
from causalkg.evaluation.graph.meta import bootstrap_intervals, correlate_measure, spearman
from causalkg.evaluation.graph.similarity import get_similarity

TUPLES = [("stress", "burnout"), ("workload", "stress"), ("support", "burnout"), ("sleep", "mood")]


def annotation(uid: str, k: int, *, noisy: bool = False) -> Graph:
    """Invented: the first k tuples of TUPLES (noisy: labels reworded)."""
    g = Graph(uid, "passage")
    for s, t in TUPLES[:k]:
        if noisy:
            s, t = f"levels of {s}", f"{t} levels"
        g.add_edge(Edge(s, t, "directional", "increase"))
    return g


def annotations() -> dict[str, dict[str, Graph]]:
    units = ["u", "v", "w"]
    return {
        "W": {u: annotation(u, 4) for u in units},
        "A": {u: annotation(u, 3) for u in units},   # F1 vs W = 2(1)(.75)/1.75 = .857
        "B": {u: annotation(u, 2) for u in ["u", "v"]},  # .667
        "C": {u: annotation(u, 1) for u in ["u", "v"]},  # .4
    }


RATINGS = {
    "u": {"W": 1100.0, "A": 1050.0, "B": 1000.0, "C": 950.0},   # Elo order = F1 order: rho 1
    "v": {"W": 1100.0, "A": 950.0, "B": 1000.0, "C": 1050.0},   # reversed: rho -1
    "w": {"W": 1100.0, "A": 1000.0},                            # one other annotation: 0
}


def test_spearman_undefined_is_zero():
    assert spearman([1, 2, 3], [0.1, 0.5, 0.9]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [0.5, 0.5, 0.5]) == 0.0  # constant scores
    assert spearman([1], [0.2]) == 0.0


def test_correlations_by_hand():
    (row,) = correlate_measure(annotations(), RATINGS, get_similarity("exact"), [1.0])
    assert row.rhos == pytest.approx({"u": 1.0, "v": -1.0, "w": 0.0})
    assert row.mean == pytest.approx(0.0)
    assert row.orientation == "winner-gold"


def test_reference_mode_uses_the_studys_orientation():
    (row,) = correlate_measure(annotations(), RATINGS, get_similarity("verbatim"), [0.5], mode="reference")
    assert row.orientation == "winner-pred"
    assert row.rhos == pytest.approx({"u": 1.0, "v": -1.0, "w": 0.0})  # F1 is symmetric on these subsets
    with pytest.raises(ConfigError, match="unknown orientation"):
        correlate_measure(annotations(), RATINGS, get_similarity("exact"), [1.0], orientation="sideways")


def test_threshold_grid_on_reworded_labels():
    ann = annotations()
    ann["A"] = {u: annotation(u, 3, noisy=True) for u in ["u", "v", "w"]}  # A rewords every label
    rows = correlate_measure(ann, {"u": RATINGS["u"]}, get_similarity("rouge1"), [0.9, 0.5])
    # At 0.9 A's reworded labels miss (F1 0) and A ranks last on scores but second on Elo: rho
    # over (A, B, C) = Spearman([1050, 1000, 950], [0, .667, .4]) = -0.5; at 0.5 they match: 1.
    assert rows[0].rhos["u"] == pytest.approx(-0.5) and rows[1].rhos["u"] == pytest.approx(1.0)


def test_bootstrap_intervals_are_seeded_percentiles():
    vals = [1.0, -1.0, 0.0, 0.5]
    a = bootstrap_intervals(vals, resamples=2000, seed=3)
    assert a == bootstrap_intervals(vals, resamples=2000, seed=3)
    assert a["ci95_low"] <= a["ci90_low"] <= np.mean(vals) <= a["ci90_high"] <= a["ci95_high"]
    assert -1.0 <= a["ci95_low"] and a["ci95_high"] <= 1.0
    assert bootstrap_intervals([0.3] * 5)["ci95_low"] == pytest.approx(0.3)


def _write_inputs(tmp_path: Path) -> tuple[list[str], Path]:
    args = []
    for name, by_unit in annotations().items():
        f = tmp_path / f"{name}.jsonl"
        f.write_text("".join(json.dumps(g.to_record()) + "\n" for g in by_unit.values()))
        args += ["--graphs", f"{name}={f}"]
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text("".join(json.dumps({"unit": u, "player": p, "rating": r}) + "\n"
                               for u, rs in RATINGS.items() for p, r in rs.items()))
    return args, ratings


def test_meta_command(cli, tmp_path):
    graphs, ratings = _write_inputs(tmp_path)
    r = cli("eval", "meta", *graphs, "--ratings", ratings, "--measure", "exact", "--measure", "rouge1",
            "--bootstrap", "200", "--format", "csv", "--out", tmp_path / "out", "--set", "eval.meta.theta_grid.rouge1=[0.5, 0.9]")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "measure,theta,mode,orientation,units,rho,ci90_low,ci90_high,ci95_low,ci95_high,best"
    assert lines[1].startswith("exact,1.0000,ours,winner-gold,3,0.0000,")
    assert len(lines) == 4  # csv is the table only; text adds the best thresholds
    text = cli("eval", "meta", *graphs, "--ratings", ratings, "--measure", "exact", "--measure", "rouge1",
               "--bootstrap", "200", "--no-write", "--set", "eval.meta.theta_grid.rouge1=[0.5, 0.9]")
    assert text.out.rstrip().splitlines()[-1] == "best theta: exact=1, rouge1=0.5; 3 units"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["best_theta"] == {"exact": 1.0, "rouge1": 0.5}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["options"]["measures"] == ["exact.v1", "rouge1.v1"]  # versioned registry names


def test_meta_command_errors(cli, tmp_path):
    graphs, ratings = _write_inputs(tmp_path)
    r = cli("eval", "meta", *graphs, "--ratings", ratings, "--measure", "embedding:x=oops", "--no-write")
    assert r.code == 2 and r.err.strip() == "error: --measure 'embedding:x=oops': threshold 'oops' is not a number"
    r = cli("eval", "meta", "--graphs", "nope", "--ratings", ratings)
    assert r.code == 2 and "expected NAME=PATH" in r.err
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"unit": "u", "player": "A"}\n')
    r = cli("eval", "meta", *graphs, "--ratings", bad, "--no-write")
    assert r.code == 1 and r.err.strip() == f"error: {bad}:1: expected an object with unit, player and rating"
