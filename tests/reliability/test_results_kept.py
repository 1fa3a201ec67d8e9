"""A failed or partial evaluation never replaces the last complete results: ``eval precision``
against a real OpenAI-compatible server on 127.0.0.1 that cuts its answer bodies short writes
``precision.partial.json`` beside the good results, says so, and exits 1; the judge's answers are
cached by model and prompt, so a rerun against another URL asks only what it has not asked."""

from __future__ import annotations

import json

from causalkg.testing.openai_server import Fault, OpenAIServer

PAIRS = [  # real Wikidata labels and ids; the pairs are invented
    {"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}},
    {"cause": {"label": "war", "id": ["Q198"]}, "effect": {"label": "famine", "id": ["Q168247"]}},
    {"cause": {"label": "drought", "id": ["Q43059"]}, "effect": {"label": "wildfire", "id": ["Q169950"]}},
]


def write_kg(path, pairs):
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    return path


def precision(cli, kg, server, *extra):
    return cli("eval", "precision", "--kg", kg, "--judge", "openai:test-model", "--tries", "1", "--concurrency", "1",
               "--set", f"llm.base_url={server.base_url}", "--set", "llm.max_retries=0", *extra)


def test_a_judge_run_cut_short_keeps_the_last_complete_results(cli, in_tmp, openai_server):
    root = in_tmp / "data" / "eval" / "precision"
    openai_server.responder = lambda body: "Yes."
    kg = write_kg(in_tmp / "kg.jsonl", PAIRS[:2])
    r = precision(cli, kg, openai_server)
    assert r.code == 0, r.err
    good = {p.name: p.read_bytes() for p in [root / "precision.json", root / "precision.md", root / "manifest.json",
                                             root / "kg" / "judgements.jsonl"]}
    assert json.loads(good["precision.json"])["rows"][0]["precision"] == 1.0

    # the same KG grown by one pair, judged by a server that cuts every body in half
    write_kg(kg, PAIRS)
    with OpenAIServer(lambda body: "Yes.") as cutting:
        cutting.add_fault(*[Fault(truncate=True) for _ in range(5)])
        r = precision(cli, kg, cutting)
        assert cutting.chat_requests == 1  # the two pairs judged before come from the cache
    assert r.code == 1
    assert "1 of 3 pairs could not be judged" in r.err
    assert f"this run's partial result is in {root / 'precision.partial.json'}, the last complete one is kept" in r.err
    assert {p: (root / p if p != "judgements.jsonl" else root / "kg" / p).read_bytes() for p in good} == good
    partial = json.loads((root / "precision.partial.json").read_text(encoding="utf-8"))
    assert partial["complete"] is False and partial["failed"] == 1
    assert (partial["rows"][0]["judged"], partial["rows"][0]["failed"]) == (2, 1)
    assert [j["verdict"] for j in partial["judgements"]] == [True, True, None]

    # a rerun against a third URL serving the same model asks only the pair it lacks, and the
    # complete result replaces the old one and the partial file
    with OpenAIServer(lambda body: "No.") as mirror:
        r = precision(cli, kg, mirror)
        assert mirror.chat_requests == 1
    assert r.code == 0, r.err
    rows = json.loads((root / "precision.json").read_text(encoding="utf-8"))["rows"]
    assert (rows[0]["pairs"], rows[0]["judged"], rows[0]["correct"]) == (3, 3, 2)
    assert not (root / "precision.partial.json").exists()


def test_a_first_run_that_fails_writes_only_the_partial_file(cli, in_tmp, openai_server):
    root = in_tmp / "data" / "eval" / "precision"
    openai_server.add_fault(*[Fault(truncate=True) for _ in range(5)])
    r = precision(cli, write_kg(in_tmp / "kg.jsonl", PAIRS[:1]), openai_server)
    assert r.code == 1 and f"this run's partial result is in {root / 'precision.partial.json'}" in r.err
    assert "the last complete one is kept" not in r.err
    assert sorted(p.name for p in root.iterdir()) == ["precision.partial.json"]
