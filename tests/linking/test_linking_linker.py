"""The linker over the persisted small index (real Base KG labels and aliases, the real MiniLM)."""

from __future__ import annotations

import pytest

from causalkg.core.contracts import Candidate
from causalkg.core.errors import ConfigError
from causalkg.linking.linker import Linker, LinkContext


def qids(cands):
    return [c.qid for c in cands]


def test_issue_examples_link_exactly(linker):
    res = linker.link(["the tsunamis", "a wave of protests", "a series of earthquakes", "hostilities"], k=3)
    assert [r[0].qid for r in res] == ["Q8070", "Q273120", "Q7944", "Q198"]
    assert all(r[0].match == "exact" and r[0].score == 1.0 for r in res)
    assert res[0][0].surface == "tsunami" and res[0][0].label == "tsunami" and res[0][0].kind == "class"
    assert all(isinstance(c, Candidate) for r in res for c in r)


def test_label_match_ranks_before_alias_match(linker):
    # "conflict" is the label of conflict (Q180684) and an alias of war (Q198)
    (cands,) = linker.link(["conflict"], k=5)
    assert [(c.qid, c.match, c.surface) for c in cands[:2]] == [("Q180684", "exact", "conflict"), ("Q198", "exact", "conflict")]
    assert cands[0].score == cands[1].score == 1.0
    assert all(c.match == "nearest" for c in cands[2:])


def test_exact_match_beats_nearest_neighbours(built, make_cfg):
    # "quakes" is no surface form; its singular "quake" is an alias of earthquake (Q7944)
    strong = Linker.load(make_cfg(built, context_bonus=0.5))
    (quakes,) = strong.link(["the quakes"], k=3)
    assert quakes[0].qid == "Q7944" and quakes[0].surface == "quake" and quakes[0].match == "exact"
    assert all(c.match == "nearest" and c.score < 1.0 for c in quakes[1:])
    # "hostilities" is an alias of war (Q198). In a document about King William's War (seed
    # class conflict, Q180684) the bonus lifts conflict's similarity of ~0.64 above 1.0, and still
    # the exact match ranks first; the nearest neighbour's score is capped at the exact score.
    (cands,) = strong.link(["hostilities"], k=3, contexts=[LinkContext(document_concept="Q1070342")])
    assert (cands[0].qid, cands[0].match, cands[0].score) == ("Q198", "exact", 1.0)
    second = cands[1].model_dump()
    assert (second["qid"], second["match"], second["bonus"]) == ("Q180684", "nearest", 0.5)
    assert second["similarity"] + 0.5 > 1.0 and second["score"] == 1.0
    assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)


def test_candidates_are_ranked_distinct_and_at_most_k(linker):
    for k in (1, 2, 5, 10):
        (cands,) = linker.link(["submarine earthquake"], k=k, threshold=-1.0)
        assert len(cands) == k
        assert len(set(qids(cands))) == k
        scores = [c.score for c in cands]
        assert scores == sorted(scores, reverse=True)


def test_threshold_is_honoured(linker):
    (low,) = linker.link(["mass demonstrations in the capital"], k=10, threshold=0.3)
    (high,) = linker.link(["mass demonstrations in the capital"], k=10, threshold=0.7)
    assert low and all(c.score >= 0.3 for c in low)
    assert all(c.score >= 0.7 for c in high) and len(high) < len(low)
    assert linker.link(["soaring food prices"], threshold=0.95) == [[]]
    # the configured default applies when none is given
    (default,) = linker.link(["mass demonstrations in the capital"], k=10)
    assert all(c.score >= linker.threshold for c in default)
    # an exact match is a similarity of 1.0: a high threshold keeps it
    assert qids(linker.link(["the tsunamis"], k=5, threshold=0.99)[0]) == ["Q8070"]


