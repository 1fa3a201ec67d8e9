"""Outputs independent of shard and batch size: QA scores, embeddings and linker rankings are
the same floats whatever else is computed beside them, and ties between concepts are broken by
QID; extraction and assembly give byte-identical files at any shard size."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import Concept
from causalkg.kg import assemble as A
from causalkg.kg.extract import extract
from causalkg.kg.qa_decode import QAModel
from causalkg.testing.tiny_models import tiny_qa_model

from tests.conftest import FIXTURES
from tests.reliability.conftest import KG_FIX, tree

WIKI = FIXTURES / "extract" / "wiki_docs.jsonl"
SENTENCES = [json.loads(line)["text"] for line in (FIXTURES / "extract" / "gold_sentences.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory):
    return tiny_qa_model(tmp_path_factory.mktemp("qa") / "tiny", seed=3)


@pytest.fixture(scope="module")
def wide_qa(tmp_path_factory):
    """As wide as MiniLM (384, FFN 1,536): at that width PyTorch's products give an input
    outputs that change in the last digits with the rows beside it (float32 with two threads;
    bfloat16 with AMX by the number of rows), where the 32-wide model's do not."""
    return tiny_qa_model(tmp_path_factory.mktemp("qa") / "wide", seed=3, hidden_size=384)


@pytest.mark.parametrize("backend,dtype", [("torch", "float32"), ("torch", "bfloat16"), ("onnxruntime", "float32")])
@pytest.mark.parametrize("model", ["tiny_qa", "wide_qa"])
def test_qa_answers_do_not_depend_on_the_company(model, backend, dtype, monkeypatch, request):
    """The same answers, score and margin to the last bit, whatever else is asked with them, at
    every batch size; on ONNX Runtime also the same at any batch size. On PyTorch every pass over
    a bucket has the same rows (``causalkg.core.models.pad_batch_rows``); bfloat16 is emulated where
    the CPU lacks it. Without the fixed rows the wide model fails here on PyTorch on an Intel
    Xeon with AMX, in float32 and in bfloat16."""
    from causalkg.core import models

    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: True)
    folder = str(request.getfixturevalue(model))
    questions = ["What is the cause?", "What did the earthquake cause?", "What caused the fire?"]
    pairs = [(q, c) for c in SENTENCES[:12] for q in questions]
    full = QAModel(folder, device="cpu", batch_size=32, dtype=dtype, backend=backend).answer(*zip(*pairs))
    assert any(a is not None for a in full)
    rng = random.Random(7)
    for batch_size in (1, 3, 32):
        qa = QAModel(folder, device="cpu", batch_size=batch_size, dtype=dtype, backend=backend)
        assert (qa.backend, qa.dtype) == (backend, dtype)
        every = qa.answer(*zip(*pairs))
        if backend == "onnxruntime" or model == "tiny_qa":
            assert every == full, batch_size
        subset = rng.sample(range(len(pairs)), 9)
        assert qa.answer(*zip(*[pairs[i] for i in subset])) == [every[i] for i in subset], batch_size


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_span_tagger_probabilities_do_not_depend_on_the_company(dtype, tmp_path, monkeypatch):
    """The span tagger at MiniLM's width: a sentence's tag probabilities are the same floats
    whatever sentences are tagged with it (passes padded to their bucket, fixed rows per bucket),
    in float32 and in bfloat16 (emulated where the CPU lacks it). Padded to the longest sentence
    of a sorted batch, as before, they were not."""
    from causalkg.core import models
    from causalkg.kg.tagger import LABELS, SpanTagger
    from causalkg.testing.tiny_models import tiny_token_classifier

    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: True)
    folder = tiny_token_classifier(tmp_path / "tagger", len(LABELS), seed=4, hidden_size=384)
    tagger = SpanTagger(str(folder), device="cpu", batch_size=8, dtype=dtype)
    assert tagger.dtype == dtype
    texts = [s[:200] for s in SENTENCES[:20]]
    full = tagger._probs(["first relation"] * len(texts), texts)
    for subset in (random.Random(5).sample(range(len(texts)), 7), [3], [0, 19]):
        part = tagger._probs(["first relation"] * len(subset), [texts[i] for i in subset])
        for got, i in zip(part, subset):
            assert np.array_equal(got[2], full[i][2]), (dtype, i)


