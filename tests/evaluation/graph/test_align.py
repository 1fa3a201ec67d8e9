"""Structure-first alignment: each preprocessing step, each view, per-type scores, the validation
variants, and the search against brute force (all hand-checked or exhaustive; invented graphs)."""

from __future__ import annotations

import itertools
import random

import pytest

from causalkg.core.errors import ConfigError
from causalkg.evaluation.graph.align import (
    AGraph,
    _Problem,
    align_graphs,
    canonicalise_correlational,
    count_matched,
    cosine_tiers,
    drop_between_hierarchy_linked,
    drop_correlational_beside_directional,
    f1_safe_swap,
    greedy_map,
    keep_one_per_pair,
    merge_single_children,
    node_order,
    per_type_scores,
    preprocess,
    propagate_to_higher,
    summarise,
    UnitAlignment,
    validated_only,
    view,
)
from causalkg.evaluation.graph.graphs import Edge, Graph


def ag(nodes: dict[str, str] | list[str], *edges: tuple) -> AGraph:
    """An invented graph: nodes (ids, or id -> label), edges (u, v, type[, validation])."""
    if isinstance(nodes, list):
        nodes = {n: n for n in nodes}
    g = AGraph({n: (lbl, None) for n, lbl in nodes.items()}, {})
    for e in edges:
        g.add(e[0], e[1], e[2], e[3] if len(e) > 3 else None)
    return g


# -- preprocessing, one step at a time --------------------------------------------------------


def test_step1_canonical_correlational_order_by_label_then_id():
    g = ag({"x": "zeta", "y": "alpha", "z": "alpha"}, ("x", "y", "correlational"), ("z", "y", "correlational"),
           ("x", "y", "directional"))
    h = canonicalise_correlational(g)
    # zeta > alpha: x-y becomes y-x; equal labels fall back to the id: y < z.
    assert set(h.edges) == {("y", "x", "correlational"), ("y", "z", "correlational"), ("x", "y", "directional")}
    # (u, v) and (v, u) correlational collapse into one, keeping the better validation.
    g = ag(["a", "b"], ("b", "a", "correlational", "null"), ("a", "b", "correlational", "validated"))
    assert canonicalise_correlational(g).edges == {("a", "b", "correlational"): "validated"}


def test_step2_merge_higher_node_with_its_only_child():
    g = ag({"H": "anxiety", "L": "test anxiety", "M": "mood", "N": "affect", "O": "other"},
           ("H", "L", "hierarchy"), ("M", "N", "hierarchy"), ("M", "O", "hierarchy"),
           ("L", "O", "directional"), ("H", "L", "directional"))
    h = merge_single_children(g)
    assert h.nodes["H"] == ("anxiety (test anxiety)", None) and "L" not in h.nodes
    # The merged hierarchy edge and the now self-looping edge are gone; L's edge moved to H;
    # M has two children and stays as it is.
    assert set(h.edges) == {("M", "N", "hierarchy"), ("M", "O", "hierarchy"), ("H", "O", "directional")}


def test_step2_chains_merge_into_one_node():
    g = ag({"A": "a", "B": "b", "C": "c", "D": "d"}, ("A", "B", "hierarchy"), ("B", "C", "hierarchy"),
           ("C", "D", "directional"))
    h = merge_single_children(g)
    assert list(h.nodes) == ["A", "D"] and h.label("A") == "a (b (c))"
    assert set(h.edges) == {("A", "D", "directional")}


def test_step3_propagate_up_until_nothing_changes():
    g = ag(["top", "mid", "low", "x", "y"], ("top", "mid", "hierarchy"), ("mid", "low", "hierarchy"),
           ("low", "x", "directional", "validated"), ("y", "low", "moderation"), ("top", "x", "directional", "null"),
           ("low", "mid", "correlational"))
    h = propagate_to_higher(g)
    assert h.edges[("mid", "x", "directional")] == "validated"
    assert ("top", "x", "directional") in h.edges and h.edges[("top", "x", "directional")] == "null"  # kept as it was
    assert {("y", "mid", "moderation"), ("y", "top", "moderation")} <= set(h.edges)  # two levels up
    # low -- mid: its source low sits under mid, which would give (mid, mid): no self-loops;
    # its target mid sits under top, which gives (low, top).
    assert ("mid", "mid", "correlational") not in h.edges
    assert ("low", "top", "correlational") in h.edges