def test_kind_and_under_restrictions(linker):
    (inst,) = linker.link(["war"], k=5, kinds={"instance"}, threshold=0.0, instance_threshold=0.0)
    assert inst and all(c.kind == "instance" for c in inst)
    (cls,) = linker.link(["war"], k=5, kinds={"class"}, threshold=0.0)
    assert cls and all(c.kind == "class" for c in cls) and cls[0].qid == "Q198"
    under = linker.descendants(["Q7944"])
    assert "Q7944" in under and len(under) > 1
    assert all(q == "Q7944" or "Q7944" in linker.concepts[q]["seed_classes"] for q in under)
    (quake,) = linker.link(["war"], k=5, under=["Q7944"], threshold=0.0)
    assert quake and set(qids(quake)) <= under
    (none,) = linker.link(["war"], under=["Q1"], threshold=0.0)
    assert none == []


def test_context_prefers_the_document_concept_and_its_seed_classes(linker, built, make_cfg):
    # Thirty Years' War (Q2487) falls under the seed class war (Q198)
    assert "Q198" in linker.concepts["Q2487"]["seed_classes"]
    (plain,) = linker.link(["conflict"], k=3)
    (ctx,) = linker.link(["conflict"], k=3, contexts=[LinkContext(sentence="...", document_concept="Q2487")])
    assert plain[0].qid == "Q180684"
    assert ctx[0].qid == "Q198" and ctx[0].score == pytest.approx(1.0 + linker.context_bonus)
    assert ctx[0].model_dump()["bonus"] == pytest.approx(linker.context_bonus)
    # among nearest neighbours, a preferred concept outside the top k is still considered
    # (a misspelt name, so no exact match; its instance at ~0.73 is let in for the test)
    strong = Linker.load(make_cfg(built, context_bonus=0.5, instance_threshold=0.6))
    phrase = "King Wiliam's war"
    (near,) = strong.link([phrase], k=1, threshold=0.5)
    (lifted,) = strong.link([phrase], k=1, threshold=0.5, contexts=[LinkContext(document_concept="Q2487")])
    assert near[0].qid == "Q1070342" and lifted[0].qid in {"Q198", "Q2487"} and lifted[0].match == "nearest"
    # no context, or a context without a document concept, changes nothing
    assert strong.link([phrase], k=1, threshold=0.5, contexts=[None]) == [near]
    assert strong.link([phrase], k=1, threshold=0.5, contexts=[LinkContext(sentence="x")]) == [near]


def test_instance_threshold_keeps_other_named_events_out(linker, built, make_cfg):
    # Wikipedia article titles of the snapshot corpus against the Base KG's named events: a
    # sentence encoder finds another earthquake close to "the 1995 Chiapas earthquake" (the
    # 2004 Chuetsu one, ~0.62); that is not a link, so below linking.instance_threshold the
    # phrase goes to the classes.
    assert linker.instance_threshold == 0.8
    assert linker.search_settings["instance_threshold"] == 0.8 and linker.search_settings["threshold"] == 0.6
    (default,) = linker.link(["the 1995 Chiapas earthquake"], k=5)
    assert default and {c.kind for c in default} == {"class"} and "Q7944" in qids(default)
    (loose,) = linker.link(["the 1995 Chiapas earthquake"], k=5, instance_threshold=0.6)
    assert loose[0].kind == "instance" and loose[0].match == "nearest" and loose[0].score < 0.8
    assert Linker.load(make_cfg(built, instance_threshold=0.6)).link(["the 1995 Chiapas earthquake"], k=5) == [loose]
    # A close paraphrase of an instance's name still links to it ...
    (tohoku,) = linker.link(["the 2011 Tohoku tsunami"], k=3)
    assert tohoku[0].kind == "instance" and tohoku[0].score >= 0.8 and "2011" in tohoku[0].label
    # ... and an exact label or alias always does, whatever the instance threshold.
    (exact,) = linker.link([tohoku[0].label], k=1, instance_threshold=1.01)
    assert (exact[0].qid, exact[0].match) == (tohoku[0].qid, "exact")
    # The context bonus does not let a preferred instance under the instance threshold in.
    doc = loose[0].qid
    (ctx,) = linker.link(["the 1995 Chiapas earthquake"], k=5, contexts=[LinkContext(document_concept=doc)])
    assert doc not in qids(ctx)


@pytest.mark.parametrize("bad", ["", "   ", "\n\t", "!!!"])
def test_empty_phrases_get_no_candidates(linker, bad):
    assert linker.link([bad, "the tsunamis"], k=2)[0] == []


