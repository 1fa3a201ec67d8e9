"""linking.encoder: the offline MiniLM encoder, normalised vectors, content fingerprints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from causalkg.core.errors import ModelError
from causalkg.linking.encoder import Encoder, model_fingerprint
from causalkg.core.models import resolve_encoder_path


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


def test_the_vectors_are_the_same_bits_whatever_the_batch_and_the_threads(enc):
    """On the CPU each forward pass runs on one PyTorch thread (the batches on a pool of Python
    threads): with two intra-op threads the same phrase got vectors 1e-7 apart with the batch
    around it, which changed a link score's sixth decimal between a pool worker and the driver."""
    import torch

    texts = [f"{w} {i}" if i % 3 else w for i, w in enumerate(
        ["war", "famine", "a flood after heavy rain", "protests in the capital", "the 2004 tsunami",
         "disease", "an earthquake off the coast of Sumatra", "boycotts"] * 6)]
    before = torch.get_num_threads()
    runs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for size in (1, 5, 32, 256):
                runs.append(enc.encode(texts, batch_size=size))
            runs.append(np.vstack([enc.encode(texts[:7], batch_size=256), enc.encode(texts[7:], batch_size=256)]))
            assert torch.get_num_threads() == threads  # given back as it was
    finally:
        torch.set_num_threads(before)
    for other in runs[1:]:
        assert np.array_equal(runs[0], other)


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


# --- the ONNX Runtime backend --------------------------------------------------------------------

SENTENCES = [
    "Heavy rain over three days caused the river to flood the lower town.",
    "The earthquake triggered a tsunami that reached the coast within an hour.",
    "Prices rose.",
    "The committee met on Tuesday to discuss the budget for the coming year, and adjourned at noon "
    "after a long debate about the new library, the roads and the school buses of the district.",
    "war",
    "Because the bank failed, thousands of savers lost their deposits.",
]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def ort_enc(onnx_cache):
    pytest.importorskip("onnxruntime")
    return Encoder("all-MiniLM-L6-v2", device="cpu", batch_size=4, backend="onnxruntime", cache_dir=onnx_cache)


def test_onnxruntime_vectors_equal_the_torch_ones(enc, ort_enc):
    assert enc.backend == "torch" and ort_enc.backend == "onnxruntime"
    ours, theirs = ort_enc.encode(SENTENCES), enc.encode(SENTENCES)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape == (len(SENTENCES), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)
    assert ort_enc.encode([]).shape == (0, 384)


def test_onnxruntime_vectors_do_not_depend_on_the_batch(ort_enc):
    one = ort_enc.encode(SENTENCES, batch_size=1)
    assert np.array_equal(one, ort_enc.encode(SENTENCES, batch_size=64))
    assert np.array_equal(one[2:4], ort_enc.encode(SENTENCES[2:4], batch_size=2))


def test_the_export_is_kept_in_the_cache_and_reused(ort_enc, onnx_cache):
    assert ort_enc.onnx_exported and ort_enc.onnx_path.parent == onnx_cache and ort_enc.onnx_path.is_file()
    assert [p.name for p in onnx_cache.iterdir()] == [ort_enc.onnx_path.name]  # no temporary file left
    before = ort_enc.onnx_path.stat()
    again = Encoder("all-MiniLM-L6-v2", device="cpu", backend="auto", cache_dir=onnx_cache)
    assert again.backend == "onnxruntime" and not again.onnx_exported and again.onnx_path == ort_enc.onnx_path
    after = again.onnx_path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_damaged_export_is_a_model_error_naming_the_file(ort_enc, tmp_path):
    bad = tmp_path / ort_enc.onnx_path.name
    bad.write_bytes(b"not an onnx graph")
    with pytest.raises(ModelError, match="delete"):
        Encoder("all-MiniLM-L6-v2", device="cpu", backend="onnxruntime", cache_dir=tmp_path)