def test_step4_drop_non_hierarchy_between_hierarchy_linked_nodes():
    g = ag(["a", "b", "c"], ("a", "b", "hierarchy"), ("b", "a", "directional"), ("a", "b", "moderation"),
           ("a", "c", "directional"))
    h = drop_between_hierarchy_linked(g)
    assert set(h.edges) == {("a", "b", "hierarchy"), ("a", "c", "directional")}


def test_step6_drop_correlational_beside_directional():
    g = ag(["a", "b", "c"], ("a", "b", "correlational"), ("b", "a", "directional"), ("a", "c", "correlational"))
    h = drop_correlational_beside_directional(g)
    assert set(h.edges) == {("b", "a", "directional"), ("a", "c", "correlational")}


def test_step7_one_edge_per_ordered_pair_by_priority():
    g = ag(["a", "b"], ("a", "b", "moderation", "validated"), ("a", "b", "correlational", "hypothesized"),
           ("b", "a", "moderation", "null"), ("a", "b", "hierarchy"))
    h = keep_one_per_pair(g)
    assert h.edges == {("a", "b", "hierarchy"): None, ("a", "b", "correlational"): "hypothesized",
                       ("b", "a", "moderation"): "null"}
    # Within a type the validation decides: validated > null > hypothesized.
    g = ag(["a", "b"], ("a", "b", "directional", "hypothesized"))
    g.add("a", "b", "directional", "validated")
    assert keep_one_per_pair(g).edges == {("a", "b", "directional"): "validated"}


def test_preprocess_runs_the_steps_in_order():
    # Correlational x -- L is propagated to H, but x -- H also has a directional edge, so step 6
    # drops the propagated correlational edge; H's two children keep it from merging.
    g = Graph("u")
    for nid in ("H", "L1", "L2", "x"):
        g.add_node(nid, nid)
    g.add_edge(Edge("H", "L1", "hierarchy"))
    g.add_edge(Edge("H", "L2", "hierarchy"))
    g.add_edge(Edge("x", "L1", "correlational", None, "validated"))
    g.add_edge(Edge("x", "H", "directional", None, "null"))
    a = preprocess(g)
    assert set(a.edges) == {("H", "L1", "hierarchy"), ("H", "L2", "hierarchy"), ("L1", "x", "correlational"),
                            ("x", "H", "directional")}
    assert a.edges[("L1", "x", "correlational")] == "validated"  # canonical: "L1" < "x"


# -- views and variants ------------------------------------------------------------------------


def test_views():
    g = ag({"H": "h", "L1": "l1", "L2": "l2", "x": "x", "y": "y"}, ("H", "L1", "hierarchy"), ("H", "L2", "hierarchy"),
           ("x", "H", "directional"), ("x", "L1", "moderation"), ("x", "y", "correlational"), ("y", "x", "moderation"))
    assert set(view(g, "typed").edges) == set(g.edges)
    hi = view(g, "higher")
    assert set(hi.nodes) == {"H", "x", "y"}
    assert set(hi.edges) == {("x", "H", "directional"), ("x", "y", "correlational"), ("y", "x", "moderation")}
    ag_ = view(g, "agnostic")
    assert all(t == "relation" for (_, _, t) in ag_.edges) and len(ag_.edges) == 6
    ha = view(g, "higher-agnostic")
    # x -> y (correlational) and y -> x (moderation) are two ordered pairs: two relations.
    assert set(ha.edges) == {("x", "H", "relation"), ("x", "y", "relation"), ("y", "x", "relation")}
    with pytest.raises(ConfigError, match="unknown alignment view 'flat'"):
        view(g, "flat")
    # A node marked lower-level leaves the higher view too.
    g.nodes["y"] = ("y", "lower")
    assert "y" not in view(g, "higher").nodes


