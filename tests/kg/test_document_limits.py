"""Bounded work per record: a document over extract.max_document_chars is skipped, counted in
the result and the manifest and reported; the cues of a long document are handed to its
sentences in one pass (each cue to exactly one sentence). The long documents are invented
(repeated causal sentences), named as such."""

from __future__ import annotations

import json

from causalkg.core.config import load_config
from causalkg.kg import cues
from causalkg.kg.extract import extract
from causalkg.kg.sentences import Segmenter

SENTENCE = "The storm caused floods. "  # invented; "caused" is a cue


def test_a_document_over_the_limit_is_skipped_counted_and_reported(tmp_path):
    cfg = load_config(search_cwd=False, overrides={"extract.gate.kind": "cues", "extract.max_document_chars": 1000})
    src = tmp_path / "docs.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [
        {"id": "short", "text": "The drought led to a famine."},
        {"id": "long", "text": SENTENCE * 200},  # 5,000 characters
    ]) + "\n", encoding="utf-8")
    res = extract(cfg, extractor="patterns", input=src, output=tmp_path / "x.jsonl")
    docs = {json.loads(line)["doc_id"] for line in (tmp_path / "x.jsonl").read_text().splitlines()}
    assert docs == {"short"}
    assert res.counts["documents_too_long"] == 1 and res.documents == 2
    manifest = json.loads(res.manifest_path.read_text())
    assert manifest["counts"]["documents_too_long"] == 1
    assert "1 documents longer than extract.max_document_chars (1,000 characters) were skipped" in manifest["notes"]
    # The default limit reads it.
    cfg2 = load_config(search_cwd=False, overrides={"extract.gate.kind": "cues"})
    res2 = extract(cfg2, extractor="patterns", input=src, output=tmp_path / "y.jsonl")
    assert res2.counts["documents_too_long"] == 0


def test_each_cue_of_a_long_document_goes_to_exactly_one_sentence():
    seg = Segmenter()
    seg.cue_matcher = cues.CueMatcher(seg.nlp, cues.load_lexicon())
    n = 2000
    text = SENTENCE * n
    sentences = seg.split(text)
    assert len(sentences) == n
    found = seg.cue_matcher.find(seg.nlp(text[:len(SENTENCE) * 10]), 0)
    per_sentence = len(found) // 10
    assert per_sentence >= 1
    # Every sentence has its own cues and only them: the work and the structure are n times one
    # sentence's, whatever the document's length.
    assert all(len(s.cues) == per_sentence for s in sentences)
    assert all(s.start <= c.start and c.end <= s.end for s in sentences for c in s.cues)
    assert sum(len(s.cues) for s in sentences) == n * per_sentence


def test_splitting_a_long_document_takes_memory_linear_in_its_length():
    """The peak memory of splitting (and handing out cues) grows with the text, not with its square:
    four times the text takes about four times the memory (a quadratic pass would take sixteen).
    Measured with tracemalloc, which counts allocations, not time."""
    import tracemalloc

    seg = Segmenter()
    seg.cue_matcher = cues.CueMatcher(seg.nlp, cues.load_lexicon())
    seg.split(SENTENCE * 50)  # warm-up: the pipeline's lazy set-up is not the document's cost

    def peak(n: int) -> int:
        tracemalloc.start()
        try:
            assert len(seg.split(SENTENCE * n)) == n
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(400), peak(1600)
    assert large / small < 6, (small, large)
