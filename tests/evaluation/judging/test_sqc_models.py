"""SQC with local models: the embedding matcher (the offline MiniLM) on real Causal News Corpus
sentences, and the NLI complementer on a tiny model built in the test (mechanics, not quality)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causalkg.core.cache import DiskCache
from causalkg.core.errors import ModelError
from causalkg.evaluation.judging.nli import NLIScorer, entailment_index
from causalkg.evaluation.judging.sqc import EmbeddingMatcher, NLIComplementer, Templates, Unit, fact_from_record, read_units, score_units

CNC = Path(__file__).resolve().parents[2] / "fixtures" / "sqc" / "cnc-train-sample.jsonl"
T = Templates()


@pytest.fixture(scope="module")
def matcher():
    return EmbeddingMatcher("all-MiniLM-L6-v2", threshold=0.8, device="cpu")


@pytest.fixture(scope="module")
def cnc_units():
    units, _ = read_units(units=CNC)
    return units


def with_predictions(units, transform):
    return [Unit(u.id, u.text, [fact_from_record(transform(f.raw), T) for f in u.gold], u.gold) for u in units]


@pytest.mark.slow
def test_embedding_matcher_on_real_sentences(matcher, cnc_units):
    assert len(cnc_units) == 24 and sum(len(u.gold) for u in cnc_units) == 33
    same = score_units(with_predictions(cnc_units, lambda f: f), matcher, None).summary["micro"]
    assert (same["matched"], same["precision"], same["recall"], same["sqc"]) == (33, 1.0, 1.0, 1.0)
    # Reversed edges say the opposite: the part-wise similarity never matches them.
    rev = score_units(with_predictions(cnc_units, lambda f: {"cause": f["effect"], "effect": f["cause"]}), matcher, None)
    assert rev.summary["micro"]["matched"] == 0
    # Span boundaries moved by one word (the cause loses its first, the effect its last word):
    # most still mean the same; exact string matching would credit none of them.
    def trim(f):
        c, e = f["cause"].split(), f["effect"].split()
        return {"cause": " ".join(c[1:]) if len(c) > 2 else f["cause"], "effect": " ".join(e[:-1]) if len(e) > 2 else f["effect"]}

    trimmed = score_units(with_predictions(cnc_units, trim), matcher, None).summary["micro"]
    assert 20 <= trimmed["matched"] < 33
    # Halving both spans loses the meaning: almost nothing matches.
    def half(f):
        c, e = f["cause"].split(), f["effect"].split()
        return {"cause": " ".join(c[: max(1, len(c) // 2)]), "effect": " ".join(e[: max(1, len(e) // 2)])}

    assert score_units(with_predictions(cnc_units, half), matcher, None).summary["micro"]["matched"] <= 3


def test_embedding_matcher_is_one_to_one_and_explains(matcher):
    u = Unit("u", None,
             [fact_from_record({"cause": "the earthquake", "effect": "the tsunami"}, T),
              fact_from_record({"cause": "an earthquake", "effect": "a tsunami"}, T),
              fact_from_record({"cause": "the tsunami", "effect": "the earthquake"}, T)],
             [fact_from_record({"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}}, T)])
    r = score_units([u], matcher, None).units[0]
    statuses = [p["status"] for p in r["predicted"]]
    assert statuses.count("matched") == 1 and r["counts"]["matched"] == 1
    other = next(p for p in r["predicted"][:2] if p["status"] == "unmatched")
    assert "went to P" in other["why"]
    assert "< 0.8" in r["predicted"][2]["why"]  # the reversed edge
    # Maximum matching: one prediction close to two gold facts goes where it leaves the other free.
    u2 = Unit("v", None, [fact_from_record({"text": "Heavy rain caused the river to flood."}, T),
                          fact_from_record({"text": "Heavy rain flooded the river."}, T)],
              [fact_from_record({"text": "Heavy rain flooded the river."}, T),
               fact_from_record({"text": "The river flooded because of heavy rain."}, T)])
    assert score_units([u2], matcher, None).units[0]["counts"]["matched"] == 2


def test_entailment_label_comes_from_the_config():
    assert entailment_index({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}) == 2
    assert entailment_index({"0": "entailment", "1": "neutral", "2": "contradiction"}) == 0
    assert entailment_index({0: "LABEL_entailment", 1: "LABEL_not_entailment"}) == 0
    with pytest.raises(ModelError, match=r"0=LABEL_0, 1=LABEL_1"):
        entailment_index({0: "LABEL_0", 1: "LABEL_1"})


@pytest.mark.slow
def test_nli_complementer_on_a_tiny_model(tmp_path, matcher, cnc_units):
    import torch

    from causalkg.testing.tiny_models import tiny_nli_model

    path = tiny_nli_model(tmp_path / "nli", labels=("ENTAILMENT", "NEUTRAL", "CONTRADICTION"))
    cache = DiskCache(tmp_path / "cache.sqlite")
    scorer = NLIScorer(str(path), device="cpu", batch_size=4, cache=cache)
    assert scorer.entail == 0
    premise, hyp = cnc_units[0].text, "the District Magistrate looks into our demands causes a boycott."
    got = scorer.entailment([premise], [hyp])[0]
    enc = scorer.tokenizer(premise, hyp, return_tensors="pt")
    with torch.inference_mode():
        want = float(torch.softmax(scorer.model(**enc).logits, -1)[0, 0])
    assert got == pytest.approx(want, abs=1e-5) and 0.0 < got < 1.0
    # A text longer than the model's input is scored in sentence-aligned chunks; the best chunk counts.
    long_text = " ".join(u.text for u in cnc_units) * 2
    chunks = scorer._chunks(long_text, hyp)
    assert len(chunks) > 1 and all(len(scorer.tokenizer(c, hyp)["input_ids"]) <= scorer.max_length for c in chunks)
    best = scorer.entailment([long_text], [hyp])[0]
    each = NLIScorer(str(path), device="cpu", batch_size=1).entailment(chunks, [hyp] * len(chunks))
    assert best == pytest.approx(max(each), abs=1e-5)
    hits = cache.hits
    assert scorer.entailment([long_text], [hyp])[0] == best and cache.hits == hits + 1  # from the cache
    # Through SQC: every gold fact is scored, tau is their 60th percentile, unmatched predictions get s.
    comp = NLIComplementer(str(path), device="cpu", batch_size=8)
    units = with_predictions(cnc_units[:6], lambda f: {"cause": f["effect"], "effect": f["cause"]})
    r = score_units(units, matcher, comp)
    import numpy as np

    gold = [g["entailment"] for u in r.units for g in u["gold"]]
    assert all(0.0 < s < 1.0 for s in gold)
    assert r.summary["tau"] == pytest.approx(np.percentile(gold, 60))
    for u in r.units:
        for p in u["predicted"]:
            assert p["status"] in ("credited", "unsupported")
            assert p["weight"] == (p["entailment"] if p["entailment"] > r.summary["tau"] else 0.0)


@pytest.mark.slow
def test_cli_sqc_with_embedding_matcher_and_fact_files(cli, in_tmp, cnc_units):
    from causalkg.testing.tiny_models import tiny_nli_model

    pred, gold, texts = in_tmp / "pred.jsonl", in_tmp / "gold.jsonl", in_tmp / "texts.jsonl"
    with open(pred, "w") as fp, open(gold, "w") as fg, open(texts, "w") as ft:
        for u in cnc_units[:8]:
            ft.write(json.dumps({"id": u.id, "text": u.text}) + "\n")
            for f in u.gold:
                fg.write(json.dumps({"unit": u.id, **f.raw}) + "\n")
                fp.write(json.dumps({"unit": u.id, "cause": f.raw["cause"], "effect": f.raw["effect"]}) + "\n")
                fp.write(json.dumps({"unit": u.id, "cause": f.raw["effect"], "effect": f.raw["cause"]}) + "\n")
    n = sum(len(u.gold) for u in cnc_units[:8])
    r = cli("eval", "sqc", "--predicted", pred, "--gold", gold, "--complementer", "none", "--format", "csv")
    assert r.code == 0, r.err
    lines = r.out.strip().splitlines()
    assert lines[0] == "scope,units,predicted,gold,matched,credited,weight,precision,recall,sqc"
    assert lines[1] == f"micro,8,{2 * n},{n},{n},0,0.0000,0.5000,1.0000,0.6667"
    nli = tiny_nli_model(in_tmp / "nli")
    r = cli("eval", "sqc", "--predicted", pred, "--gold", gold, "--texts", texts, "--complementer", f"nli:{nli}",
            "--tau", "0.0", "--format", "json")
    doc = json.loads(r.out)
    assert doc["tau"] == 0.0 and doc["micro"]["credited"] == n  # every reversed edge scores above 0
    r = cli("eval", "sqc", "--predicted", pred, "--gold", gold, "--complementer", f"nli:{nli}")
    assert r.code == 2 and "error: tau cannot be set: no gold fact could be scored against a source text" in r.err
