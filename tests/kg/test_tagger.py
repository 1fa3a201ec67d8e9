"""The span tagger (kg.tagger) and its extractor: BIO labels of the gold relations, decoding of
tag probabilities into relations, one pass per relation, and training and extraction with a tiny
model trained for a few steps (mechanics; the benchmark measures quality)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import causalkg as ck

from causalkg.core.config import load_config
from causalkg.core.contracts import Extraction
from causalkg.core.errors import ModelError
from causalkg.testing.tiny_models import tiny_qa_model
from causalkg.kg import qa_data
from causalkg.kg.extract import extract
from causalkg.kg.extractors import create_extractor
from causalkg.kg.tagger import LABELS, SpanTagger, decode_pass, ordered_relations, tag_examples, token_labels, train_tagger

from tests.conftest import FIXTURES

FIX = FIXTURES / "extract"


@pytest.fixture(scope="module")
def gold():
    return list(qa_data.read_gold(FIX / "gold_sentences.jsonl"))


def test_examples_are_one_pass_per_relation_in_reading_order_then_an_empty_pass(gold):
    two = next(r for r in gold if len(r["relations"]) == 2)
    rels = ordered_relations(two)
    firsts = [min(x[k]["start"] for k in ("cause", "effect", "signal") if x.get(k)) for x in rels]
    assert firsts == sorted(firsts)
    ex = tag_examples([two], max_relations=4)
    assert [e.pass_index for e in ex] == [0, 1, 2] and ex[2].spans == ()
    assert {k for k, _, _ in ex[0].spans} >= {"C", "E"}
    assert len(tag_examples([two], max_relations=2)) == 2  # no empty pass past the limit
    none = next(r for r in gold if not r["causal"])
    assert [(e.pass_index, e.spans) for e in tag_examples([none], 4)] == [(0, ())]


def test_token_labels_are_bio_over_the_sentence_segment_only():
    # word pieces: [CLS] first relation [SEP] rain caused floods [SEP]
    offsets = [(0, 0), (0, 5), (6, 14), (0, 0), (0, 4), (5, 11), (12, 18), (0, 0)]
    seq = [None, 0, 0, None, 1, 1, 1, None]
    labels = token_labels(offsets, seq, [("C", 0, 4), ("S", 5, 11), ("E", 12, 18)])
    names = [LABELS[i] if i >= 0 else None for i in labels]
    assert names == [None, None, None, None, "B-C", "B-S", "B-E", None]
    labels = token_labels([(0, 4), (5, 11), (12, 18)], [1, 1, 1], [("C", 0, 11)])
    assert [LABELS[i] for i in labels] == ["B-C", "I-C", "O"]


def _probs(tags):
    p = np.full((len(tags), len(LABELS)), 0.01)
    for i, t in enumerate(tags):
        p[i, LABELS.index(t)] = 0.9
    return p


def test_decoding_widens_to_words_and_picks_cause_and_effect():
    text = "Heavy rain caused floods in the valley."
    # "Heavy" "rain" "caused" "flood" "##s" "in" "the" "valley" "."
    offsets = [(0, 5), (6, 10), (11, 17), (18, 23), (23, 24), (25, 27), (28, 31), (32, 38), (38, 39)]
    runs = decode_pass(text, offsets, [1] * 9, _probs(["B-C", "I-C", "B-S", "B-E", "O", "I-E", "I-E", "I-E", "O"]))
    assert [text[s.start:s.end] for s in runs["C"]] == ["Heavy rain"]
    assert [text[s.start:s.end] for s in runs["S"]] == ["caused"]
    # "flood" is widened to "floods"; the O inside ends the first effect run there.
    assert [text[s.start:s.end] for s in runs["E"]] == ["floods", "in the valley"]


class _Scripted(SpanTagger):
    """A tagger whose tag probabilities are scripted per pass (no model)."""

    def __init__(self, script):
        self.script, self.max_relations, self.calls, self.features = script, 4, 0, 0
        self.passes = []

    def _probs(self, prompts, texts):
        self.passes.append(prompts[0])
        out = []
        for text in texts:
            words = text.split()
            offsets, pos = [], 0
            for w in words:
                pos = text.index(w, pos)
                offsets.append((pos, pos + len(w)))
                pos += len(w)
            tags = self.script.get(prompts[0], ["O"] * len(words))
            out.append((offsets, [1] * len(words), _probs(tags)))
        return out


def test_passes_continue_while_relations_are_found_and_stop_at_the_first_empty_one():
    text = "riots caused arrests which caused protests"
    tagger = _Scripted({
        "first relation": ["B-C", "B-S", "B-E", "O", "O", "O"],
        "second relation": ["O", "O", "B-C", "O", "B-S", "B-E"],
    })
    rels = tagger.relations([text])[0]
    assert [(text[r.cause.start:r.cause.end], text[r.effect.start:r.effect.end], r.pass_index) for r in rels] == [
        ("riots", "arrests", 0), ("arrests", "protests", 1)]
    assert tagger.passes == ["first relation", "second relation", "third relation"]


@pytest.fixture(scope="module")
def tiny_tagger(tmp_path_factory, gold):
    root = tmp_path_factory.mktemp("tagger")
    base = tiny_qa_model(root / "base", seed=2)
    data = root / "data"
    data.mkdir()
    cnc = [r for r in gold if r["source"] == "cnc"]
    train, val = cnc[:6] + cnc[8:10], cnc[6:8] + cnc[10:]
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train), encoding="utf-8")
    (data / "val.jsonl").write_text("".join(json.dumps(r) + "\n" for r in val), encoding="utf-8")
    cfg = load_config(search_cwd=False, overrides={
        "extract.tagger.train.data": str(data), "extract.tagger.train.steps": 4, "extract.tagger.train.batch_size": 4,
        "extract.tagger.train.eval_every": 2, "extract.tagger.train.frozen_layers": 0, "extract.device": "cpu",
        "extract.tagger.train.learning_rate": 0.001})
    res = ck.train_tagger(output=root / "causal-tagger", base_model=str(base), cfg=cfg)  # the Python API
    return root / "causal-tagger", cfg, res, base


def test_training_saves_a_model_with_its_validation_and_skips_when_current(tiny_tagger):
    folder, cfg, res, base = tiny_tagger
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["validation"]["selected_step"] in (2, 4)
    assert [h["step"] for h in manifest["validation"]["history"]] == [2, 4]
    assert res.validation["sentences"] == 4 and res.validation["relations"] == 4
    again = train_tagger(cfg, output=folder, base_model=str(base), if_missing=True)
    assert again.skipped and "current" in again.reason


def test_the_tagger_extractor_writes_valid_records_through_the_stage(tiny_tagger, tmp_path):
    folder, _, _, _ = tiny_tagger
    inp = tmp_path / "in.jsonl"
    texts = ["Heavy rain caused floods in the valley, which forced thousands to leave.",
             "The museum opens at nine."]
    inp.write_text("".join(json.dumps({"id": f"s{i}", "text": t}) + "\n" for i, t in enumerate(texts)),
                   encoding="utf-8")
    cfg = load_config(search_cwd=False, overrides={"extract.device": "cpu", "extract.candidates_only": False})
    res = extract(cfg, extractor=f"tagger:{folder}", input=inp, output=tmp_path / "out.jsonl")
    assert res.counts["sentences"] == 2 and res.counts["sentences_read"] == 2
    recs = [json.loads(l) for l in (tmp_path / "out.jsonl").read_text().splitlines()]
    for r in recs:
        Extraction.model_validate(r)
        text = texts[int(r["doc_id"][1:])]
        for key in ("cause", "effect"):
            assert text[r[key]["start"]:r[key]["end"]] == r[key]["text"]
        assert r["extractor"] == "tagger" and r["relation_index"] >= 0
    ext = create_extractor(f"tagger:{folder}", cfg)
    assert ext.describe()["max_relations"] == 4


def test_a_missing_tagger_model_is_one_clear_error(tmp_path):
    cfg = load_config(search_cwd=False, overrides={"extract.tagger.model": "models/none-here"})
    with pytest.raises(ModelError, match="train-tagger"):
        create_extractor("tagger", cfg)


def test_gold_tags_decode_back_to_the_gold_pairs(gold):
    """Labels of the real tokenizer, decoded as if the model were certain of them, give every gold
    pair back: the labelling and the decoding agree (pair F1 1.0 on the fixture's CNC sentences)."""
    from transformers import AutoTokenizer

    from causalkg.kg.span_metrics import PairMatch
    from causalkg.kg.tagger import pass_prompt, relation_of
    from causalkg.testing.tiny_models import minilm_dir

    tok = AutoTokenizer.from_pretrained(minilm_dir())
    m = PairMatch()
    for rec in (r for r in gold if r["source"] == "cnc"):
        found = []
        for ex in tag_examples([rec], 4):
            enc = tok(pass_prompt(ex.pass_index), ex.text, return_offsets_mapping=True)
            labels = token_labels(enc["offset_mapping"], enc.sequence_ids(), ex.spans)
            probs = np.full((len(labels), len(LABELS)), 0.01)
            for i, label in enumerate(labels):
                probs[i, max(label, 0)] = 0.9
            rel = relation_of(decode_pass(ex.text, enc["offset_mapping"], enc.sequence_ids(), probs), ex.pass_index)
            assert (rel is None) == (not ex.spans)
            if rel is not None:
                found.append((ex.text[rel.cause.start:rel.cause.end], ex.text[rel.effect.start:rel.effect.end]))
        m.add(found, [(g["cause"]["text"], g["effect"]["text"]) for g in rec["relations"]])
    d = m.as_dict()
    assert d["gold"] == 12 and d["strict_f1"] == 1.0


def test_ck_train_tagger_returns_a_result_that_renders_itself(tiny_tagger):
    folder, cfg, res, base = tiny_tagger
    v, p = res.validation, res.validation["pair"]
    assert type(res) is ck.TaggerTraining and res.output == folder and res.steps == 4
    assert str(res).splitlines() == [
        f"trained 4 steps in {res.seconds:.0f} s; saved to {folder}",
        f"validation (4 sentences, 4 relations): pair P {p['precision']:.3f} R {p['recall']:.3f} F1 {p['f1']:.3f} "
        f"(checkpoint of step {v['selected_step']})"]
    assert res.to_table("md") == str(res) and json.loads(res.to_table("json"))["steps"] == 4
    again = ck.train_tagger(output=folder, base_model=str(base), if_missing=True, cfg=cfg)
    assert again.skipped and str(again) == f"nothing to do: {again.reason}"
