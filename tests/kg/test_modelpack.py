"""The shipped model package (kg.modelpack): a tiny package built here from tiny random models
with real training manifests, installed with its float16 weights back in float32, found current
by the trainers' ``--if-missing``, refused with the file's name when a file is corrupted, and
left alone when installed again; ``causalkg kg install-models`` on the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from causalkg.cli import main
from causalkg.core.config import load_config
from causalkg.core.errors import ModelError
from causalkg.core.manifest import write_manifest
from causalkg.kg import gate as gate_mod
from causalkg.kg import train_qa as qa_mod
from causalkg.kg.modelpack import build_model_package, install_models
from causalkg.testing.tiny_models import tiny_qa_model, tiny_sentence_encoder


def _cfg(root: Path):
    return load_config(search_cwd=False, overrides={"extract.gate.model": str(root / "models" / "causal-gate"),
                                                    "extract.qa.model": str(root / "models" / "causal-qa"),
                                                    "extract.model_package": str(root / "pack")})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two model folders laid out as the trainers write them (tiny weights, manifests holding the
    training fingerprints of the default plans), and a package built from them."""
    root = tmp_path_factory.mktemp("modelpack")
    cfg = _cfg(root)
    gate = root / "trained" / "causal-gate"
    tiny_sentence_encoder(gate / "encoder")
    rng = np.random.default_rng(0)
    np.savez(gate / "gate.npz", w=rng.normal(size=33).astype(np.float32), w_words=rng.normal(size=3),
             idf=np.ones(3), b=np.float64(0.1))
    (gate / "words.json").write_text(json.dumps(["because", "led to", "caused"]), encoding="utf-8")
    write_manifest(gate, {"stage": gate_mod.STAGE, "training": gate_mod.gate_plan(cfg),
                          "recommended": {"threshold": 0.5}})
    qa = tiny_qa_model(root / "trained" / "causal-qa")
    (qa / "onnx").mkdir()
    (qa / "onnx" / "model.onnx").write_bytes(b"an export cache, never shipped")
    plan = {k: v for k, v in qa_mod.training_plan(cfg).items() if k != "base_model_path"}
    write_manifest(qa, {"stage": qa_mod.STAGE, "training": plan, "recommended": {"null_threshold": 1.0}})
    built = build_model_package({"causal-gate": gate, "causal-qa": qa}, root / "pack", version="0.0.1",
                                model_card="# tiny test package\n")
    return root, built


def _tensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path))


def test_package_stores_float16_weights_with_checksums_and_no_onnx_cache(trained):
    root, built = trained
    pack = root / "pack"
    manifest = json.loads((pack / "MANIFEST.json").read_text())
    assert manifest["version"] == "0.0.1" and built.files == len(manifest["files"]) + 1
    assert sorted(manifest["float16"]) == ["causal-gate/encoder/model.safetensors", "causal-qa/model.safetensors"]
    assert not any("onnx" in f for f in manifest["files"])
    assert {"causal-gate/gate.npz", "causal-gate/words.json", "causal-qa/tokenizer.json", "causal-qa/config.json",
            "causal-qa/manifest.json", "MODEL_CARD.md"} <= set(manifest["files"])
    import torch

    floats = [t for t in _tensors(pack / "causal-qa" / "model.safetensors").values() if t.is_floating_point()]
    assert floats and all(t.dtype == torch.float16 for t in floats)


def test_install_writes_float32_models_that_the_trainers_find_current(trained, tmp_path):
    import torch

    root, _ = trained
    cfg = _cfg(tmp_path)  # installs into tmp_path/models from tmp_path/pack
    (tmp_path / "pack").symlink_to(root / "pack")
    res = install_models(cfg)
    # this package holds two of the three models: the third is named, not an error
    assert set(res.installed) == {"causal-gate", "causal-qa"} and set(res.skipped) == {"causal-verifier"}
    assert "holds no causal-verifier" in res.render()
    qa = tmp_path / "models" / "causal-qa"
    got = _tensors(qa / "model.safetensors")
    orig = _tensors(root / "trained" / "causal-qa" / "model.safetensors")
    assert set(got) == set(orig)
    for k, t in got.items():
        if t.is_floating_point():
            assert t.dtype == torch.float32
            assert torch.equal(t, orig[k].to(torch.float16).to(torch.float32))
    assert not (qa / "onnx").exists()
    assert (tmp_path / "models" / "causal-gate" / "gate.npz").read_bytes() == (root / "trained" / "causal-gate" / "gate.npz").read_bytes()
    assert json.loads((qa / "manifest.json").read_text())["installed_from"]["version"] == "0.0.1"
    # The training manifests travel unchanged: --if-missing training is a no-op.
    assert qa_mod.train_qa(cfg, if_missing=True).skipped
    assert gate_mod.train_gate(cfg, if_missing=True).skipped
    # The installed QA model loads as a transformers model.
    from transformers import AutoModelForQuestionAnswering

    assert AutoModelForQuestionAnswering.from_pretrained(qa).dtype == torch.float32


