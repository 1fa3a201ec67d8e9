"""Sentence splitting, sections, cue matching and the candidate filter (kg.sentences, kg.cues)."""

from __future__ import annotations

import json

import pytest

from causalkg.core.errors import ConfigError
from causalkg.kg import cues
from causalkg.kg.sentences import MentionFinder, SectionIndex, Segmenter, concept_labels

from tests.conftest import FIXTURES

FIX = FIXTURES / "extract"


@pytest.fixture(scope="module")
def segmenter():
    seg = Segmenter()
    seg.cue_matcher = cues.CueMatcher(seg.nlp, cues.load_lexicon())
    return seg


def wiki_docs():
    return [json.loads(line) for line in (FIX / "wiki_docs.jsonl").read_text(encoding="utf-8").splitlines()]


def test_offsets_slice_the_document_and_sections_come_from_spans(segmenter):
    doc = wiki_docs()[2]  # 2004 Indian Ocean earthquake: lead + three sections
    sents = segmenter.split(doc["text"], doc["sections"], concept_labels(doc))
    assert len(sents) > 50
    for s in sents:
        assert doc["text"][s.start : s.end] == s.text
        assert s.text == s.text.strip()
    starts = [s.start for s in sents]
    assert starts == sorted(starts)
    sections = {s.section for s in sents}
    assert sections == {None, "Tsunami", "Economic impacts", "Environmental impact"}
    tsunami = next(sec for sec in doc["sections"] if sec["heading"] == "Tsunami")
    for s in sents:
        if tsunami["start"] <= s.start < tsunami["end"]:
            assert s.section == "Tsunami"
    # A sentence never crosses a line break (headings are lines of their own).
    assert all("\n" not in s.text for s in sents)


def test_candidates_have_a_cue_or_mention_the_document_concept(segmenter):
    doc = wiki_docs()[2]
    doc = {**doc, "document_concept": {**doc["document_concept"], "labels": ["Indian Ocean earthquake"]}}
    sents = segmenter.split(doc["text"], doc["sections"], concept_labels(doc))
    cands = [s for s in sents if s.is_candidate]
    assert 0 < len(cands) < len(sents)
    for s in cands:
        assert s.cues or s.concept_mentions
    for s in sents:
        for c in s.cues:
            assert doc["text"][c.start : c.end] == c.text
        for m in s.mentions:
            assert doc["text"][m.start : m.end].lower() == m.label.lower()
    # "earthquake" and "tsunami" are event concepts of the page: mentions, but not the document concept.
    assert any(m.qid == "Q8070" and not m.document_concept for s in sents for m in s.mentions)
    assert any(m.document_concept for s in sents for m in s.mentions)