def _minilm_pooled_by(tmp_path: Path, mode: str) -> Path:
    """A folder of the offline MiniLM (its files linked, not copied) whose Pooling is ``mode``."""
    src = Path(resolve_encoder_path("all-MiniLM-L6-v2"))
    dst = tmp_path / f"minilm-{mode}"
    dst.mkdir()
    for f in src.iterdir():
        if f.is_file():
            (dst / f.name).symlink_to(f)
    (dst / "1_Pooling").mkdir()
    cfg = json.loads((src / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    cfg.update({k: k == f"pooling_mode_{mode}" for k in cfg if k.startswith("pooling_mode_")})
    (dst / "1_Pooling" / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    return dst


def test_other_layouts_run_on_torch_with_auto_and_are_refused_by_onnxruntime(enc, tmp_path):
    from causalkg.linking.encoder import onnx_layout_problem

    pytest.importorskip("onnxruntime")
    assert onnx_layout_problem(enc.model) is None
    folder = _minilm_pooled_by(tmp_path, "cls_token")
    cls = Encoder(str(folder), device="cpu", backend="auto", cache_dir=tmp_path / "cache")
    assert cls.backend == "torch" and cls.onnx_path is None and not (tmp_path / "cache").exists()
    assert "not mean tokens only" in onnx_layout_problem(cls.model)
    assert not np.allclose(cls.encode(SENTENCES[:2]), enc.encode(SENTENCES[:2]), atol=1e-3)  # it is another model
    with pytest.raises(ModelError, match="cannot run on onnxruntime: its Pooling is"):
        Encoder(str(folder), device="cpu", backend="onnxruntime", cache_dir=tmp_path / "cache")
    assert "modules are ['Transformer']" in onnx_layout_problem([enc.model[0]])


def test_backend_settings():
    from causalkg.core.errors import ConfigError

    with pytest.raises(ConfigError, match="encoder backend must be one of auto, torch, onnxruntime"):
        Encoder("all-MiniLM-L6-v2", device="cpu", backend="tensorrt")


def test_linking_backend_setting(tmp_path):
    from causalkg.core.config import load_config
    from causalkg.linking.encoder import encoder_options

    default = encoder_options(load_config(search_cwd=False))
    assert default["backend"] == "torch" and default["batch_size"] == 256
    cfg = load_config(search_cwd=False, overrides={"linking.backend": "onnxruntime", "linking.device": "cpu",
                                                   "paths.cache": str(tmp_path)})
    assert encoder_options(cfg) == {"device": "cpu", "batch_size": 256, "backend": "onnxruntime",
                                    "cache_dir": tmp_path / "onnx"}


def test_half_precision_dtypes_resolve_to_what_the_hardware_computes(monkeypatch):
    from causalkg.core import models
    from causalkg.core.errors import ConfigError
    from causalkg.linking.encoder import encoder_dtype

    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: False)
    assert [encoder_dtype(d, "cpu") for d in ("float32", "bfloat16", "float16")] == ["float32"] * 3
    assert encoder_dtype("float16", "cuda:0") == "float16" and encoder_dtype("bfloat16", "cuda") == "bfloat16"
    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: True)
    assert encoder_dtype("bfloat16", "cpu") == "bfloat16" and encoder_dtype("float16", "cpu") == "float32"
    with pytest.raises(ConfigError, match="float32, bfloat16, float16"):
        encoder_dtype("int8", "cpu")


def test_pad_batch_rows_repeats_the_first_row_of_arrays_and_tensors():
    import torch

    from causalkg.core.models import pad_batch_rows

    arr = {"input_ids": np.array([[1, 2], [3, 4]]), "attention_mask": np.array([[1, 1], [1, 0]])}
    out = pad_batch_rows(arr, 4)
    assert out["input_ids"].tolist() == [[1, 2], [3, 4], [1, 2], [1, 2]]
    assert out["attention_mask"].tolist() == [[1, 1], [1, 0], [1, 1], [1, 1]]
    assert pad_batch_rows(arr, 2)["input_ids"] is arr["input_ids"]
    t = pad_batch_rows({"x": torch.tensor([[5, 6, 7]])}, 3)["x"]
    assert t.tolist() == [[5, 6, 7]] * 3


def test_a_token_budget_gives_long_buckets_fewer_rows_per_pass():
    from causalkg.linking.encoder import bucket_batches, pass_rows

    lengths = [10] * 5 + [100] * 5 + [300]
    plain = bucket_batches(lengths, 4, multiple=16)
    assert [(b, len(i)) for b, i in plain] == [(16, 4), (16, 1), (112, 4), (112, 1), (304, 1)]
    budget = bucket_batches(lengths, 4, multiple=16, tokens=256)
    assert [(b, len(i)) for b, i in budget] == [(16, 4), (16, 1), (112, 2), (112, 2), (112, 1), (304, 1)]
    assert [pass_rows(b, 4, 256) for b in (16, 112, 304)] == [4, 2, 1] and pass_rows(112, 4) == 4
    assert sorted(i for _, idx in budget for i in idx) == list(range(len(lengths)))


def test_bfloat16_vectors_are_the_same_in_any_company_and_near_float32(monkeypatch, enc):
    """In bfloat16 a matrix product's kernel (and the order of its sums) depends on the number of
    rows it multiplies (oneDNN with AMX: 33 to about 380 token rows take another path), so every
    pass over a bucket has the same rows: a text's vector does not depend on what is encoded
    beside it. Where the CPU has no native bfloat16 it is emulated here (slow, the same
    guarantee)."""
    from causalkg.core import models

    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: True)
    half = Encoder("all-MiniLM-L6-v2", device="cpu", batch_size=8, backend="auto", dtype="bfloat16")
    assert half.dtype == "bfloat16" and half.backend == "torch"  # ONNX Runtime runs float32 only
    texts = ["war", "famine", "a flood after heavy rain", "the protest that followed the election", "drought",
             *[f"a {w} that destroyed the harbour of the town" for w in ("storm", "fire", "tsunami", "riot", "flood")]]
    together = half.encode(texts)
    for i in (0, 3, 7):
        assert np.array_equal(half.encode([texts[i]])[0], together[i])
    assert np.array_equal(half.encode(texts[::-1])[::-1], together)
    full = enc.encode(texts)
    assert 0 < np.abs(together - full).max() < 2e-2
    # the float32 model the loader caches was not converted in place
    assert next(enc.model.parameters()).dtype.is_floating_point and str(next(enc.model.parameters()).dtype) == "torch.float32"


