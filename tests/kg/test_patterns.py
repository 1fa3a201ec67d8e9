"""The patterns extractor (kg.extractors.patterns) on real sentences with known spans."""

from __future__ import annotations

import json

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError
from causalkg.kg.cues import longest_first
from causalkg.kg.extract import make_segmenter
from causalkg.kg.extractors import Document, create_extractor
from causalkg.kg.extractors.patterns import load_patterns

from tests.conftest import FIXTURES, REPO

FIX = FIXTURES / "extract"


@pytest.fixture(scope="module")
def run():
    cfg = load_config(search_cwd=False)
    seg = make_segmenter(cfg)
    ext = create_extractor("patterns", cfg, nlp=seg.nlp)

    def pairs(text):
        doc = Document("d", text, seg.split(text))
        recs = ext.extract([doc])
        for r in recs:
            for key in ("cause", "effect", "sentence"):
                assert text[r[key]["start"] : r[key]["end"]] == r[key]["text"]
        return [(r["cause"]["text"], r["effect"]["text"], r["pattern"].split(":")[0]) for r in recs]

    return pairs


def test_real_semeval_sentences(run):
    # SemEval-2010 Task 8 train, Cause-Effect: the gold nominals are inside the extracted spans.
    gold = {json.loads(l)["id"]: json.loads(l) for l in (FIX / "gold_sentences.jsonl").read_text().splitlines()}
    found = 0
    for rec in gold.values():
        if rec["source"] != "semeval" or not rec["causal"]:
            continue
        got = run(rec["text"])
        rel = rec["relations"][0]
        if any(rel["cause"]["text"] in c and rel["effect"]["text"] in e for c, e, _ in got):
            found += 1
        # Never the wrong way round when both nominals are found.
        assert not any(rel["cause"]["text"] in e and rel["effect"]["text"] in c and
                       rel["cause"]["text"] not in c for c, e, _ in got)
    assert found >= 1


def test_real_wikipedia_sentences(run):
    # From the 2004 Indian Ocean earthquake article (wiki_docs.jsonl).
    docs = [json.loads(l) for l in (FIX / "wiki_docs.jsonl").read_text().splitlines()]
    got = run(docs[2]["text"])
    assert ("The plight of the affected people and countries", "a worldwide humanitarian response",
            "forward") in got
    assert ("the distances involved",
            "the tsunami took anywhere from fifteen minutes to seven hours to reach the coastlines", "fronted") in got
    assert ("the tsunami", "officials hope that piracy in the region will drop off", "backward") in got
    # 1979 Machchhu dam failure: "X, resulting in its collapse" takes the clause before the comma.
    got = run(docs[1]["text"])
    assert ("thrice what the dam was designed for", "its collapse", "forward") in got


@pytest.mark.parametrize("sentence, expected", [
    # Constructions the issue names; invented sentences, each a minimal case.
    ("The earthquake caused a tsunami.", ("The earthquake", "a tsunami", "forward")),
    ("The tsunami was caused by the earthquake.", ("the earthquake", "The tsunami", "backward")),
    ("The strike led to fuel shortages.", ("The strike", "fuel shortages", "forward")),
    ("Flights were cancelled due to the ash cloud.", ("the ash cloud", "Flights were cancelled", "backward")),
    ("Because of the drought, the harvest failed.", ("the drought", "the harvest failed", "fronted")),
    ("The dam failed, causing a flood in Morbi.", ("The dam failed", "a flood in Morbi", "forward")),
    ("Heavy rain fell, which led to landslides.", ("Heavy rain fell", "landslides", "forward")),
    ("The riots resulted in 30 deaths.", ("The riots", "30 deaths", "forward")),
    ("Prices rose sharply in response to the embargo.", ("the embargo", "Prices rose sharply", "backward")),
])
def test_constructions(run, sentence, expected):
    assert expected in run(sentence)


def test_no_cue_no_pair_and_empty_sides_are_skipped(run):
    assert run("The bridge was built in 1932.") == []
    assert run("Caused by.") == []
    assert run("") == []


def test_patterns_file_errors(tmp_path):
    bad = tmp_path / "p.tsv"
    bad.write_text("sideways\tcaused\n")
    with pytest.raises(ConfigError, match=r"p.tsv:1: expected 'forward\|backward"):
        load_patterns(bad)
    with pytest.raises(ConfigError, match="patterns file not found"):
        load_patterns(tmp_path / "none.tsv")
    good = tmp_path / "g.tsv"
    good.write_text("# comment\nforward\tbrought|brings on\n")
    assert load_patterns(good) == [("forward", (("brought", "brings"), ("on",)))]
    cfg = load_config(search_cwd=False)
    ext = create_extractor(f"patterns:{good}", cfg)
    assert ext.describe()["patterns"] == str(good)


def test_constructions_are_matched_as_spacys_rule_matcher_matches_them():
    # The token trie against spaCy's Matcher (one LOWER pattern per line of patterns.tsv) and
    # filter_spans, on every sentence of the real pages and on CNC and SemEval sentences (the
    # gate's validation split): the same spans, each with its construction.
    from spacy.matcher import Matcher
    from spacy.util import filter_spans

    cfg = load_config(search_cwd=False)
    seg = make_segmenter(cfg)
    ext = create_extractor("patterns", cfg, nlp=seg.nlp)
    matcher = Matcher(seg.nlp.vocab)
    labels = []
    for i, (kind, tokens) in enumerate(ext.patterns):
        matcher.add(str(i), [[{"LOWER": {"IN": list(a)}} for a in tokens]])
        labels.append((kind, " ".join("|".join(a) for a in tokens)))
    texts = [s.text for line in (FIX / "wiki_docs.jsonl").read_text(encoding="utf-8").splitlines()
             for s in seg.split(json.loads(line)["text"])]
    texts += [json.loads(l)["text"] for l in (FIX / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines()]
    gate_val = REPO / "snapshots" / "gate-training" / "val.jsonl"  # CNC and SemEval sentences
    texts += [json.loads(l)["text"] for l in gate_val.read_text(encoding="utf-8").splitlines()]
    compared = found = 0
    for doc in seg.nlp.tokenizer.pipe(texts):
        ids = {(s, e): seg.nlp.vocab.strings[mid] for mid, s, e in matcher(doc)}
        want = [(sp.start, sp.end, labels[int(ids[(sp.start, sp.end)])])
                for sp in filter_spans([doc[s:e] for s, e in ids])]
        matches = {(s, e): v for s, e, v in ext.trie.find(doc)}
        got = [(s, e, matches[(s, e)]) for s, e in longest_first(matches)]
        assert got == want, doc.text
        compared += 1
        found += len(got)
    assert compared > 900 and found > 100, (compared, found)