def test_real_cnc_sentences_with_a_gold_signal_are_found_by_their_cue(segmenter):
    gold = [json.loads(l) for l in (FIX / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines()]
    lexicon = {c.text for c in cues.load_lexicon()}
    checked = 0
    for rec in gold:
        for rel in rec["relations"]:
            sig = rel.get("signal")
            if sig and sig["text"].lower() in lexicon:
                sents = segmenter.split(rec["text"])
                found = [c for s in sents for c in s.cues]
                assert any(c.start <= sig["start"] and sig["end"] <= c.end or c.start == sig["start"] for c in found), rec["id"]
                checked += 1
    assert checked >= 1


def _spacy_matcher_cues(nlp, lexicon, doc):
    """The reference: spaCy's rule Matcher, one LOWER pattern per cue, then filter_spans."""
    from spacy.matcher import Matcher
    from spacy.util import filter_spans

    matcher = Matcher(nlp.vocab)
    for i, cue in enumerate(lexicon):
        matcher.add(f"CUE{i}", [[{"LOWER": {"IN": list(alts)}} for alts in cue.tokens]])
    spans = filter_spans([doc[s:e] for _, s, e in matcher(doc)])
    return [(sp.start_char, sp.end_char, sp.text) for sp in spans]


def test_cue_matches_are_those_of_spacys_rule_matcher(segmenter):
    # The trie matcher against spaCy's Matcher + filter_spans on real pages and CNC sentences,
    # and on invented overlaps: a cue inside a longer one ("due to" / "due to the lack of"),
    # two cues sharing a token ("as a result" / "result of the war": the longer wins, the other
    # is dropped though its first token is free), alternatives in a position.
    nlp = segmenter.nlp
    lexicon = cues.load_lexicon()
    extra = [cues.parse_cue(line, "test") for line in
             ["due to the lack of", "as a result", "result of the war", "lead|leads|led to the",
              "of the war"]]
    texts = [d["text"] for d in wiki_docs()]
    texts += [json.loads(l)["text"] for l in (FIX / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines()]
    texts += ["Due to the lack of rain, and due to the heat, crops failed as a result of the war.",
              "It LED TO THE famine, which led to the war; as a result of the war, prices rose.",
              "", "due", "as a result"]
    compared = matched = 0
    for lex in (lexicon, lexicon + extra, extra):
        matcher = cues.CueMatcher(nlp, lex)
        for doc in nlp.pipe(texts):
            got = [(c.start, c.end, c.text) for c in matcher.find(doc)]
            assert got == _spacy_matcher_cues(nlp, lex, doc), doc.text[:80]
            compared += 1
            matched += len(got)
    assert compared == 3 * len(texts) and matched > 100
    # Offsets are shifted by the chunk's offset into the document.
    doc = nlp("Floods were caused by the rain.")
    assert [(c.start, c.text) for c in cues.CueMatcher(nlp, lexicon).find(doc, 100)] == [(112, "caused")]


def test_empty_and_blank_documents_have_no_sentences(segmenter):
    assert segmenter.split("") == []
    assert segmenter.split(" \n\n \t") == []


def test_non_english_text_keeps_offsets(segmenter):
    # Invented edge case: German, Greek and Japanese text with multi-byte characters.
    text = "Das Erdbeben verursachte einen Tsunami. Ο σεισμός προκάλεσε τσουνάμι.\n地震が津波を引き起こした。"
    sents = segmenter.split(text)
    assert sents and all(text[s.start : s.end] == s.text for s in sents)
    assert "".join(s.text for s in sents).replace(" ", "") == text.replace(" ", "").replace("\n", "")


def test_very_long_sentences_are_cut_at_spaces():
    # Invented edge case: a 30,000-character "sentence" without punctuation (a list, say).
    seg = Segmenter(max_sentence_chars=1000)
    text = " ".join(f"item{i}" for i in range(4000))
    sents = seg.split(text)
    assert len(sents) >= 30
    assert all(len(s.text) <= 1000 for s in sents)
    assert all(text[s.start : s.end] == s.text for s in sents)
    assert " ".join(s.text for s in sents) == text


def test_texts_over_spacy_limit_are_chunked():
    # Invented edge case: one paragraph of 1,100,000 characters (spaCy refuses over 1,000,000).
    seg = Segmenter()
    unit = "The flood damaged the bridge. "
    text = unit * (1_100_000 // len(unit) + 1)
    assert len(text) > 1_000_000
    sents = seg.split(text)
    assert len(sents) >= len(text) // len(unit) - 40  # a few sentences cut at chunk edges
    assert all(text[s.start : s.end] == s.text for s in sents)


def test_chunk_boundaries_do_not_lose_text():
    seg = Segmenter(max_chunk_chars=1000)  # the floor; forces many chunks
    text = "Rain fell for days and the river rose steadily over the town walls " * 200
    sents = seg.split(text)
    covered = "".join(text[s.start : s.end] for s in sents).replace(" ", "")
    assert covered == text.replace(" ", "")


def test_section_index_picks_the_innermost_section():
    idx = SectionIndex([
        {"heading": None, "level": 1, "start": 0, "end": 10},
        {"heading": "History", "level": 2, "start": 10, "end": 100},
        {"heading": "Aftermath", "level": 3, "start": 50, "end": 80},
    ])
    assert idx.at(5) is None
    assert idx.at(10) == "History"
    assert idx.at(60) == "Aftermath"
    assert idx.at(85) == "History"
    assert idx.at(150) is None
    assert SectionIndex(None).at(3) is None


def test_mentions_are_whole_words_case_insensitive_and_longest_first():
    f = MentionFinder([("earthquake", "Q7944", False), ("2004 Indian Ocean earthquake", None, True), ("war", "Q198", False)])
    text = "The 2004 Indian Ocean  earthquake was felt; earthquakes and warfare are not mentions. War is."
    ms = f.find(text, offset=100)
    assert [(m.text, m.document_concept) for m in ms] == [("2004 Indian Ocean  earthquake", True), ("War", False)]
    assert ms[0].start == 104 and ms[1].qid == "Q198"
    assert MentionFinder([("ab", None, True)]).find("ab ab") == []  # labels under 3 characters are ignored


def test_lexicon_files_and_thresholds():
    lex = cues.load_lexicon()
    texts = {c.text for c in lex}
    assert "due to" in texts and "lead|leads|led|leading to" in texts
    # Derived CNC cues: stop-word-only signals ("to", "for") are left out whatever their precision.
    assert "to" not in texts and "for" not in texts and "demanding" in texts
    strict = cues.load_lexicon(min_precision=0.99, min_count=50)
    assert len(strict) < len(lex)
    assert cues.load_lexicon(base=None, derived=None) == []
    with pytest.raises(ConfigError, match="not found"):
        cues.load_lexicon(base=FIX / "missing.txt")


def test_derive_cues_counts_signals_and_their_precision():
    import spacy

    gold = [json.loads(l) for l in (FIX / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = cues.derive_cues(gold, spacy.blank("en"))
    assert rows, "the CNC fixture sentences carry signals"
    n_signals = sum(1 for r in gold if r["source"] == "cnc" for rel in r["relations"] if rel.get("signal"))
    assert sum(r["count"] for r in rows) <= n_signals
    for r in rows:
        assert 0.0 <= r["precision"] <= 1.0 and r["sentences"] >= 1
    assert rows == sorted(rows, key=lambda r: (-r["count"], r["cue"]))