def test_validated_only_and_match_validation():
    gold = ag(["a", "b", "c"], ("a", "b", "directional", "validated"), ("b", "c", "directional", "hypothesized"))
    pred = ag(["x", "y", "z"], ("x", "y", "directional", "null"), ("y", "z", "directional", "hypothesized"))
    assert align_graphs(gold, pred).matched == 2
    m = align_graphs(gold, pred, match_validation=True)
    assert m.matched == 1  # only b -> c agrees on its validation
    assert set(validated_only(gold).edges) == {("a", "b", "directional")}
    pt = per_type_scores(gold, pred, m.phi, match_validation=True)
    assert pt["directional"]["matched"] == 1
    assert pt["directional:hypothesized"] == {"matched": 1, "gold": 1, "pred": 1, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert pt["directional:validated"]["recall"] == 0.0 and pt["directional:validated"]["pred"] == 0


# -- the search ------------------------------------------------------------------------------------


def test_hand_checked_alignment_and_scores():
    gold = ag(["a", "b", "c", "d"], ("a", "b", "directional"), ("b", "c", "directional"), ("c", "d", "correlational"),
              ("a", "d", "moderation"))
    pred = ag(["x", "y", "z", "w", "q", "r"], ("x", "y", "directional"), ("y", "z", "directional"),
              ("w", "z", "correlational"), ("q", "r", "moderation"), ("r", "q", "directional"))
    a = align_graphs(gold, pred)
    # a->x, b->y, c->z, d->w: two directional edges and the correlational one (reversed is fine).
    assert a.matched == 3 and a.exact and a.phi == {"a": "x", "b": "y", "c": "z", "d": "w"}
    assert a.precision == pytest.approx(3 / 5) and a.recall == pytest.approx(3 / 4)
    assert a.f1 == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    pt = per_type_scores(gold, pred, a.phi)
    assert pt["directional"] == {"matched": 2, "gold": 2, "pred": 3, "precision": 2 / 3, "recall": 1.0, "f1": 0.8}
    assert pt["correlational"]["f1"] == 1.0
    assert pt["moderation"] == {"matched": 0, "gold": 1, "pred": 1, "precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_empty_graphs():
    e = AGraph()
    one = ag(["a", "b"], ("a", "b", "directional"))
    both = align_graphs(e, e)
    assert (both.precision, both.recall, both.f1, both.exact) == (1.0, 1.0, 1.0, True)
    half = align_graphs(one, e)
    assert (half.precision, half.recall, half.f1) == (0.0, 0.0, 0.0)


def _random(rng: random.Random, n: int, e: int, prefix: str) -> AGraph:
    g = AGraph({f"{prefix}{i}": (f"{prefix}{i}", None) for i in range(n)}, {})
    for _ in range(e):
        u, v = rng.randrange(n), rng.randrange(n)
        g.add(f"{prefix}{u}", f"{prefix}{v}", rng.choice(["directional", "correlational", "moderation", "hierarchy"]),
              rng.choice(["validated", "null", "hypothesized"]))
    return g


def _brute(gold: AGraph, pred: AGraph, match: bool) -> int:
    prob = _Problem(gold, pred, match)
    gn, pn = list(gold.nodes), list(pred.nodes)
    best = 0
    for k in range(len(gn) + 1):
        for subset in itertools.combinations(gn, k):
            for image in itertools.permutations(pn, k):
                best = max(best, count_matched(prob, dict(zip(subset, image))))
    return best


def test_branch_and_bound_equals_brute_force_on_random_graphs():
    rng = random.Random(3)
    for trial in range(120):
        gold = _random(rng, rng.randint(1, 5), rng.randint(0, 9), "g")
        pred = _random(rng, rng.randint(1, 5), rng.randint(0, 9), "p")
        match = trial % 3 == 0
        a = align_graphs(gold, pred, match_validation=match)
        expected = _brute(gold, pred, match) if gold.edges and pred.edges else 0
        assert a.matched == expected and a.exact, (trial, gold.edges, pred.edges)
        if gold.edges and pred.edges:
            assert count_matched(_Problem(gold, pred, match), a.phi) == a.matched


def test_time_limit_gives_a_flagged_lower_bound():
    rng = random.Random(1)
    gold, pred = AGraph(), AGraph()
    for g, pre in ((gold, "g"), (pred, "p")):
        for i in range(16):
            g.nodes[f"{pre}{i}"] = (f"{pre}{i}", None)
        while len(g.edges) < 40:
            u, v = rng.sample(range(16), 2)
            g.add(f"{pre}{u}", f"{pre}{v}", "directional", None)
    a = align_graphs(gold, pred, timeout=0.0)
    assert not a.exact and a.orders_run == ["degree_desc", "degree_asc", "label", "random_11", "random_29"]
    assert a.matched >= greedy_map(_Problem(gold, pred, False), node_order(gold, "degree_desc"))[0]
    assert count_matched(_Problem(gold, pred, False), a.phi) == a.matched


def test_node_orders():
    g = ag({"a": "zz", "b": "aa", "c": "mm"}, ("a", "b", "directional"), ("a", "c", "directional"))
    assert node_order(g, "degree_desc") == ["a", "b", "c"]
    assert node_order(g, "degree_asc") == ["b", "c", "a"]
    assert node_order(g, "label") == ["b", "c", "a"]
    assert sorted(node_order(g, "random_11")) == ["a", "b", "c"]
    assert node_order(g, "random_11") == node_order(g, "random_11")
    with pytest.raises(ConfigError, match="unknown node order 'bfs'"):
        node_order(g, "bfs")


def test_f1_safe_swap_and_tiers():
    import numpy as np

    # Two symmetric gold nodes: the structure cannot tell b from c, the labels can.
    gold = ag({"a": "stress", "b": "sleep", "c": "mood"}, ("a", "b", "directional"), ("a", "c", "directional"))
    pred = ag({"x": "stress", "y": "mood", "z": "sleep"}, ("x", "y", "directional"), ("x", "z", "directional"))
    phi = {"a": "x", "b": "y", "c": "z"}
    cos = np.array([[1.0, 0.1, 0.2], [0.1, 0.3, 0.95], [0.1, 0.9, 0.3]])  # gold rows, pred columns
    new = f1_safe_swap(gold, pred, phi, cos)
    assert new == {"a": "x", "b": "z", "c": "y"}
    assert count_matched(_Problem(gold, pred, False), new) == 2
    t = cosine_tiers([0.95, 0.8, 0.6, 0.4, 0.1])
    assert t["pairs"] == 5 and t[">=0.9 near-exact"]["pairs"] == 1 and t["<0.3 low"]["share"] == 0.2
    assert t["mean"] == pytest.approx(0.57)


def test_summaries_micro_and_macro():
    gold = ag(["a", "b", "c"], ("a", "b", "directional"), ("b", "c", "directional"))
    pred = ag(["x", "y"], ("x", "y", "directional"))
    u1 = UnitAlignment("1", "typed", align_graphs(gold, pred), {})
    u2 = UnitAlignment("2", "typed", align_graphs(AGraph(), AGraph()), {})
    s = summarise([u1, u2])
    assert (s["matched"], s["gold_edges"], s["pred_edges"]) == (1, 2, 1)
    assert s["micro_p"] == 1.0 and s["micro_r"] == 0.5
    assert s["macro_r"] == pytest.approx((0.5 + 1.0) / 2)  # the empty unit scores 1
    assert s["macro_f1_gold_units"] == pytest.approx(2 / 3)  # the study's mean: units with gold edges


def test_reference_mode_keeps_the_self_loop_step3_makes_on_a_shared_parent():
    # Two children of one parent joined by an edge: step 3 copies it up at both ends. Ours stops
    # at (P, c2) and (c1, P); the authors' code also makes (P, P), and its counts include it.
    g = ag(["P", "c1", "c2"], ("P", "c1", "hierarchy"), ("P", "c2", "hierarchy"), ("c1", "c2", "directional"))
    ours, ref = preprocess(g), preprocess(g, "reference")
    assert ("P", "P", "directional") not in ours.edges
    assert ("P", "P", "directional") in ref.edges
    assert ref.n_edges() == ours.n_edges() + 1
    assert propagate_to_higher(g, self_loops=True).edges.keys() - propagate_to_higher(g).edges.keys() == {
        ("P", "P", "directional")}
    with pytest.raises(ConfigError, match="unknown alignment mode"):
        preprocess(g, "theirs")


def test_reference_mode_keeps_a_repeated_edges_first_validation():
    ours, ref = AGraph(), AGraph(keep_first=True)
    for g in (ours, ref):
        g.nodes.update({"a": ("a", None), "b": ("b", None)})
        g.add("a", "b", "directional", "hypothesized")
        g.add("a", "b", "directional", "validated")
    assert ours.edges[("a", "b", "directional")] == "validated"
    assert ref.edges[("a", "b", "directional")] == "hypothesized"
    assert ref.copy_nodes().keep_first and preprocess(ref, "reference").keep_first
