"""Graph analysis (kg/stats.py): counts, degrees, top causes and effects, cycles, components,
agreement with the Base KG; the ``kg stats`` and ``kg summary`` commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import KGEdge
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import write_jsonl
from causalkg.kg import assemble as A
from causalkg.kg import stats as S
from causalkg.kg import store as K

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"
BASE = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats")
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(root / "data")})
    (root / "data" / "wikidata").mkdir(parents=True)
    shutil.copy(BASE, root / "data" / "wikidata" / "base_kg.jsonl")
    A.assemble(cfg, linked=FIX / "linked.jsonl", concepts=FIX / "concepts.jsonl")
    return root, cfg


def _edge(c: str, e: str, n: int = 1, level: str = "class") -> dict:
    """An invented edge (for the cycle and component tests): QIDs and labels are placeholders."""
    return {"cause": {"label": f"c{c}", "id": [c]}, "effect": {"label": f"c{e}", "id": [e]}, "edge_id": f"{c}_{e}",
            "level": level, "cause_kind": "class", "effect_kind": "class",
            "support": {"sentences": n, "documents": 1, "mentions": n, "direct_mentions": n},
            "score": {"best": 0.5, "mean": 0.5}, "link_score": {"best": 1.0, "mean": 1.0}}


def test_stats_of_the_fixture_kg(project):
    _, cfg = project
    s = S.stats(cfg)
    assert (s.nodes, s.edges) == (13, 13)
    assert s.levels == {"class": 10, "instance": 1, "mixed": 2}
    assert sum(s.degree["in"].values()) == sum(s.degree["out"].values()) == 13  # every node counted once
    assert sum(d * n for d, n in s.degree["in"].items()) == 13  # and every edge once
    # three edges, three distinct sentences (one sentence says both "tsunamis" and "deaths")
    assert s.top_causes[0] == {"id": "Q7944", "label": "earthquake", "kind": "class", "edges": 3, "sentences": 3}
    assert s.top_effects[0]["id"] == "Q4" and s.top_effects[0]["edges"] == 5
    assert (s.components, s.largest_component, s.self_loops, s.cycles) == (2, 11, 0, 0)
    agree = {r["view"]: r for r in s.agreement}
    # earthquake->tsunami, earthquake->/tsunami->train wreck, accident->death, volcanic eruption->tsunami
    assert agree["classes"]["both"] == 5 and agree["classes"]["base"] == 427
    assert (agree["instances"]["ours"], agree["instances"]["both"]) == (3, 1)  # instance + mixed edges
    assert agree["full"]["ours"] == 13 and agree["full"]["both"] == 6
    only = S.stats(cfg, level="instance")
    assert (only.nodes, only.edges) == (2, 1)
    # class edges only: a lifted edge still counts the sentence of the instance edge behind it
    assert S.stats(cfg, level="class").top_causes[0]["sentences"] == 3
    with pytest.raises(ConfigError, match="level must be one of all, class, instance, mixed, got 'edges'"):
        S.stats(cfg, level="edges")


def test_cycles_self_loops_and_components(tmp_path):
    kg = tmp_path / "kg"
    write_jsonl(kg / "causal_kg_pairs.jsonl", [KGEdge.model_validate(x) for x in (
        _edge("Q1", "Q2", 3), _edge("Q2", "Q3"), _edge("Q3", "Q1"), _edge("Q3", "Q3"), _edge("Q2", "Q1"),
        _edge("Q10", "Q11"))])
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "none")})
    s = S.stats(cfg, kg=kg)
    assert s.self_loops == 1
    assert s.cycles == 2  # Q1->Q2->Q1 and Q1->Q2->Q3->Q1
    assert sorted(len(c) for c in s.cycle_examples) == [2, 3]
    assert (s.components, s.largest_component, s.component_sizes) == (2, 3, {3: 1, 2: 1})
    assert s.agreement is None and any("agreement not computed" in n for n in s.notes)
    capped = S.stats(cfg.with_overrides({"kg.max_cycles": 1}), kg=kg)
    assert capped.cycles == 1 and capped.cycles_capped
    assert ["cycles", "(length", "2+)", "1+"] in [ln.split() for ln in S.render_stats(capped).splitlines()]


def test_stats_cli(cli, project):
    root, _ = project
    r = cli("kg", "stats", cwd=root)
    assert r.code == 0, r.err
    rows = [ln.split() for ln in r.out.splitlines()]
    assert ["nodes", "13"] in rows and ["edges", "(mixed)", "2"] in rows
    assert "Agreement with the Base KG" in r.out and ["instances", "3", "399", "1", "0.3333", "0.0025"] in rows
    assert ["earthquake", "Q7944", "class", "3", "3"] in rows
    r = cli("kg", "stats", "--format", "json", "--level", "class", cwd=root)
    doc = json.loads(r.out)
    assert doc["level"] == "class" and doc["edges"] == 10 and doc["degree"]["in"]["0"] >= 1
    r = cli("kg", "stats", "--format", "md", "--top", "2", cwd=root)
    assert "| label | id | kind | edges | sentences |" in r.out


def test_stats_reads_the_kg_without_holding_its_mentions_and_counts_the_same_sentences(project):
    """stats keeps each edge without its mentions and their sentences as keys: every node's
    support is the distinct sentences of its edges' mentions and, for a lifted edge, those of
    the edges it was lifted from, counted with every edge and its mentions at hand."""
    _, cfg = project
    every = S.load_edges(cfg)
    by_id = {e.edge_id: e for e in every}
    assert any(not e.mentions and e.examples for e in every)  # a lifted edge: its sentences are its sources'

    def behind(e):
        pool = list(e.mentions) + [m for x in e.examples if x.edge_id in by_id for m in by_id[x.edge_id].mentions]
        return {(m.doc_id, m.sentence.start, m.sentence.end) for m in pool}

    for level in ("all", "class", "mixed"):
        want = {"out": {}, "in": {}}
        for e in every:
            if level == "all" or e.level == level:
                want["out"].setdefault(e.cause.id[0], set()).update(behind(e))
                want["in"].setdefault(e.effect.id[0], set()).update(behind(e))
        s = S.stats(cfg, level=level, top=100)
        assert {r["id"]: r["sentences"] for r in s.top_causes} == {k: len(v) for k, v in want["out"].items()}
        assert {r["id"]: r["sentences"] for r in s.top_effects} == {k: len(v) for k, v in want["in"].items()}


def test_stats_and_summary_cli_errors(cli, tmp_path):
    r = cli("kg", "stats", cwd=tmp_path)
    assert r.code == 1
    assert r.err.strip() == f"error: no KG at {tmp_path}/data/kg/causal_kg_pairs.jsonl (run causalkg kg assemble)"
    r = cli("kg", "summary", cwd=tmp_path)
    assert r.code == 1 and r.err.strip() == f"error: no assembled KG in {tmp_path}/data/kg (run causalkg kg assemble)"


def test_summary_cli(cli, project, monkeypatch):
    root, cfg = project
    monkeypatch.setenv("COLUMNS", "120")
    r = cli("kg", "summary", cwd=root)
    assert r.code == 0, r.err
    # Fits a 120-column terminal: sentences shortened, the header wrapped; --wide shows all.
    assert max(len(line) for line in r.out.splitlines()) <= 120
    assert "The undersea megathrust" in r.out and "..." in r.out
    # and an 80-column one: the least needed columns go too
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("kg", "summary", cwd=root)
    assert r.code == 0, r.err
    assert max(len(line) for line in r.out.splitlines()) <= 80
    header = r.out.splitlines()[r.out.splitlines().index("The 10 best-supported edges") + 2].split()
    assert header[:2] == ["cause", "effect"] and header[-1] == "evidence" and "documents" not in header
    r = cli("kg", "summary", "--wide", cwd=root)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == (f"causal KG in {root}/data/kg: 13 edges (10 class, 1 instance, 2 mixed) between 13 concepts, "
                        "from 10 mentions in 3 documents; 432 RDF triples")
    assert lines[2] == "store: not exported yet (run causalkg kg export)"
    assert "The 10 best-supported edges" in r.out
    table = lines[lines.index("The 10 best-supported edges") + 2:]
    assert table[0].split()[:2] == ["cause", "effect"] and len(table) == 11
    assert table[1].startswith("earthquake") and "The undersea megathrust earthquake" in table[1]
    assert any("[lifted] The tsunami caused the 2004 Sri Lanka" in row for row in table)
    K.export(cfg)
    r = cli("kg", "summary", "--top", "3", "--format", "json", cwd=root)
    doc = json.loads(r.out)
    assert [row["cause"] for row in doc["top"]] == ["earthquake", "September 11 attack", "mass murder"]
    assert doc["store"]["https://w3id.org/causalkg/graph/kg"] == doc["counts"]["triples"]


def test_summary_streams_the_kg_and_gives_the_best_edges_of_a_full_sort(project):
    """summary keeps only the n best edges (and a lifted edge's sources) while it reads: what it
    gives is what sorting every edge and looking evidence up among all of them gives."""
    _, cfg = project
    every = {e.edge_id: e for e in S.load_edges(cfg)}
    assert any(not e.mentions for e in every.values())  # a lifted edge, whose evidence is a source's
    for top in (1, 3, 13, 50):
        want = [S._edge_row(e) | {"evidence": S.evidence_of(e, every)}
                for e in sorted(every.values(), key=S.edge_rank)[:top]]
        assert S.summary(cfg, top=top).top == want


def test_notebook_helpers(project):
    _, cfg = project
    edges = S.load_edges(cfg)
    g = S.top_subgraph(edges, n=3, level="class")
    assert g.number_of_edges() == 3 and g.nodes["Q7944"]["label"] == "earthquake"
    rows = S.evidence_rows(edges, n=5)
    assert len(rows) == 5 and rows[0]["page"] == "2004 Indian Ocean earthquake"
    assert all(r["sentence"] for r in rows)
    dist = S.degree_distribution(S.to_networkx(edges))
    assert dist["total"] == {1: 5, 2: 5, 3: 2, 5: 1}


def test_the_evidence_shown_is_the_sentence_that_states_the_pair_most_strongly(project):
    """With the pair verifier's verdicts on the mentions, the sentence shown for an edge (summary,
    explorer) is the one with the best extraction score times P(causal as written): a
    high-scored sentence the verifier doubts gives way; without verdicts the best score wins."""
    from causalkg.core.contracts import KGMention

    _, cfg = project
    e = next(e for e in S.load_edges(cfg) if len({m.score for m in e.mentions}) >= 2)
    ranked = sorted(e.mentions, key=lambda m: -m.score)
    hi, lo = ranked[0], ranked[-1]
    assert S.best_mention(e) == hi
    verdict = lambda p, **kw: {"verdict": "causal", "score": p,  # noqa: E731
                               "probabilities": {"causal": p, "reversed": 0.0, "not_causal": 1 - p}, **kw}
    doubted = KGMention.model_validate({**hi.model_dump(), "verifier": verdict(lo.score / hi.score / 2)})
    sure = KGMention.model_validate({**lo.model_dump(), "verifier": verdict(1.0)})
    mixed = e.model_copy(update={"mentions": [doubted, sure] + [m for m in e.mentions if m not in (hi, lo)]})
    assert S.evidence_strength(sure) == lo.score and S.evidence_strength(doubted) < lo.score
    assert S.best_mention(mixed).mention_id == lo.mention_id
    flipped = KGMention.model_validate({**hi.model_dump(), "verifier": {
        "verdict": "reversed", "flipped": True, "probabilities": {"causal": 0.1, "reversed": 0.8, "not_causal": 0.1}}})
    assert S.evidence_strength(flipped) == pytest.approx(hi.score * 0.8)
