"""The LLM extractor against a real OpenAI-compatible server on 127.0.0.1 (causalkg.testing)."""

from __future__ import annotations

import json

import pytest

from causalkg.core.cache import DiskCache
from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.llm import ChatClient
from causalkg.core.retry import RetryPolicy
from causalkg.testing.openai_server import Fault, OpenAIServer, last_user_message
from causalkg.kg.extract import extract
from causalkg.kg.extractors import Document
from causalkg.kg.extractors.llm import LLMExtractor, load_prompt, locate, parse_answer, prompt_path
from causalkg.kg.sentences import Segmenter

from tests.conftest import FIXTURES

WIKI = FIXTURES / "extract" / "wiki_docs.jsonl"


def passage_of(body):
    """The passage the prompt carries (it is embedded as a JSON string on the last line)."""
    return json.loads(last_user_message(body).strip().splitlines()[-1])


def answer_from_passage(body):
    """A scripted model: relations read off the passage by simple rules, in the JSON asked for."""
    passage = passage_of(body)
    rels = []
    if "tsunami" in passage and "earthquake" in passage.lower():
        rels.append({"cause": "earthquake", "effect": "tsunami", "direction": "increase",
                     "evidence": passage.split(". ")[0]})
    if "damage" in passage:
        rels.append({"cause": "the waves", "effect": "damage", "direction": "unspecified"})
    rels.append({"cause": "a meteor strike", "effect": "the earthquake"})  # not in the text: dropped
    return json.dumps({"relations": rels})


def make_client(server, tmp_path, **kw):
    return ChatClient("test-model", base_url=server.base_url, timeout=kw.pop("timeout", 5.0),
                      policy=RetryPolicy(max_retries=3, base=0.01, cap=0.05), concurrency=4,
                      cache=DiskCache(tmp_path / "llm.sqlite"), sleep=lambda s: None, **kw)


def storm_doc():
    from causalkg.kg.extract import make_segmenter

    text = "The storm caused floods."
    return Document("d", text, make_segmenter(cfg()).split(text))


def cfg(**over):
    overrides = {"llm.base_url": "http://127.0.0.1:9/v1", "extract.llm.max_attempts": 3, "extract.gate.kind": "cues"}
    overrides.update(over)
    return load_config(search_cwd=False, overrides=overrides)


def test_relations_map_to_offsets_and_text_not_in_the_passage_is_dropped(tmp_path):
    with OpenAIServer(answer_from_passage) as server:
        client = make_client(server, tmp_path)
        ext = LLMExtractor.from_config(cfg(), client=client)
        out = tmp_path / "llm.jsonl"
        res = extract(cfg(), extractor="llm", input=WIKI, output=out, extractor_obj=ext)
        recs = [json.loads(l) for l in out.read_text().splitlines()]
        docs = {str(json.loads(l)["id"]): json.loads(l) for l in WIKI.read_text().splitlines()}
        assert recs and res.extractions == len(recs)
        for r in recs:
            text = docs[r["doc_id"]]["text"]
            for key in ("cause", "effect", "sentence"):
                assert text[r[key]["start"] : r[key]["end"]] == r[key]["text"]
            assert r["extractor"] == "llm" and r["model"] == "test-model"
            assert r["direction"] in ("increase", "unspecified")
            assert r["cause"]["text"].lower() != "a meteor strike"
        assert any(r["cause"]["text"].lower() == "earthquake" and r["effect"]["text"] == "tsunami"
                   and r["direction"] == "increase" for r in recs)
        stats = ext.stats()
        assert stats["not_in_text"] >= stats["passages"] > 0  # one invented relation per passage
        man = json.loads((tmp_path / "llm.manifest.json").read_text())
        assert any("not in the passage" in n for n in man["notes"])
        # The prompt carries the passage as a JSON string: quotes and newlines are escaped.
        body = server.requests[0]
        assert body["messages"][0]["role"] == "system"
        assert body["response_format"] == {"type": "json_object"}
        sent = server.chat_requests
        # A second run over the same input asks nothing: every answer is in the disk cache.
        ext2 = LLMExtractor.from_config(cfg(), client=make_client(server, tmp_path))
        extract(cfg(), extractor="llm", input=WIKI, output=tmp_path / "again.jsonl", extractor_obj=ext2)
        assert server.chat_requests == sent
        assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()


