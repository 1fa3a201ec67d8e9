"""Gold data readers and QA examples (kg.qa_data), on real rows of CNC and SemEval train."""

from __future__ import annotations

import json

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError, SchemaError
from causalkg.kg import qa_data

from tests.conftest import FIXTURES, REPO

FIX = FIXTURES / "extract"


def test_cnc_tags_that_interleave_become_offsets():
    tagged = ("Workers <ARG1>struck</ARG1> <SIG0>in order <ARG0>to</SIG0> press for higher wages</ARG0> .")
    text, spans = qa_data.parse_cnc_tagged(tagged)
    assert text == "Workers struck in order to press for higher wages ."
    assert spans["ARG1"]["text"] == "struck"
    assert spans["SIG0"]["text"] == "in order to"
    assert spans["ARG0"]["text"] == "to press for higher wages"
    for s in spans.values():
        assert text[s["start"] : s["end"]] == s["text"]
    with pytest.raises(SchemaError, match="never closed"):
        qa_data.parse_cnc_tagged("a <ARG0>b")
    with pytest.raises(SchemaError, match="closes nothing"):
        qa_data.parse_cnc_tagged("a </ARG0>b")


def test_read_cnc_real_rows():
    recs = qa_data.read_cnc(FIX / "cnc_train_subtask1_sample.csv", FIX / "cnc_train_subtask2_sample.csv")
    causal = [r for r in recs if r["causal"]]
    non_causal = [r for r in recs if not r["causal"]]
    assert len(causal) == 5 and len(non_causal) == 3
    assert max(len(r["relations"]) for r in causal) == 3  # one sentence, three annotated relations
    for r in causal:
        for rel in r["relations"]:
            for role in ("cause", "effect"):
                s = rel[role]
                assert r["text"][s["start"] : s["end"]] == s["text"] and s["text"]
    first = next(r for r in recs if r["id"] == "cnc:train_05_299:259")
    assert first["relations"][0]["signal"]["text"] == "to"
    assert first["relations"][0]["cause"]["text"] == "to foil the ‘ Million March '"
    assert all(r["relations"] == [] for r in non_causal)


def test_read_semeval_real_blocks():
    recs = qa_data.read_semeval(FIX / "semeval_train_sample.txt")
    assert len(recs) == 6  # Component-Whole is left out
    ce = [r for r in recs if r["causal"]]
    assert len(ce) == 4
    seven = next(r for r in recs if r["id"] == "semeval:7")  # Cause-Effect(e2,e1)
    rel = seven["relations"][0]
    assert rel["cause"]["text"] == "infection" and rel["effect"]["text"] == "inflammation"
    assert all(len(r["entities"]) == 2 for r in recs)
    assert all(r["relations"] == [] for r in recs if not r["causal"])


def test_the_raw_readers_give_every_sentence_that_the_gold_readers_filter():
    """One reader a file for every training set built from it (QA, gate, verifier)."""
    every = list(qa_data.read_semeval_sentences(FIX / "semeval_train_sample.txt"))
    assert len(every) == 7 and "Component-Whole(e2,e1)" in {r["label"] for r in every}
    gold = {r["id"]: r for r in qa_data.read_semeval(FIX / "semeval_train_sample.txt")}
    for r in every:
        for e in ("e1", "e2"):
            start, end = r["spans"][e]
            assert r["text"][start:end].strip() and "<e" not in r["text"]
        if f"semeval:{r['sid']}" in gold:
            assert gold[f"semeval:{r['sid']}"]["text"] == r["text"]
    s1 = qa_data.read_cnc_subtask1(FIX / "cnc_train_subtask1_sample.csv")
    assert {r["label"] for r in s1} == {"0", "1"} and all(r["group"] == r["id"].rsplit(":", 1)[0] for r in s1)
    non_causal = [r for r in qa_data.read_cnc(FIX / "cnc_train_subtask1_sample.csv",
                                              FIX / "cnc_train_subtask2_sample.csv") if not r["causal"]]
    assert [r["id"] for r in non_causal] == [r["id"] for r in s1 if r["label"] == "0"]


def test_split_is_deterministic_and_by_group():
    recs = [{"group": f"g{i % 50}", "id": str(i)} for i in range(500)]
    tr1, va1 = qa_data.split_records(recs, 0.2)
    tr2, va2 = qa_data.split_records(recs, 0.2)
    assert [r["id"] for r in va1] == [r["id"] for r in va2]
    assert {r["group"] for r in tr1}.isdisjoint({r["group"] for r in va1})
    assert 0 < len(va1) < len(recs)


