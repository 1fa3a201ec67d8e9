"""evaluation.judging.hf_models: model ids that change with the files, loading errors, the shared scorer set-up."""

from __future__ import annotations

import os

import pytest

from causalkg.core.errors import ModelError
from causalkg.evaluation.judging.hf_models import PretrainedScorer, load_pretrained, model_id
from causalkg.testing import tiny_models


@pytest.fixture(scope="module")
def nli(tmp_path_factory):
    return tiny_models.tiny_nli_model(tmp_path_factory.mktemp("m") / "nli")


def test_model_id_names_hub_models_and_fingerprints_folders(nli):
    assert model_id("microsoft/deberta-large-mnli") == "microsoft/deberta-large-mnli"
    first = model_id(str(nli))
    assert first.startswith(f"{nli.resolve()}#") and len(first.split("#")[1]) == 12
    assert model_id(str(nli)) == first
    weights = next(p for p in nli.iterdir() if p.suffix in (".safetensors", ".bin"))
    st = weights.stat()
    os.utime(weights, (st.st_atime, st.st_mtime + 10))  # retrained in place: a new id, old answers unused
    assert model_id(str(nli)) != first


def test_load_pretrained_and_the_scorer_set_up(nli):
    tok, model = load_pretrained("sequence-classification", str(nli), device="cpu")
    assert not model.training and model.config.id2label[2] == "ENTAILMENT" and tok("a", "b")["input_ids"]

    class Scorer(PretrainedScorer):
        kind = "sequence-classification"

    s = Scorer(str(nli), device="cpu", batch_size=0)
    assert s.device == "cpu" and s.batch_size == 1 and s.model_id == model_id(str(nli)) and s.cache is None


def test_a_missing_model_is_one_model_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelError) as err:
        load_pretrained("causal-lm", str(tmp_path / "no-such-model"), device="cpu")
    assert "cannot load causal-lm model" in str(err.value) and "no-such-model" in str(err.value)
    assert err.value.hint == "name a local model folder, or a hub model already in your Hugging Face cache"