def test_malformed_json_is_asked_again_then_given_up(tmp_path):
    answers = iter(["Sure! Here are the relations: cause=storm", '[{"cause": "storm"}]',
                    '```json\n[{"cause": "The storm", "effect": "floods", "direction": "increase"}]\n```'])
    with OpenAIServer(lambda body: next(answers)) as server:
        ext = LLMExtractor.from_config(cfg(), client=make_client(server, tmp_path))
        recs = ext.extract([storm_doc()])
        assert [(r["cause"]["text"], r["effect"]["text"]) for r in recs] == [("The storm", "floods")]
        assert server.chat_requests == 3
        assert ext.stats()["invalid_answers"] == 2 and ext.stats()["passages_failed"] == 0
        assert [b.get("seed") for b in server.requests] == [None, None, None]

    with OpenAIServer(lambda body: "not json at all") as server:
        ext = LLMExtractor.from_config(cfg(**{"extract.llm.max_attempts": 2}), client=make_client(server, tmp_path / "b"))
        assert ext.extract([storm_doc()]) == []
        assert server.chat_requests == 2 and ext.stats()["passages_failed"] == 1


def test_429_with_retry_after_and_a_timeout_are_retried(tmp_path):
    waits = []
    with OpenAIServer(lambda body: '{"relations": [{"cause": "The storm", "effect": "floods"}]}') as server:
        # the slow answer takes twice the (generous) timeout: normal answers are never late on a loaded machine
        server.add_fault(Fault(status=429, retry_after=7), Fault(delay=4.0))
        client = make_client(server, tmp_path, timeout=2.0)
        client.sleep = waits.append
        ext = LLMExtractor.from_config(cfg(), client=client)
        recs = ext.extract([storm_doc()])
        assert len(recs) == 1
        assert server.chat_requests == 3  # 429, the slow answer the client gave up on, the answer
        assert waits[0] == pytest.approx(0.05)  # Retry-After 7 s, capped by the policy's cap
        assert client.usage.retries == 2


def test_a_server_that_keeps_failing_raises_naming_the_endpoint(tmp_path):
    with OpenAIServer() as server:
        server.add_fault(*[Fault(status=503)] * 10)
        ext = LLMExtractor.from_config(cfg(), client=make_client(server, tmp_path))
        with pytest.raises(SourceError, match=r"127\.0\.0\.1.*failed after 4 attempts"):
            ext.extract([storm_doc()])


def test_passages_group_consecutive_candidates_within_the_size_limit(tmp_path):
    seg = Segmenter()
    text = "The storm caused floods. Nothing here. The floods led to evacuations. Rain caused mud."
    doc = Document("d", text, seg.split(text))
    ext = LLMExtractor.from_config(cfg(**{"extract.llm.passage_chars": 200, "extract.candidates_only": False}),
                       client=ChatClient("m", base_url="http://127.0.0.1:9/v1"))
    assert [len(run) for run in ext.passages(doc)] == [4]
    ext.passage_chars = 50
    assert [len(run) for run in ext.passages(doc)] == [2, 2]
    ext.passage_chars = 40
    assert [len(run) for run in ext.passages(doc)] == [2, 1, 1]
    ext.candidates_only = True  # "Nothing here." is no candidate: runs break around it
    from causalkg.kg.cues import CueMatcher, load_lexicon

    seg.cue_matcher = CueMatcher(seg.nlp, load_lexicon())
    doc = Document("d", text, seg.split(text))
    ext.passage_chars = 1000
    assert [[s.text for s in run] for run in ext.passages(doc)] == [
        ["The storm caused floods."], ["The floods led to evacuations.", "Rain caused mud."]]


def test_answer_parsing_and_locating():
    assert parse_answer('[{"cause": "a", "effect": "b"}]') == [{"cause": "a", "effect": "b"}]
    assert parse_answer('{"relations": []}') == []
    for bad, why in [("nope", "not JSON"), ('{"x": 1}', "without 'relations'"),
                     ('[{"cause": "a"}]', "schema"), ('[{"cause": "a", "effect": "b", "direction": "up"}]', "schema")]:
        with pytest.raises(ValueError, match=why):
            parse_answer(bad)
    text = "Heavy  rain fell. The heavy rain caused floods."
    assert locate("heavy rain", text, near=20) == (22, 32)
    assert locate("Heavy rain", text) == (22, 32)  # case-insensitive before word-by-word
    assert locate("Heavy rain fell", text) == (0, 16)  # spacing differs: matched word by word
    assert locate("snow", text) is None and locate("  ", text) is None


def test_prompt_templates_come_from_files(tmp_path):
    system, user = load_prompt(prompt_path("extract_llm"))
    assert "JSON" in system and "$passage" in user.template
    bad = tmp_path / "p.txt"
    bad.write_text("no separator here $passage")
    with pytest.raises(ConfigError, match="=== user ==="):
        load_prompt(bad)
    bad.write_text("system\n=== user ===\nno placeholder")
    with pytest.raises(ConfigError, match=r"\$passage"):
        load_prompt(bad)
    with pytest.raises(ConfigError, match="prompt template not found"):
        prompt_path("missing_prompt")
