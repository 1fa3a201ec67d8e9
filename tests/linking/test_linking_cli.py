"""``causalkg link build`` and ``causalkg link query`` through the CLI, in-process."""

from __future__ import annotations

import json


def test_build_then_current_then_refresh(cli, tmp_path, small_vocab, write_concepts):
    concepts = write_concepts(tmp_path / "vocab.jsonl", small_vocab)
    r = cli("link", "build", "--concepts", concepts, cwd=tmp_path)
    assert r.code == 0, r.err
    assert r.out.startswith(f"built concept index in {tmp_path / 'data' / 'linking'}: 420 surface forms of 228 concepts "
                            "(89 classes, 139 instances), model all-MiniLM-L6-v2, index flat (")
    assert "  reason: no concept index in" in r.out
    r = cli("link", "build", "--concepts", concepts)
    assert r.code == 0 and " is current: 420 surface forms" in r.out and "(--force rebuilds it)" in r.out
    r = cli("link", "build", "--concepts", concepts, "--force")
    assert r.code == 0 and r.out.startswith("built concept index") and "  reason: --force" in r.out


def test_build_without_a_vocabulary_says_what_to_run(cli, tmp_path):
    r = cli("link", "build", cwd=tmp_path)
    assert r.code == 1
    assert r.err.strip() == (f"error: concepts file not found: {tmp_path / 'data' / 'wikidata' / 'concepts.jsonl'} "
                             "(run causalkg corpus build, or pass --concepts FILE)")


def test_query_without_an_index_says_what_to_run(cli, tmp_path):
    r = cli("link", "query", "the tsunamis", cwd=tmp_path)
    assert r.code == 1
    assert r.err.strip() == f"error: no concept index in {tmp_path / 'data' / 'linking'} (run causalkg link build)"


def test_query_json(cli, project):
    r = cli("link", "query", "the tsunamis", "a wave of protests", "--top-k", "2", "--format", "json", cwd=project)
    assert r.code == 0, r.err
    rows = json.loads(r.out)
    assert [row["phrase"] for row in rows] == ["the tsunamis", "a wave of protests"]
    assert rows[0]["normalised"] == "tsunamis" and rows[0]["note"] is None
    top = rows[0]["candidates"][0]
    assert top == {"qid": "Q8070", "label": "tsunami", "surface": "tsunami", "score": 1.0, "kind": "class", "match": "exact"}
    assert rows[1]["candidates"][0]["qid"] == "Q273120" and len(rows[1]["candidates"]) == 2


def test_query_text_with_options(cli, project):
    r = cli("link", "query", "war", "--kind", "instance", "--top-k", "3", "--threshold", "0.5",
            "--instance-threshold", "0.5", cwd=project)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == '"war" -> "war"'
    assert lines[1].split() == ["rank", "qid", "label", "surface", "score", "kind", "match"]
    assert len(lines) == 5 and all(" instance " in line and " nearest" in line for line in lines[2:])
    r = cli("link", "query", "conflict", "--document-concept", "Q2487", "--top-k", "1", "--format", "json")
    assert json.loads(r.out)[0]["candidates"][0]["qid"] == "Q198"
    r = cli("link", "query", "war", "--under", "Q7944", "--under", "Q8070", "--format", "json", "--threshold", "0")
    cands = json.loads(r.out)[0]["candidates"]
    assert cands and {c["qid"] for c in cands} & {"Q7944", "Q8070"}
    # Another named earthquake is no answer for this one unless --instance-threshold lets it in.
    r = cli("link", "query", "the 1995 Chiapas earthquake", "--format", "json")
    assert {c["kind"] for c in json.loads(r.out)[0]["candidates"]} == {"class"}
    r = cli("link", "query", "the 1995 Chiapas earthquake", "--format", "json", "--instance-threshold", "0.6")
    assert json.loads(r.out)[0]["candidates"][0]["kind"] == "instance"


def test_query_answers_bad_phrases_clearly(cli, project):
    long_phrase = "x" * 10_000
    r = cli("link", "query", "", "   ", "!!!", long_phrase, "soaring food prices", cwd=project)
    assert r.code == 0, r.err
    blocks = r.out.split("\n\n")
    assert blocks[0] == '"" -> ""\n  (empty phrase: nothing to link)'
    assert blocks[1] == '"   " -> ""\n  (empty phrase: nothing to link)'
    assert blocks[2] == '"!!!" -> ""\n  (no letters or digits: nothing to link)'
    assert blocks[3].startswith('"' + "x" * 77 + '..." -> ')
    assert "(10000 characters: the model reads only the first 256 tokens" in blocks[3]
    assert blocks[4].rstrip("\n") == '"soaring food prices" -> "soaring food prices"\n  (no candidate at or above threshold 0.6)'


def test_query_errors(cli, project):
    r = cli("link", "query", "war", "--under", "war", cwd=project)
    assert r.code == 2 and r.err.strip() == "error: under: 'war' is not a Wikidata QID (Q followed by digits)"
    r = cli("link", "query", "war", "--threshold", "5")
    assert r.code == 2 and r.err.strip() == "error: --threshold must be a cosine similarity between -1 and 1, got 5.0"
    r = cli("link", "query", "war", "--instance-threshold", "2")
    assert r.code == 2 and r.err.strip().startswith("error: --instance-threshold must be a cosine similarity between -1 and 1")
    r = cli("link", "query", "war", "--top-k", "0")
    assert r.code == 2 and r.err.strip() == "error: k must be at least 1, got 0"
    r = cli("link", "query", "war", "--under", "Q1", "--kind", "class")
    assert r.code == 0 and "(no class concept in the index under Q1: nothing to link to)" in r.out
    r = cli("link", "query", "war", "--kind", "event")
    assert r.code == 2 and "invalid choice: 'event'" in r.err


def test_index_flag_and_a_stale_index(cli, project):
    r = cli("link", "build", "--index", "hnsw", cwd=project)
    assert r.code == 0 and "index hnsw" in r.out and "the config asks for {'type': 'hnsw'" in r.out
    r = cli("link", "query", "the tsunamis")
    assert r.code == 1 and r.err.startswith(f"error: the concept index in {project / 'data' / 'linking'} is stale: ")
    assert r.err.strip().endswith("(run causalkg link build)")
    r = cli("link", "query", "the tsunamis", "--set", "linking.index=hnsw", "--format", "json")
    assert r.code == 0 and json.loads(r.out)[0]["candidates"][0]["qid"] == "Q8070"


def test_model_flag(cli, project, other_model):
    r = cli("link", "build", "--model", other_model, cwd=project)
    assert r.code == 0 and f"model {other_model}, index flat" in r.out
    assert "  reason: the index was built with model 'all-MiniLM-L6-v2'" in r.out
    r = cli("link", "query", "war")
    assert r.code == 1 and "linking.model is 'all-MiniLM-L6-v2'" in r.err
