"""One device and model-path resolver: run.device is the default, a stage's own key overrides it."""

from __future__ import annotations

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError
from causalkg.core.models import local_model_path, resolve_device, resolve_encoder_path, stage_device

STAGE_KEYS = ("linking.device", "extract.device", "eval.precision.device", "eval.sqc.device",
              "eval.consistency.device", "eval.soft.device")


def test_every_stage_follows_run_device_by_default():
    cfg = load_config(overrides={"run.device": "cpu"}, search_cwd=False)
    assert [stage_device(cfg, k) for k in STAGE_KEYS] == ["cpu"] * len(STAGE_KEYS)
    assert stage_device(load_config(search_cwd=False), "linking.device") == "auto"


def test_a_stage_key_overrides_run_device():
    cfg = load_config(overrides={"run.device": "cpu", "eval.sqc.device": "cuda:1"}, search_cwd=False)
    assert stage_device(cfg, "eval.sqc.device") == "cuda:1"
    assert stage_device(cfg, "eval.soft.device") == "cpu"


def test_a_device_that_names_nothing_is_refused_with_the_key():
    cfg = load_config(overrides={"extract.device": "gpu0"}, search_cwd=False)
    with pytest.raises(ConfigError, match=r"extract.device = 'gpu0' names no device"):
        stage_device(cfg, "extract.device")
    cfg = load_config(overrides={"run.device": "tpu"}, search_cwd=False)
    with pytest.raises(ConfigError, match=r"run.device = 'tpu'"):
        stage_device(cfg, "linking.device")


def test_resolve_device():
    import torch

    assert resolve_device("cpu") == "cpu" and resolve_device("cuda:1") == "cuda:1"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")


def test_model_paths(tmp_path):
    offline = resolve_encoder_path("all-MiniLM-L6-v2")
    assert offline != "all-MiniLM-L6-v2" and (tmp_path.__class__(offline) / "config.json").is_file()
    assert resolve_encoder_path("some/hub-model") == "some/hub-model"
    (tmp_path / "models" / "qa").mkdir(parents=True)
    assert local_model_path("models/qa", tmp_path) == (str(tmp_path / "models" / "qa"), True)
    assert local_model_path("models/none", tmp_path) == ("models/none", False)


def test_training_files_names_the_model_and_the_key(tmp_path):
    from causalkg.core.config import load_config
    from causalkg.core.errors import ConfigError
    from causalkg.core.models import training_files

    cfg = load_config(search_cwd=False)
    (tmp_path / "train.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError, match="gate training data not found: .*val.jsonl") as e:
        training_files(cfg, "extract.gate.train.data", tmp_path, "gate")
    assert "extract.gate.train.data" in e.value.hint
    (tmp_path / "val.jsonl").write_text("{}\n")
    assert training_files(cfg, "extract.gate.train.data", tmp_path, "gate") == {
        "train": tmp_path / "train.jsonl", "val": tmp_path / "val.jsonl"}


def test_free_heap_is_released_where_the_c_library_is_glibc():
    """``release_free_heap`` calls glibc's malloc_trim (the link build calls it after each chunk
    of names it embeds) and says False, doing nothing, under another C library."""
    import platform

    from causalkg.core.models import release_free_heap

    assert release_free_heap() is (platform.libc_ver()[0] == "glibc")
