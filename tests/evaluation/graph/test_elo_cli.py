"""``causalkg eval elo``: from a judgements file, and as an LLM tournament against a real
OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json

from causalkg.testing.openai_server import last_user_message
from causalkg.evaluation.graph.graphs import Edge, Graph, write_graphs


def test_elo_from_judgements(cli, in_tmp):
    j = in_tmp / "j.jsonl"
    j.write_text("\n".join(json.dumps(x) for x in [
        {"unit": "p1", "a": "alice", "b": "llm", "winner": "alice"},
        {"unit": "p1", "a": "bob", "b": "alice", "winner": "tie"},
        {"unit": "p2", "a": "llm", "b": "bob", "tie": True},
    ]) + "\n")
    r = cli("eval", "elo", j, "--format", "csv")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "unit,player,rating,rank,games,wins,losses,ties,winner"
    assert lines[1] == "p1,alice,1016.0000,1,2,1,0,1,True"
    assert lines[2] == "p1,bob,1000.0000,2,1,0,0,1,False"
    assert lines[3] == "p1,llm,984.0000,3,1,0,1,0,False"
    assert len(lines) == 6  # csv is the table only; text adds the counts
    text = cli("eval", "elo", j)
    assert f"3 judgements (2 ties) over 2 units; written to {in_tmp / 'data/eval/elo'}" in text.out
    assert json.loads((in_tmp / "data/eval/elo/winners.json").read_text()) == {"p1": "alice", "p2": "llm"}
    r = cli("eval", "elo", j, "--ties", "half", "--no-write", "--format", "json")
    rows = json.loads(r.out)
    assert rows[0]["player"] == "alice" and rows[0]["rating"] < 1016.0  # the tie with bob costs alice


def test_elo_errors(cli, in_tmp):
    r = cli("eval", "elo")
    assert r.code == 2 and r.err.strip() == (
        "error: give either a judgements file or --graphs NAME=FILE ... for an LLM tournament")
    g = in_tmp / "g.jsonl"
    write_graphs(g, [Graph("1")])
    r = cli("eval", "elo", "--graphs", f"a={g}")
    assert r.code == 2 and r.err.strip() == (
        "error: a tournament needs at least two annotators (--graphs A=a.jsonl --graphs B=b.jsonl)")
    j = in_tmp / "j.jsonl"
    j.write_text('{"unit": "1", "a": "x"}\n')
    r = cli("eval", "elo", j)
    assert r.code == 1 and r.err.strip() == f"error: {j}:1: missing 'b'"


def test_elo_tournament_command(cli, in_tmp, openai_server):
    def judge(body):
        prompt = last_user_message(body)
        # Prefer the graph that names "stress" (shown first or second).
        a = prompt.split("Graph A", 1)[1].split("Graph B", 1)[0]
        return '{"winner": "A"}' if "stress" in a else '{"winner": "B"}'

    openai_server.responder = judge
    good, bad = Graph("1", "Stress causes burnout."), Graph("1", "Stress causes burnout.")
    good.add_edge(Edge("stress", "burnout"))
    bad.add_edge(Edge("burnout", "sleep"))
    write_graphs(in_tmp / "good.jsonl", [good])
    write_graphs(in_tmp / "bad.jsonl", [bad])
    r = cli("eval", "elo", "--graphs", f"good={in_tmp / 'good.jsonl'}", "--graphs", f"bad={in_tmp / 'bad.jsonl'}",
            "--judge", "openai:judge-model", "--rounds", "3", "--format", "csv",
            "--set", f"llm.base_url={openai_server.base_url}")
    assert r.code == 0, r.err
    assert r.out.splitlines()[1].startswith("1,good,") and r.out.splitlines()[1].endswith(",3,3,0,0,True")
    assert openai_server.chat_requests == 3 and openai_server.requests[0]["model"] == "judge-model"
    judgements = [json.loads(x) for x in (in_tmp / "data/eval/elo/judgements.jsonl").read_text().splitlines()]
    assert [x["winner"] for x in judgements] == ["good"] * 3
    manifest = json.loads((in_tmp / "data/eval/elo/manifest.json").read_text())
    assert manifest["counts"]["llm_usage"]["requests"] == 3