def test_install_twice_skips_and_a_new_package_reinstalls(trained, tmp_path):
    root, _ = trained
    cfg = load_config(search_cwd=False, overrides={"extract.gate.model": str(tmp_path / "g"), "extract.qa.model": str(tmp_path / "q"),
                                                   "extract.model_package": str(root / "pack")})
    assert len(install_models(cfg).installed) == 2
    before = (tmp_path / "q" / "model.safetensors").stat().st_mtime_ns
    again = install_models(cfg)
    assert not again.installed and set(again.skipped) == {"causal-gate", "causal-qa", "causal-verifier"}
    assert "already installed from this package" in again.render()
    assert (tmp_path / "q" / "model.safetensors").stat().st_mtime_ns == before
    assert len(install_models(cfg, force=True).installed) == 2
    # A model folder trained here (no record of the package) is replaced by the package's; a
    # folder holding a model causalkg did not make is left alone.
    (tmp_path / "g" / "manifest.json").write_text(json.dumps({"stage": gate_mod.STAGE}), encoding="utf-8")
    (tmp_path / "q" / "manifest.json").unlink()
    res = install_models(cfg)
    assert list(res.installed) == ["causal-gate"] and "not made by causalkg" in res.skipped["causal-qa"]
    assert not (tmp_path / "q" / "manifest.json").exists()
    assert not list(tmp_path.glob(".*"))  # no temporary folders left beside the models


def test_a_corrupted_file_is_refused_with_its_name(trained, tmp_path):
    import shutil

    root, _ = trained
    pack = tmp_path / "pack"
    shutil.copytree(root / "pack", pack)
    words = pack / "causal-gate" / "words.json"
    words.write_text(words.read_text() + " ", encoding="utf-8")
    cfg = load_config(search_cwd=False, overrides={"extract.gate.model": str(tmp_path / "g"), "extract.qa.model": str(tmp_path / "q")})
    with pytest.raises(ModelError, match=r"words\.json does not match its SHA-256") as err:
        install_models(cfg, package=pack)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "g").exists() and not (tmp_path / "q").exists()
    (pack / "causal-qa" / "config.json").unlink()
    words.write_text(words.read_text()[:-1], encoding="utf-8")
    with pytest.raises(ModelError, match=r"causal-qa/config\.json is missing"):
        install_models(cfg, package=pack)
    with pytest.raises(ModelError, match="no model package there"):
        install_models(cfg, package=tmp_path / "nowhere")


def test_cli_installs_then_skips_and_reports_a_bad_file(trained, tmp_path, capsys):
    root, _ = trained
    sets = ["--set", f"extract.gate.model={tmp_path / 'g'}", "--set", f"extract.qa.model={tmp_path / 'q'}"]
    assert main(["kg", "install-models", "--package", str(root / "pack"), *sets]) == 0
    out = capsys.readouterr().out
    assert "version 0.0.1" in out and f"causal-qa: installed to {tmp_path / 'q'}" in out
    assert main(["kg", "install-models", "--package", str(root / "pack"), *sets]) == 0
    assert "causal-gate: " in capsys.readouterr().out and (tmp_path / "g" / "gate.npz").is_file()
    import shutil

    shutil.copytree(root / "pack", tmp_path / "bad")
    (tmp_path / "bad" / "causal-qa" / "tokenizer.json").write_text("{}", encoding="utf-8")
    assert main(["kg", "install-models", "--package", str(tmp_path / "bad"), "--force", *sets]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "tokenizer.json does not match its SHA-256" in err[0]


def _with_validation(src: Path, dst: Path, validation: dict, **extra) -> Path:
    """A copy of a trained folder whose manifest holds the validation figures a card states."""
    import shutil

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("onnx"))
    manifest = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
    write_manifest(dst, {**manifest, "validation": validation, **extra})
    return dst


def test_build_modelpack_command_packs_three_models_with_a_card_and_names_a_missing_one(trained, tmp_path, capsys):
    root, _ = trained
    at = {"recall": 0.95, "kept": 0.36}
    gate = _with_validation(root / "trained" / "causal-gate", tmp_path / "gate",
                            {"threshold": 0.34, "at_threshold": at, "sentences": 805})
    gm = json.loads((gate / "manifest.json").read_text())
    write_manifest(gate, {**gm, "training": {**gm["training"], "target_recall": 0.95}})
    qa = _with_validation(root / "trained" / "causal-qa", tmp_path / "qa",
                          {"null_threshold": 2.0, "at_tuned_threshold": {"f1": 86.7, "exact": 82.2, "questions": 2756}})
    verifier = tmp_path / "verifier"
    tiny_sentence_encoder(verifier / "encoder")
    np.savez(verifier / "verifier.npz", w=np.zeros((3, 32), np.float32))
    write_manifest(verifier, {"stage": "kg.train-verifier", "validation": {
        "threshold": 0.35, "at_threshold": {"accuracy": 0.87, "macro_f1": 0.83, "pairs": 1039}}})
    args = ["kg", "build-modelpack", "--gate", str(gate), "--qa", str(qa), "--verifier", str(verifier),
            "--out", str(tmp_path / "pack")]
    assert main(args) == 0
    assert "model package " in capsys.readouterr().out
    manifest = json.loads((tmp_path / "pack" / "MANIFEST.json").read_text())
    assert manifest["models"] == ["causal-gate", "causal-qa", "causal-verifier"]
    assert "causal-verifier/encoder/model.safetensors" in manifest["float16"]
    card = (tmp_path / "pack" / "MODEL_CARD.md").read_text()
    assert "macro F1 0.83" in card and "Not measured for this build" in card and "MB in all" in card
    cfg = load_config(search_cwd=False, overrides={"extract.gate.model": str(tmp_path / "m" / "g"),
                                                   "extract.qa.model": str(tmp_path / "m" / "q"),
                                                   "kg.verifier.model": str(tmp_path / "m" / "v")})
    assert set(install_models(cfg, package=tmp_path / "pack").installed) == {"causal-gate", "causal-qa", "causal-verifier"}
    # A folder that holds no trained model is named, with the trainer to run.
    assert main([*args[:-2], "--verifier", str(tmp_path / "nothing"), "--out", str(tmp_path / "pack2")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "nothing holds no trained causal-verifier" in err and "train-verifier" in err
    assert not (tmp_path / "pack2").exists()