def test_shipped_snapshot_matches_its_stats_and_slices():
    snap = REPO / "snapshots" / "qa-training"
    stats = json.loads((snap / "stats.json").read_text())
    from causalkg.core.manifest import file_sha256

    for name in ("train", "val"):
        assert file_sha256(snap / f"{name}.jsonl") == stats[name]["sha256"]
    val = list(qa_data.read_gold(snap / "val.jsonl"))  # read_gold checks every offset
    assert len(val) == stats["val"]["sentences"]
    train_groups = {json.loads(l)["group"] for l in (snap / "train.jsonl").read_text().splitlines()}
    assert train_groups.isdisjoint({r["group"] for r in val})


def test_examples_use_the_configured_templates():
    cfg = load_config(search_cwd=False)
    t = qa_data.QuestionTemplates.from_config(cfg["extract"]["qa"])
    gold = list(qa_data.read_gold(FIX / "gold_sentences.jsonl"))
    ex = qa_data.qa_examples(gold, t, seed=1)
    assert ex == qa_data.qa_examples(gold, t, seed=1)
    with_answer = [e for e in ex if e.answer_start is not None]
    without = [e for e in ex if e.answer_start is None]
    assert with_answer and without
    for e in with_answer:
        assert e.context[e.answer_start : e.answer_start + len(e.answer_text)] == e.answer_text
    kinds = {e.kind for e in ex}
    assert kinds == {"cause", "effect", "anchored-cause", "anchored-effect", "reversed-cause", "reversed-effect"}
    # Anchored questions asked about the wrong side of a relation have no answer.
    reversed_ = [e for e in ex if e.kind.startswith("reversed")]
    assert reversed_ and all(e.answer_start is None for e in reversed_)
    assert any(e.question == "What is the cause?" for e in ex)
    assert any(e.question.startswith("What did ") and e.question.endswith(" lead to?") for e in ex)
    # Non-causal sentences only give no-answer questions.
    neg = qa_data.qa_examples([r for r in gold if not r["causal"]], t)
    assert neg and all(e.answer_start is None and e.answer_text == "" for e in neg)
    # SemEval "Other" sentences are asked about their marked nominals.
    assert any("{concept}" not in e.question and e.kind.startswith("anchored") for e in neg)


def test_bad_templates_fail_with_the_key_named():
    with pytest.raises(ConfigError, match="unknown placeholder"):
        qa_data.QuestionTemplates.from_config({"questions_anchored": [{"template": "What caused {event}?", "answer": "cause"}]})
    with pytest.raises(ConfigError, match="answer must be cause or effect"):
        qa_data.QuestionTemplates.from_config({"questions_anchored": [{"template": "{concept}?", "answer": "both"}]})
    with pytest.raises(ConfigError, match="question_effect"):
        qa_data.QuestionTemplates.from_config({"question_effect": "What did {effect} do?"})


def test_reversed_questions_skip_chains():
    # Invented edge case: a chain "A caused B, which caused C" in one sentence. "What did B
    # cause?" is answered by C, so it is no reversed (no-answer) question; "What caused A?" is.
    text = "The storm caused floods, which caused evacuations."
    a, b, c = (qa_data.span(text, text.index(w), text.index(w) + len(w)) for w in ("The storm", "floods", "evacuations"))
    rec = {"id": "x", "text": text, "causal": True,
           "relations": [{"cause": a, "effect": b, "signal": None}, {"cause": b, "effect": c, "signal": None}]}
    t = qa_data.QuestionTemplates.from_config(load_config(search_cwd=False)["extract"]["qa"])
    ex = qa_data.qa_examples([rec], t)
    rev = {e.question for e in ex if e.kind.startswith("reversed")}
    assert "What caused The storm?" in rev and "What did evacuations cause?" in rev
    assert "What did floods cause?" not in rev and "What caused floods?" not in rev
    answered = {(e.question, e.answer_text) for e in ex if e.answer_start is not None}
    assert ("What did floods cause?", "evacuations") in answered


def test_write_splits_writes_each_split_and_returns_its_counts_and_checksum(tmp_path):
    import hashlib

    recs = qa_data.read_semeval(FIX / "semeval_train_sample.txt")
    stats = qa_data.write_splits(tmp_path / "snap", {"train": recs[:4], "val": recs[4:]},
                                 lambda rs: {"sentences": len(rs), "causal": sum(r["causal"] for r in rs)})
    assert list(stats) == ["train", "val"] and list(stats["train"]) == ["sentences", "causal", "sha256"]
    assert stats["train"]["sentences"] == 4 and stats["val"]["sentences"] == 2
    for name, part in (("train", recs[:4]), ("val", recs[4:])):
        data = (tmp_path / "snap" / f"{name}.jsonl").read_bytes()
        assert [json.loads(line) for line in data.splitlines()] == part
        assert stats[name]["sha256"] == hashlib.sha256(data).hexdigest()