def test_pass_tokens_bounds_the_passes_and_leaves_float32_vectors_as_they_are(enc):
    """``pass_tokens`` (default FIXED_PASS_TOKENS) is the most token rows a forward pass holds:
    in float32 it changes how many passes run, not a vector (one PyTorch thread per pass)."""
    from causalkg.core.errors import ConfigError
    from causalkg.linking.encoder import FIXED_PASS_TOKENS

    assert enc.pass_tokens == FIXED_PASS_TOKENS
    texts = ["war", "famine", "a flood after heavy rain", "the protest that followed the election", "drought"]
    tight = Encoder("all-MiniLM-L6-v2", device="cpu", batch_size=8, pass_tokens=16)
    assert tight.pass_tokens == 16
    assert np.array_equal(tight.encode(texts), Encoder("all-MiniLM-L6-v2", device="cpu", batch_size=8).encode(texts))
    with pytest.raises(ConfigError, match="pass_tokens"):
        Encoder("all-MiniLM-L6-v2", device="cpu", pass_tokens=-1)


def test_bench_encoder_reads_distinct_texts_from_text_gz_and_jsonl(tmp_path):
    import gzip

    from bench.bench_encoder import parse_passes, read_texts

    (tmp_path / "s.jsonl").write_text('{"qid":"Q1","surface":"war"}\n{"qid":"Q2","surface":"war"}\n'
                                      '{"qid":"Q2","surface":"famine"}\n\n')
    with gzip.open(tmp_path / "t.txt.gz", "wt") as fh:
        fh.write("flood\ndrought\nflood\nstorm\n")
    assert read_texts(tmp_path / "s.jsonl") == ["war", "famine"]
    assert read_texts(tmp_path / "t.txt.gz") == ["flood", "drought", "storm"]
    assert read_texts(tmp_path / "t.txt.gz", limit=2) == ["flood", "drought"]
    assert parse_passes("256:2048, 4096:65536") == [(256, 2048), (4096, 65536)]