def test_ten_thousand_character_phrases(linker):
    long_real = ("a wave of protests against the war " * 300)[:10_000]
    res = linker.link(["x" * 10_000, long_real, "war"], k=3)
    assert len(res) == 3
    assert res[2][0].qid == "Q198"
    assert all(c.score >= linker.threshold for r in res for c in r)


def test_bad_arguments_are_clear_errors(linker):
    with pytest.raises(ConfigError, match="not one string"):
        linker.link("war")
    with pytest.raises(ConfigError, match="k must be at least 1"):
        linker.link(["war"], k=0)
    with pytest.raises(ConfigError, match="2 contexts for 1 phrases"):
        linker.link(["war"], contexts=[None, None])
    with pytest.raises(ConfigError, match="not a Wikidata QID"):
        linker.link(["war"], under=["war"])
    with pytest.raises(ConfigError, match="not a Wikidata QID"):
        linker.link(["war"], contexts=[LinkContext(document_concept="Thirty Years' War")])
    with pytest.raises(ConfigError, match="kinds must be"):
        linker.link(["war"], kinds={"event"})
    with pytest.raises(ConfigError, match="phrase 2 is NoneType"):
        linker.link(["war", None])


def test_one_batched_embedding_call_for_all_phrases(linker):
    calls = []
    encoder = linker.encoder
    real = encoder.encode

    def counting(texts, **kw):
        calls.append(len(texts))
        return real(texts, **kw)

    encoder.encode = counting
    try:
        phrases = [f"a wave of {w}" for w in ("riots", "strikes", "floods", "fires", "layoffs")] * 4 + ["", "the tsunamis"]
        res = linker.link(phrases, k=3)
    finally:
        del encoder.encode
    assert len(res) == len(phrases)
    # one call; repeated phrases are embedded once
    assert calls == [6]


def test_persisted_index_reloads_to_identical_answers(linker, built, small_vocab, make_cfg):
    phrases = ["the tsunamis", "civil unrest", "King Williams war", "earthquake damage", "a wave of strikes",
               "refugee crisis", "conflict", "mass demonstrations in the capital"]
    again = Linker.load(make_cfg(built))
    memory = Linker.from_concepts(small_vocab, make_cfg(built), encoder=linker.encoder)
    first = linker.link(phrases, k=5, threshold=0.0)
    assert again.link(phrases, k=5, threshold=0.0) == first
    in_memory = memory.link(phrases, k=5, threshold=0.0)
    assert [qids(r) for r in in_memory] == [qids(r) for r in first]
    for a, b in zip(in_memory, first):
        assert [c.score for c in a] == pytest.approx([c.score for c in b], abs=1e-5)


@pytest.mark.parametrize("kind", [{"index": "hnsw"}, {"index": "ivf", "ivf_nprobe": 1}])
def test_approximate_indexes_agree_with_flat_on_a_small_vocabulary(linker, small_vocab, built, kind, make_cfg):
    approx = Linker.from_concepts(small_vocab, make_cfg(built, **kind), encoder=linker.encoder)
    phrases = ["the tsunamis", "civil unrest", "King Williams war", "earthquake damage", "refugee crisis"]
    assert [qids(r)[:1] for r in approx.link(phrases, k=3)] == [qids(r)[:1] for r in linker.link(phrases, k=3)]
    (restricted,) = approx.link(["war"], k=3, kinds={"instance"}, threshold=0.0, instance_threshold=0.0)
    assert restricted and all(c.kind == "instance" for c in restricted)


def test_an_acronym_alias_matches_only_the_acronym_as_written(linker, small_vocab, built, make_cfg):
    # Wikidata gives international relations (Q166542) the aliases "GA", "GS", "IR", "IS": folded
    # keys are lower case, so the word "gas" (singular key "ga") linked to international relations
    # in the snapshot KG ("the release of radioactive gas from the accident").
    vocab = list(small_vocab) + [{"schema_version": "1", "id": "Q166542", "kind": "class",
                                  "label": "international relations", "aliases": ["GA", "GS", "IR", "IS"]}]
    lk = Linker.from_concepts(vocab, make_cfg(built), encoder=linker.encoder)
    gas, ir, the_ir = lk.link(["gas", "IR", "the IR"], k=3)
    assert all(c.qid != "Q166542" for c in gas if c.match == "exact")
    assert ir and ir[0].qid == "Q166542" and ir[0].match == "exact"
    assert the_ir and the_ir[0].qid == "Q166542" and the_ir[0].match == "exact"


