"""linking.encoder: the offline MiniLM encoder, normalised vectors, content fingerprints."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from causalkg.errors import ModelError
from causalkg.linking.encoder import Encoder, model_fingerprint
from causalkg.models import resolve_encoder_path


@pytest.fixture(scope="module")
def enc():
    return Encoder("all-MiniLM-L6-v2", device="cpu", batch_size=2)


def test_vectors_are_unit_length_float32_and_rank_by_meaning(enc):
    v = enc.encode(["earthquake", "tsunami", "seismic shock", "birthday cake"])
    assert v.dtype == np.float32 and v.shape == (4, enc.dim) == (4, 384) and v.flags["C_CONTIGUOUS"]
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    sims = v @ v[0]
    assert sims[2] > sims[3] and sims[1] > sims[3]  # "seismic shock" and "tsunami" before "birthday cake"
    assert enc.encode([]).shape == (0, 384)


def test_batch_size_does_not_change_the_vectors(enc):
    texts = ["war", "famine", "a flood after heavy rain", "protest"]
    assert np.allclose(enc.encode(texts, batch_size=1), enc.encode(texts, batch_size=4), atol=1e-5)


def test_identity_and_fingerprint(enc, tmp_path):
    assert enc.model_id == "all-MiniLM-L6-v2" and enc.device == "cpu" and enc.max_seq_length == 256
    fp = enc.fingerprint
    assert fp.startswith("sha256:") and fp == model_fingerprint("sentence-transformers/all-MiniLM-L6-v2")
    assert model_fingerprint("some-org/not-a-folder") == "name:some-org/not-a-folder"
    # a copy of the folder has the same content fingerprint; a changed file changes it
    copy = tmp_path / "minilm"
    shutil.copytree(resolve_encoder_path("all-MiniLM-L6-v2"), copy)
    assert model_fingerprint(str(copy)) == fp
    with open(copy / "config.json", "a", encoding="utf-8") as fh:
        fh.write("\n")
    assert model_fingerprint(str(copy)) != fp


def test_a_folder_that_is_no_model_is_a_model_error(tmp_path):
    (tmp_path / "empty-model").mkdir()
    (tmp_path / "empty-model" / "README").write_text("not a model", encoding="utf-8")
    with pytest.raises(ModelError, match="cannot load sentence-transformers model"):
        Encoder(str(tmp_path / "empty-model"), device="cpu")
    assert Path(resolve_encoder_path("minilm")).is_dir()


def test_encoder_specs_name_a_backend_or_only_a_model():
    from causalkg.linking.encoder import encoder_spec
    from causalkg.registry import Spec

    assert encoder_spec("all-MiniLM-L6-v2") == Spec("sentence-transformers", "all-MiniLM-L6-v2")
    assert encoder_spec("sentence-transformers.v1:models/x") == Spec("sentence-transformers.v1", "models/x")
    assert encoder_spec("C:/models/x") == Spec("sentence-transformers", "C:/models/x")  # a colon that names no backend
