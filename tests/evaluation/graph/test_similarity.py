"""Label similarities: each measure on hand-checked pairs, the registry, and the errors of the
measures that need a model (the offline MiniLM is real; BLEURT is not installed here)."""

from __future__ import annotations

import numpy as np
import pytest

from causalkg.core.errors import ConfigError, ModelError
from causalkg.evaluation.graph.similarity import SIMILARITIES, canonical_name, get_similarity, reference_name


def test_exact_and_verbatim():
    assert get_similarity("exact").score("Turbine  structures", "turbine structures") == 1.0
    assert get_similarity("verbatim").score("Turbine structures", "turbine structures") == 0.0


def test_word_bleu_caps_the_order_at_the_shorter_label():
    b = get_similarity("bleu")
    assert b.score("crop yield", "crop yield") == pytest.approx(1.0)
    # One of two unigrams and no bigram match; method-1 smoothing gives the bigram 0.1/1:
    # sqrt(1/2 * 0.1) with no brevity penalty = 0.2236.
    assert b.score("crop yield", "crop loss") == pytest.approx((0.5 * 0.1) ** 0.5, abs=1e-4)
    assert b.score("", "x") == 0.0


def test_rouge1_uses_the_stemmer():
    r = get_similarity("rouge")
    # "turbines" and "turbine" share a stem: P = 1/1, R = 1/2, F = 2/3.
    assert r.score("turbines", "turbine structures") == pytest.approx(2 / 3)
    assert canonical_name("rouge") == "rouge1" and canonical_name("cosine:m") == "embedding"


def test_reference_names():
    assert reference_name("bleu") == "ref-bleu"
    assert reference_name("meteor") == "ref-meteor"
    assert reference_name("exact") == "verbatim"
    assert reference_name("rouge") == "rouge1"
    assert reference_name("embedding:all-MiniLM-L6-v2") == "embedding:all-MiniLM-L6-v2"


def test_matrix_shape_and_cache():
    r = get_similarity("rouge1")
    m = r.matrix(["a b", "c"], ["a", "b", "c d"])
    assert m.shape == (2, 3) and m[1, 2] == pytest.approx(2 / 3)
    assert ("c", "c d") in r._cache


@pytest.mark.slow
def test_embedding_with_the_offline_minilm():
    e = get_similarity("embedding")
    m = e.matrix(["wind turbines", "rainfall"], ["turbine structures", "precipitation", "wind turbines"])
    assert m.shape == (2, 3)
    assert m[0, 2] == pytest.approx(1.0, abs=1e-5)  # the same text
    assert m[0, 0] > m[0, 1] and m[1, 1] > m[1, 0]  # near meanings score higher
    assert np.all(m <= 1.0)


def test_registry_and_errors():
    assert {"exact", "bleu", "ref-bleu", "rouge1", "meteor", "ref-meteor", "embedding", "bleurt"} <= set(SIMILARITIES.bases())
    assert SIMILARITIES.resolve("rouge") == SIMILARITIES.resolve("rouge1.v1") == "rouge1.v1"
    with pytest.raises(ConfigError) as exc:
        get_similarity("cosinus")
    assert str(exc.value).startswith("unknown similarity measure 'cosinus' (choose one of: bleu, bleurt,")
    with pytest.raises(ConfigError, match="bleurt needs a checkpoint folder"):
        get_similarity("bleurt")
    with pytest.raises(ModelError, match="BLEURT checkpoint folder not found: /nope"):
        get_similarity("bleurt:/nope")


def test_bleurt_not_installed_is_a_clear_error(tmp_path):
    try:
        import bleurt  # noqa: F401
    except ImportError:
        with pytest.raises(ModelError, match="BLEURT is not installed"):
            get_similarity(f"bleurt:{tmp_path}")
    else:  # pragma: no cover - where a user installed it, a bare folder is no checkpoint
        with pytest.raises(Exception):
            get_similarity(f"bleurt:{tmp_path}")
