"""Edge confidence (kg/confidence.py): the cue feature read from real linked mentions, the same on
disk as in memory, and the fit that weighs it."""

from __future__ import annotations

from pathlib import Path

from causalkg.core.contracts import KGMention
from causalkg.core.jsonl import read_jsonl
from causalkg.kg.confidence import FEATURES, WEIGHTS, confidence, features, fit
from causalkg.kg.mentionstore import MentionStore, mention_has_cue

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "kg"


def _mentions() -> list[KGMention]:
    return list(read_jsonl(FIX / "linked.jsonl", KGMention))


def test_the_cue_of_each_linked_mention_is_read_from_its_sentence():
    ms = _mentions()
    # one more, without a cue: a snapshot sentence that gives a manner of death, not its cause
    m0 = next(m for m in ms if m.source == "sentence")
    text = "The tribunal passed judgements ranging from acquittal to death by hanging."
    c, e = text.index("hanging"), text.index("death")
    ms.append(m0.model_copy(deep=True, update={"mention_id": "nocue000000000000000"}))
    ms[-1].sentence.text, ms[-1].sentence.start, ms[-1].sentence.end = text, 0, len(text)
    ms[-1].cause.start, ms[-1].cause.end, ms[-1].cause.text = c, c + 7, "hanging"
    ms[-1].effect.start, ms[-1].effect.end, ms[-1].effect.text = e, e + 5, "death"
    flags = [mention_has_cue(m) for m in ms]
    assert any(flags) and not flags[-1], flags
    for m, f in zip(ms, flags):
        if m.source != "sentence":
            assert f  # a structured mention states its relation by its place
    # the store's summary holds the same flag per edge as the mentions do
    with MentionStore(None) as store:
        for m in ms:
            store.add(m)
        for key in {(m.cause.qid, m.effect.qid) for m in ms}:
            want = any(mention_has_cue(m) for m in ms if (m.cause.qid, m.effect.qid) == key)
            assert store.summary([key]).cue is want


def test_a_cue_raises_the_confidence_and_the_fit_weighs_it():
    assert "cue" in FEATURES and WEIGHTS["cue"] > 0
    base = {"score": 0.6, "link": 1.0, "exact": 1.0, "support": 0.69, "structured": 0.0, "temporal": 0.0, "lifted": 0.0}
    assert confidence({**base, "cue": 1.0}) > 0.5 > confidence({**base, "cue": 0.0})
    # rows where only the cue tells supported from unsupported edges (mostly): the fit gives it a
    # positive weight, and none to a feature that does not vary
    rows, labels = [], []
    for i in range(40):
        cue = i % 2
        rows.append({**base, "cue": float(cue)})
        labels.append(cue if i % 10 > 1 else 1 - cue)
    w = fit(rows, labels)
    assert w["cue"] > 1.0 and w["link"] == 0.0


def test_features_of_an_edge_carry_its_cue():
    from causalkg.kg.aggregate import aggregate
    from causalkg.kg.inputs import load_concepts

    edges = aggregate(_mentions(), load_concepts(FIX / "concepts.jsonl"))
    by_id = {e.edge_id: e for e in edges}
    for e in edges:
        f = features(e, by_id)
        if e.mentions:
            assert f["cue"] == float(any(mention_has_cue(m) for m in e.mentions))