def test_exact_ivf_answers_as_flat_reading_only_the_lists_that_can_match(linker, small_vocab, built, make_cfg):
    """``ivf`` with ``ivf_nprobe = 0`` (the default) reads, per phrase, the lists whose bound
    reaches the threshold: the answers are the flat index's, candidate for candidate, at every
    threshold, and the bound holds for every row (no row at or above the threshold is in a list
    it skips). (420 MiniLM vectors in 10 lists make lists 60-80 degrees wide, which few phrases
    can skip; the next test has lists tight enough to skip.)"""
    import faiss
    import numpy as np

    from causalkg.linking.index import IvfBounds

    ivf = Linker.from_concepts(small_vocab, make_cfg(built, index="ivf", ivf_nlist=10), encoder=linker.encoder)
    assert ivf.ivf_nprobe == 0 and faiss.extract_index_ivf(ivf.index).nlist == 10
    phrases = ["civil unrest", "King Williams war", "earthquake damage", "refugee crisis", "the tsunamis",
               "mass demonstrations in the capital", "soaring food prices", "a flood of the river",
               "the collapse of buildings", "an uprising of the peasants", "loss of life", "famine"]
    for threshold in (0.6, 0.45, 0.0, -1.0):
        for k in (1, 5):
            assert ivf.link(phrases, k=k, threshold=threshold) == linker.link(phrases, k=k, threshold=threshold)
    assert ivf.link(phrases, k=3, kinds={"class"}) == linker.link(phrases, k=3, kinds={"class"})
    # the bound, row by row: every row at or above the threshold is in a list that is read
    lists = faiss.extract_index_ivf(ivf.index).invlists
    list_of = {}
    for l in range(10):
        ids = faiss.rev_swig_ptr(lists.get_ids(l), lists.list_size(l))
        list_of.update({int(r): l for r in ids})
    assert sorted(list_of) == list(range(ivf.index.ntotal))
    vectors = ivf.embed(phrases)
    every = ivf.index.reconstruct_n(0, ivf.index.ntotal)
    for threshold in (0.9, 0.8, 0.6, 0.45, 0.3):
        need = IvfBounds(ivf.index).lists_within(vectors, threshold)
        for q, read in zip(vectors, need):
            assert {list_of[r] for r in np.flatnonzero(every @ q >= threshold - 1e-6)} <= set(np.flatnonzero(read))


def test_exact_ivf_range_search_skips_the_lists_that_cannot_match(monkeypatch):
    """``IvfBounds.rows_within`` on 3,000 unit vectors in 60 tight groups: for every query and
    threshold, the rows at or above the threshold are exactly those of an exhaustive product,
    with and without a set of allowed rows, any other row returned is within RANGE_MARGIN below
    it, and most lists go unread. Queries come in batches larger than BOUND_BATCH. The bounds
    are the same whatever the step of their pass over the vectors (BOUNDS_ROWS)."""
    import numpy as np

    import causalkg.linking.index as index_module
    from causalkg.linking.index import BOUND_BATCH, RANGE_MARGIN, IvfBounds, fill_index, make_faiss_index

    rng = np.random.default_rng(7)
    centres = rng.standard_normal((60, 32))
    x = (centres[rng.integers(0, 60, 3000)] + 0.25 * rng.standard_normal((3000, 32))).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = (centres[rng.integers(0, 60, BOUND_BATCH + 88)] + 0.3 * rng.standard_normal((BOUND_BATCH + 88, 32)))
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)
    index = make_faiss_index({"type": "ivf", "nlist": 60}, 32, len(x))
    index = fill_index(index, x)
    bounds = IvfBounds(index)
    for step in (1, 7, 1000):
        monkeypatch.setattr(index_module, "BOUNDS_ROWS", step)
        other = IvfBounds(index)
        assert np.array_equal(other.radius, bounds.radius) and np.array_equal(other.largest, bounds.largest)
    assert np.all(bounds.radius > 0) and np.all(bounds.largest > 0.99)
    sims = q.astype(np.float64) @ x.T.astype(np.float64)
    half = np.arange(0, 3000, 2, dtype=np.int64)
    for threshold in (0.95, 0.8, 0.6, 0.3):
        if threshold >= 0.6:
            assert bounds.lists_within(q, threshold).sum(axis=1).mean() < 30  # of 60
        for allowed in (None, half):
            found = bounds.rows_within(q, threshold, allowed)
            assert len(found) == len(q)
            for i, rows in enumerate(found):
                pool = np.arange(3000) if allowed is None else allowed
                assert set(rows[sims[i][rows] >= threshold].tolist()) == set(pool[sims[i][pool] >= threshold].tolist())
                assert np.all(sims[i][rows] >= threshold - RANGE_MARGIN - 1e-6) and set(rows.tolist()) <= set(pool.tolist())
                assert len(set(rows.tolist())) == len(rows)


