"""A judge that answers "Perhaps." or nothing: counted apart (unparsed / abstained), reported,
and not an error to retry (the answers are final), in ``eval precision`` on the command line."""

from __future__ import annotations

import json

from causalkg.testing.openai_server import last_user_message


def test_eval_precision_reports_unparsed_and_abstained_answers(cli, in_tmp, openai_server):
    kg = in_tmp / "kg.jsonl"
    kg.write_text("".join(json.dumps(x) + "\n" for x in [
        {"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}},
        {"cause": {"label": "war", "id": ["Q198"]}, "effect": {"label": "famine", "id": ["Q168247"]}},
        {"cause": {"label": "drought", "id": ["Q43059"]}, "effect": {"label": "wildfire", "id": ["Q169950"]}},
    ]), encoding="utf-8")

    def answer(body):
        prompt = last_user_message(body)
        return "Perhaps." if "tsunami" in prompt else "" if "wildfire" in prompt else "Yes."

    openai_server.responder = answer
    r = cli("eval", "precision", "--kg", kg, "--judge", "openai:test-model", "--tries", "1",
            "--set", f"llm.base_url={json.dumps(openai_server.base_url)}")
    assert r.code == 0, r.err
    root = in_tmp / "data" / "eval" / "precision"
    full = json.loads((root / "precision.json").read_text(encoding="utf-8"))["rows"][0]
    assert (full["pairs"], full["judged"], full["correct"], full["failed"], full["abstained"], full["unparsed"]) \
        == (3, 1, 1, 0, 2, 2)
    assert full["precision"] == 1.0  # abstentions are not counted as wrong answers
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["abstained"] == 2 and manifest["counts"]["failed"] == 0
    assert "2 answers were neither yes nor no (e.g. 'Perhaps.')" in r.out + r.err