def test_embeddings_do_not_depend_on_the_batch():
    from causalkg.linking.encoder import Encoder

    enc = Encoder("all-MiniLM-L6-v2", device="cpu", batch_size=8)
    texts = ["destruction", "property damage", "a very long phrase about the consequences of a large earthquake",
             *[s[:60] for s in SENTENCES[:21]]]
    together = enc.encode(texts)
    for i in (0, 1, 2):
        assert np.array_equal(enc.encode([texts[i]])[0], together[i])
    assert np.array_equal(enc.encode(texts[::-1], batch_size=3)[::-1], together)


def test_linker_ties_are_broken_by_qid_whatever_the_batch():
    """Three concepts labelled "property damage": the lower QID wins, for an exact match and for a
    nearest neighbour, linked alone or among 30 other phrases (FAISS scores 20 or more queries
    with a different routine)."""
    from causalkg.linking.linker import Linker

    cfg = load_config(search_cwd=False, overrides={"linking.device": "cpu"})
    concepts = [Concept.model_validate(json.loads(line)) for line in (KG_FIX / "concepts.jsonl").read_text().splitlines()]
    twin = dict(id="Q99999901", kind="class", label="property damage", aliases=[], seed_classes=[], instance_of=[],
                subclass_of=[], enwiki_title=None)
    twin2 = dict(twin, id="Q1000000002")  # numerically larger: Q99999901 must win although "Q1..." < "Q9..." as text
    linker = Linker.from_concepts([*concepts, Concept.model_validate(twin2), Concept.model_validate(twin)], cfg)
    others = [s[:40] for s in SENTENCES[:30]]
    for phrase in ("property damage", "destruction of property"):
        alone = linker.link([phrase], k=5)[0]
        crowd = linker.link([*others, phrase, *others], k=5)[len(others)]
        assert [c.model_dump() for c in alone] == [c.model_dump() for c in crowd]
        # the fixture's own "property damage" (Q554774) and the two twins: equal scores, QID order
        assert [c.qid for c in alone if c.label == "property damage"] == ["Q554774", "Q99999901", "Q1000000002"]
    assert linker.link(["property damage"], k=1)[0][0].qid == "Q554774"


def _qa_cfg(model: Path, **over):
    return load_config(search_cwd=False, overrides={
        "extract.qa.model": str(model), "extract.device": "cpu", "extract.qa.null_threshold_from_model": False,
        "extract.qa.null_threshold": -1e9, "extract.qa.min_score": 0.0, "extract.gate.kind": "cues", **over})


def test_extraction_is_byte_identical_at_any_shard_and_batch_size(tiny_qa, tmp_path):
    outs = []
    for shard, batch in ((1, 32), (3, 4), (50, 1)):
        out = tmp_path / f"x-{shard}-{batch}.jsonl"
        extract(_qa_cfg(tiny_qa, **{"extract.qa.batch_size": batch}), extractor="qa", input=WIKI, output=out,
                shard_size=shard, limit=3)
        outs.append(out.read_bytes())
    assert outs[0] and outs[0] == outs[1] == outs[2]


@pytest.mark.slow
def test_assembly_is_byte_identical_at_any_shard_size(tmp_path):
    from causalkg.linking.index import build_index

    results = []
    for size in (1, 5, 2000):
        root = tmp_path / f"s{size}"
        cfg = load_config(search_cwd=False, overrides={"paths.data": str(root / "data"), "kg.shard_size": size,
                                                       "linking.device": "cpu"})
        if not results:
            build_index(cfg, concepts_path=KG_FIX / "concepts.jsonl")
            index_dir = root / "data" / "linking"
        else:
            (root / "data").mkdir(parents=True)
            import shutil

            shutil.copytree(index_dir, root / "data" / "linking")
        A.assemble(cfg, extractions=KG_FIX / "extractions.jsonl", corpus=KG_FIX / "corpus.jsonl",
                   concepts=KG_FIX / "concepts.jsonl")
        results.append(tree(root / "data" / "kg" / "current"))
    assert results[0] and results[0] == results[1] == results[2]