def test_the_array_ranking_is_the_row_by_row_one(linker):
    # Linker._top (both search paths' ranking, in array operations) against the row-by-row
    # definition on every row of the index: thresholds, the instance threshold, excluded concepts,
    # ties (concepts sharing a name), how many are wanted, and whether a row below the threshold
    # was reached (what the widening search reads).
    import numpy as np

    from causalkg.linking.linker import _qid_key, exact_similarity

    def row_by_row(v, rows, threshold, inst_min, exclude, want):
        sims = exact_similarity(v, linker.index.reconstruct_batch(rows))
        order = sorted(range(len(rows)), key=lambda t: (-sims[t], _qid_key(linker.row_qid[rows[t]]), int(rows[t])))
        best, below = {}, False
        for t in order:
            row, sim = int(rows[t]), float(sims[t])
            if sim < threshold:
                below = True
                break
            qid = linker.row_qid[row]
            if qid in exclude or qid in best:
                continue
            if sim < inst_min and linker.concepts[qid]["kind"] == "instance":
                continue
            best[qid] = (row, sim)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][1], _qid_key(kv[0])))[:max(want, 0)]
        return [(qid, row, sim) for qid, (row, sim) in ranked], below, len(best)

    phrases = ["civil unrest", "earthquake", "the tsunamis", "war", "King Williams war", "famine", "protest",
               "2004 Indian Ocean earthquake", "riots"]
    vectors = linker.embed(phrases)
    every = np.arange(linker.index.ntotal, dtype=np.int64)
    found = 0
    for v in vectors:
        top = [q for q, _, _ in linker._top(v, every, 0.3, 0.3, set(), 6)[0]]
        for threshold, inst_min in ((0.3, 0.3), (0.45, 0.8), (0.6, 0.8), (0.9, 0.9)):
            for exclude in (set(), set(top[:2]), {"Q0", *top[3:4]}):
                for want in (0, 1, 3, 5, 50):
                    expected, below, reached = row_by_row(v, every, threshold, inst_min, exclude, want)
                    found += reached
                    assert linker._top(v, every, threshold, inst_min, exclude, want) == (expected, below)
    assert found > 100  # concepts reached: the comparison is not of empty lists


def test_similarities_read_in_slices_are_the_whole_read(linker, monkeypatch):
    # Linker._similarities reads the rows' vectors SIMILARITY_ROWS at a time (a phrase can reach
    # tens of thousands of rows): each row's value and hence _top's ranking are the same as in
    # one read of every row
    import numpy as np

    import causalkg.linking.linker as L

    vectors = linker.embed(["war", "2004 Indian Ocean earthquake", "riots"])
    every = np.arange(linker.index.ntotal, dtype=np.int64)
    assert len(every) > 50
    whole = [L.exact_similarity(v, linker.index.reconstruct_batch(every)) for v in vectors]
    tops = [linker._top(v, every, 0.3, 0.5, set(), 8) for v in vectors]
    monkeypatch.setattr(L, "SIMILARITY_ROWS", 7)
    for v, sims, top in zip(vectors, whole, tops):
        assert np.array_equal(linker._similarities(v, every), sims)
        assert linker._similarities(v, every[:5]).tolist() == sims[:5].tolist()
        assert linker._top(v, every, 0.3, 0.5, set(), 8) == top and top[0]
