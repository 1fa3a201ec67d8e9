"""Elo ratings against a hand-computed sequence, tie rules, file order, and the LLM tournament
against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from causalkg.core.cache import DiskCache
from causalkg.core.errors import SchemaError
from causalkg.core.llm import ChatClient
from causalkg.core.retry import RetryPolicy
from causalkg.testing.openai_server import Fault, last_user_message
from causalkg.evaluation.graph.elo import (
    Judgement,
    elo_ratings,
    expected_score,
    parse_verdict,
    read_judgements,
    run_tournament,
    tournament_schedule,
)
from causalkg.evaluation.graph.graphs import Edge, Graph, read_fcm_csv

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "soft-measures"


def test_hand_computed_sequence():
    js = [Judgement("u", "A", "B", "A"), Judgement("u", "B", "A", "B"), Judgement("u", "A", "C", "tie"),
          Judgement("u", "C", "B", "C")]
    r = elo_ratings(js)["u"]
    # 1. A beats B at 1000-1000: E = 0.5, so A 1016, B 984.
    # 2. B beats A: E_B = 1 / (1 + 10^(32/400)) = 1 / (1 + 1.20226443) = 0.45407808;
    #    B = 984 + 32 * 0.54592192 = 1001.469502, A = 1016 - 17.469502 = 998.530498.
    # 3. tie: skipped.
    # 4. C (1000) beats B (1001.469502): E_C = 1 / (1 + 10^(1.469502/400)) = 0.49788523;
    #    C = 1000 + 32 * 0.50211477 = 1016.067673, B = 1001.469502 - 16.067673 = 985.401829.
    assert r.players["A"].rating == pytest.approx(998.530498, abs=2e-6)
    assert r.players["C"].rating == pytest.approx(1016.067673, abs=2e-6)
    assert r.players["B"].rating == pytest.approx(985.401829, abs=2e-6)
    assert r.winner == "C"
    assert (r.players["A"].wins, r.players["A"].losses, r.players["A"].ties, r.players["A"].games) == (1, 1, 1, 3)
    assert [p.player for p in sorted(r.players.values(), key=lambda p: p.rank)] == ["C", "A", "B"]


def test_ties_half_is_standard_elo():
    r = elo_ratings([Judgement("u", "A", "B", "A"), Judgement("u", "A", "B", "tie")], ties="half")["u"]
    e = expected_score(1016.0, 984.0)  # A is expected to score 0.5459 and scores 0.5
    assert r.players["A"].rating == pytest.approx(1016 + 32 * (0.5 - e))
    assert r.players["B"].rating == pytest.approx(984 - 32 * (0.5 - e))


def test_order_matters_and_winner_ties_go_to_first_appearance():
    a = [Judgement("u", "A", "B", "A"), Judgement("u", "B", "C", "B"), Judgement("u", "C", "A", "C")]
    b = list(reversed(a))
    ra, rb = elo_ratings(a)["u"].ratings(), elo_ratings(b)["u"].ratings()
    assert ra != rb  # the same results in another order give other ratings
    only_ties = elo_ratings([Judgement("u", "B", "A", "tie")])["u"]
    assert only_ties.winner == "B"  # equal ratings: first to appear wins


def test_players_start_even_without_games_and_k_start_options():
    r = elo_ratings([Judgement("u", "A", "B", "B")], players=["Z"], k=10, start=1500)["u"]
    assert r.players["Z"].rating == 1500 and r.players["B"].rating == 1505 and r.players["A"].rating == 1495


def test_read_judgements_validates_each_line(tmp_path):
    f = tmp_path / "j.jsonl"
    f.write_text('{"unit": 1, "a": "x", "b": "y", "winner": "y"}\n{"unit": 1, "a": "x", "b": "y", "tie": true}\n')
    js = read_judgements(f)
    assert js == [Judgement("1", "x", "y", "y"), Judgement("1", "x", "y", "tie")]
    f.write_text('{"unit": 1, "a": "x", "b": "y", "winner": "z"}\n')
    with pytest.raises(SchemaError) as exc:
        read_judgements(f)
    assert str(exc.value) == f"{f}:1: winner must be 'x', 'y' or 'tie', got 'z'"
    f.write_text('{"unit": 1, "a": "x", "b": "x", "winner": "x"}\n')
    with pytest.raises(SchemaError, match="cannot meet itself"):
        read_judgements(f)


def test_parse_verdict():
    assert parse_verdict('{"winner": "B", "reason": "more tuples"}') == ("B", "more tuples")
    assert parse_verdict('```json\n{"winner": "tie"}\n```')[0] == "tie"
    assert parse_verdict('Sure! {"winner" : "a"} because') == ("A", None)
    assert parse_verdict("B.")[0] == "B"
    assert parse_verdict("I cannot decide")[0] is None


def _annotations():
    """Real passages: the two annotation batches, plus a third annotator made from the first by
    dropping its last tuple of each passage (named as derived)."""
    by_source = read_fcm_csv(FIXTURES / "double-annotated.csv")
    sift = by_source.pop("SIFT_data_2024_03")
    first = {u: g for graphs in by_source.values() for u, g in graphs.items()}
    units = list(first)[:3]
    dropped = {}
    for u in units:
        g = first[u]
        d = Graph(u, g.text)
        for e in g.edges[:-1]:
            d.add_edge(Edge(g.label(e.source), g.label(e.target), e.type, e.direction))
        dropped[u] = d
    return {"batch1": {u: first[u] for u in units}, "sift": {u: sift[u] for u in units}, "dropped": dropped}


def more_tuples_judge(body):
    """A scripted judge: the graph with more tuples wins; equal counts tie."""
    prompt = last_user_message(body)
    a = prompt.split("Graph A (a JSON list of cause-effect tuples):", 1)[1].split("Graph B", 1)[0]
    b = prompt.split("Graph B (a JSON list of cause-effect tuples):", 1)[1].split("Judge by", 1)[0]
    na, nb = len(json.loads(a)), len(json.loads(b))
    winner = "A" if na > nb else "B" if nb > na else "tie"
    return json.dumps({"winner": winner, "reason": f"{na} vs {nb} tuples"})


def test_tournament_against_a_local_server(openai_server, tmp_path):
    ann = _annotations()
    openai_server.responder = more_tuples_judge
    openai_server.add_fault(Fault(status=429, retry_after="0"))
    client = ChatClient("judge", base_url=openai_server.base_url, cache=DiskCache(tmp_path / "c.sqlite"),
                        policy=RetryPolicy(3, 0.1, 1.0), sleep=lambda s: None, concurrency=2)
    js, counts = run_tournament(ann, client, rounds=1, seed=5)
    assert counts == {"asked": 9, "unreadable": 0}
    assert len(js) == 9 and client.usage.retries == 1
    # Every judgement follows the scripted rule, whatever order the graphs were shown in.
    for j in js:
        na, nb = len(ann[j.a][j.unit].edges), len(ann[j.b][j.unit].edges)
        assert j.winner == (j.a if na > nb else j.b if nb > na else "tie")
    # The passage enters the prompt as a JSON string.
    first_prompt = last_user_message(openai_server.requests[-1])
    assert re.search(r'Passage \(a JSON string\):\n"', first_prompt)
    ratings = elo_ratings(js)
    for uid, r in ratings.items():
        assert r.players["dropped"].rating < r.players["batch1"].rating
    # Asked again: every answer comes from the cache.
    sent = openai_server.chat_requests
    run_tournament(ann, client, rounds=1, seed=5)
    assert openai_server.chat_requests == sent


def test_schedule_is_seeded_and_swaps_positions():
    ann = {"a": {"u": Graph("u")}, "b": {"u": Graph("u")}, "c": {"u": Graph("u")}}
    s1 = tournament_schedule(ann, rounds=2, seed=1)
    assert s1 == tournament_schedule(ann, rounds=2, seed=1)
    assert len(s1) == 6 and {frozenset(x[1:3]) for x in s1} == {frozenset("ab"), frozenset("ac"), frozenset("bc")}
    assert len({x[3] for x in tournament_schedule(ann, rounds=10, seed=1)}) == 2
