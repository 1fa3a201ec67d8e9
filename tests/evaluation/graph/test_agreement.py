"""Cohen's and Fleiss' kappa by hand, pair labels, and the agreement command (invented graphs)."""

from __future__ import annotations

import json
import math

import pytest

from causalkg.evaluation.graph.agreement import cohen_kappa, fleiss_kappa, node_map, pair_label, pair_labels
from causalkg.evaluation.graph.align import AGraph


def ag(*edges: tuple) -> AGraph:
    g = AGraph()
    for u, v, t in edges:
        for n in (u, v):
            g.nodes.setdefault(n, (n, None))
        g.add(u, v, t, "validated")
    return g


def test_cohen_by_hand():
    # p_o = 3/4; marginals x: 1/2 and 1/4, y: 1/2 and 3/4: p_e = 1/8 + 3/8 = 1/2; kappa = 1/2.
    assert cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "y"]) == pytest.approx(0.5)
    assert cohen_kappa(["a", "a"], ["a", "a"]) == 1.0  # chance agreement 1
    assert math.isnan(cohen_kappa([], []))


def test_fleiss_by_hand():
    # Items: (a, a, a), (a, a, b), (b, b, b). P_i = 1, 1/3, 1; mean 7/9. p_a = 5/9, p_b = 4/9;
    # P_e = 41/81; kappa = (63/81 - 41/81) / (40/81) = 0.55.
    raters = [["a", "a", "b"], ["a", "a", "b"], ["a", "b", "b"]]
    assert fleiss_kappa(raters) == pytest.approx(0.55)
    assert math.isnan(fleiss_kappa([["a"]]))


def test_pair_labels_priority_and_direction():
    g = ag(("a", "b", "hierarchy"), ("a", "b", "moderation"), ("b", "a", "directional"), ("c", "a", "correlational"))
    assert pair_label(g, "a", "b") == "directional"  # directional > moderation > hierarchy, either way
    assert pair_label(g, "a", "b", ordered=True) == "moderation"  # a -> b only: moderation beats hierarchy
    assert pair_label(g, "a", "c", ordered=True) == "correlational"  # undirected
    assert pair_label(g, "b", "c") == "none"


def test_pair_labels_over_a_map():
    x = ag(("a", "b", "directional"), ("b", "c", "moderation"))
    y = ag(("p", "q", "directional"), ("q", "r", "correlational"))
    phi = node_map(x, y)
    assert phi == {"a": "p", "b": "q", "c": "r"}  # c: left out by the optimum, then mapped to r
    lx, ly = pair_labels(x, y, {"a": "p", "b": "q", "c": "r"})
    assert lx == ["directional", "none", "moderation"] and ly == ["directional", "none", "correlational"]
    lx, _ = pair_labels(x, y, {"a": "p", "b": "q", "c": "r"}, ordered=True)
    assert len(lx) == 6 and lx.count("none") == 4
    greedy = node_map(x, y, "greedy")
    assert greedy["a"] == "p" and greedy["b"] == "q"


def _files(tmp_path):
    def rec(uid, edges):
        nodes = sorted({n for e in edges for n in e[:2]})
        return {"id": uid, "nodes": [{"id": n, "label": n} for n in nodes],
                "edges": [{"source": s, "target": t, "type": ty, "validation": "validated"} for s, t, ty in edges]}

    a = [rec("1", [("s", "b", "directional"), ("w", "s", "directional"), ("u", "b", "moderation")]),
         rec("2", [("x", "y", "correlational")])]
    b = [rec("1", [("S", "B", "directional"), ("W", "S", "directional"), ("U", "B", "correlational")]),
         rec("2", [("X", "Y", "correlational")])]
    c = [rec("1", [("s1", "b1", "directional"), ("w1", "s1", "directional"), ("u1", "b1", "moderation")]),
         rec("2", [("x1", "y1", "correlational")]), rec("3", [])]
    paths = []
    for name, recs in (("a", a), ("b", b), ("c", c)):
        f = tmp_path / f"{name}.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in recs))
        paths.append(f)
    return paths


def test_agreement_command_unordered_pairs(cli, tmp_path):
    a, b, c = _files(tmp_path)
    r = cli("eval", "agreement", a, b, c, "--names", "A,B,C", "--format", "csv", "--out", tmp_path / "out",
            "--unordered")
    assert r.code == 0, r.err
    rows = [line.split(",") for line in r.out.splitlines()[1:4]]
    assert rows[1][:2] == ["cohen", "A-C"] and float(rows[1][2]) == 1.0  # identical structure
    # A vs B: unit 1 aligns s, b, w by structure; u (moderation to b) is left out by the optimum
    # and then mapped to U, whose edge to B is correlational: one disagreeing pair of six.
    # Pairs: (s,b) dir/dir, (s,w) dir/dir, (s,u) none/none, (b,w) none/none, (b,u) mod/corr,
    # (w,u) none/none, and unit 2 (x,y) corr/corr. p_o = 6/7; marginals A: dir 2, none 3, mod 1,
    # corr 1; B: dir 2, none 3, corr 2: p_e = (4 + 9 + 2) / 49 = 15/49; kappa = (42 - 15)/(49 - 15).
    assert rows[0][:2] == ["cohen", "A-B"] and float(rows[0][2]) == pytest.approx(27 / 34, abs=1e-4)
    assert r.out.splitlines()[4].startswith("fleiss,A-B-C,")
    assert len(r.out.splitlines()) == 5  # csv is the table only; text adds the count of units
    text = cli("eval", "agreement", a, b, c, "--names", "A,B,C", "--no-write", "--unordered")
    assert text.out.rstrip().endswith("2 units annotated by all 3 annotators")
    assert json.loads((tmp_path / "out" / "agreement.json").read_text())["counts"] == {"annotators": 3, "units": 2}


def test_agreement_labels_ordered_pairs_by_default(cli, tmp_path):
    a, b, c = _files(tmp_path)
    r = cli("eval", "agreement", a, b, c, "--names", "A,B,C", "--format", "csv", "--no-write")
    assert r.code == 0, r.err
    rows = [line.split(",") for line in r.out.splitlines()[1:4]]
    # Ordered pairs: unit 1 has 12 (4 nodes), unit 2 has 2; correlational edges count both ways.
    # A vs B disagree on (b,u) none/corr and (u,b) mod/corr: p_o = 12/14. Marginals A: dir 2,
    # mod 1, corr 2, none 9; B: dir 2, corr 4, none 8: p_e = (4 + 8 + 72) / 196 = 84/196;
    # kappa = (168 - 84) / (196 - 84) = 0.75.
    assert rows[0][:2] == ["cohen", "A-B"] and float(rows[0][2]) == pytest.approx(0.75, abs=1e-4)
    assert rows[1][:2] == ["cohen", "A-C"] and float(rows[1][2]) == 1.0


def test_agreement_errors(cli, tmp_path):
    a, b, _ = _files(tmp_path)
    r = cli("eval", "agreement", a)
    assert r.code == 2 and r.err.strip() == "error: agreement needs at least two annotation files"
    r = cli("eval", "agreement", a, b, "--names", "A,A")
    assert r.code == 2 and "one distinct name per file" in r.err
    other = tmp_path / "o.jsonl"
    other.write_text('{"id": "zz", "edges": []}\n')
    r = cli("eval", "agreement", a, other, "--no-write")
    assert r.code == 2 and "share no unit id" in r.err
