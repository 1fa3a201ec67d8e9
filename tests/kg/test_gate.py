"""The learned sentence gate (kg.gate): training on a slice of the shipped gate data with the
real offline MiniLM encoder, the tuned threshold, marking sentences, and the extraction stage
reading only what the gate keeps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import causalkg as ck

from causalkg.core.config import load_config, to_toml
from causalkg.core.errors import ConfigError, ModelError
from causalkg.kg.extract import extract, make_gate, make_segmenter, prepare
from causalkg.kg.gate import SentenceGate, curve, threshold_for_recall, train_gate
from causalkg.kg.span_metrics import PairMatch

from tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parents[2]
SNAP = REPO / "snapshots" / "gate-training"


def _slice(path: Path, n_pos: int, n_neg: int) -> list[str]:
    pos, neg = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["source"] != "cnc":
            continue
        (pos if rec["causal"] else neg).append(line + "\n")
    return pos[:n_pos] + neg[:n_neg]


@pytest.fixture(scope="module")
def gate_training(tmp_path_factory):
    """(folder, cfg, result) of a gate trained through the Python API (``ck.train_gate``)."""
    root = tmp_path_factory.mktemp("gate")
    data = root / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(_slice(SNAP / "train.jsonl", 60, 60)), encoding="utf-8")
    (data / "val.jsonl").write_text("".join(_slice(SNAP / "val.jsonl", 20, 20)), encoding="utf-8")
    cfg = load_config(search_cwd=False, overrides={"extract.gate.train.data": str(data), "extract.device": "cpu",
                                                   "extract.gate.train.target_recall": 0.9, "paths.cache": str(root / "cache"),
                                                   # 120 sentences want a weaker regularisation than the 9,488 of the default grid
                                                   "extract.gate.train.c": [10.0, 100.0],
                                                   # a few fine-tuning steps of the real MiniLM
                                                   "extract.gate.train.steps": 6, "extract.gate.train.batch_size": 16})
    res = ck.train_gate(output=root / "causal-gate", cfg=cfg)
    assert not res.skipped
    return root / "causal-gate", cfg, res


@pytest.fixture(scope="module")
def gate_dir(gate_training):
    return gate_training[:2]


def test_threshold_keeps_the_target_share_of_positives():
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.1, 0.05])
    y = np.array([1, 0, 1, 1, 0, 1, 0])
    t = threshold_for_recall(scores, y, 0.75)
    assert t == pytest.approx(0.6)  # 3 of the 4 positives score >= 0.6
    row = curve(scores, y, [t])[0]
    assert row["recall"] == 0.75 and row["kept"] == pytest.approx(4 / 7, abs=1e-4)
    assert threshold_for_recall(scores, y, 1.0) == pytest.approx(0.1)


def test_training_tunes_a_threshold_on_validation_and_skips_when_current(gate_dir):
    folder, cfg = gate_dir
    manifest = json.loads((folder / "manifest.json").read_text())
    v = manifest["validation"]
    assert v["at_threshold"]["recall"] >= 0.9
    assert manifest["recommended"]["threshold"] == v["threshold"]
    # Trained on 120 sentences, the gate already ranks the validation sentences better than chance.
    # (chance is 0.5 on this balanced validation slice; the full data gives about 0.79)
    assert max(t["val_average_precision"] for t in v["tried"]) > 0.55
    again = train_gate(cfg, output=folder, if_missing=True)
    assert again.skipped and "current" in again.reason
    # extract.backend = auto: the encoder ran on ONNX Runtime, its export kept under paths.cache
    assert manifest["models"]["encoder_backend"] == "onnxruntime"
    assert [p.suffix for p in (cfg.path("paths.cache") / "onnx").iterdir()] == [".onnx"]


def test_the_gate_scores_alike_on_torch_and_onnxruntime(gate_dir):
    folder, cfg = gate_dir
    texts = ["The earthquake caused a tsunami that destroyed the town.", "The town hall is a red building.",
             "Prices rose after the harvest failed."]
    cues = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    torch_gate = SentenceGate(folder, device="cpu", backend="torch")
    ort_gate = SentenceGate(folder, device="cpu", backend="onnxruntime", cache_dir=cfg.path("paths.cache") / "onnx")
    assert torch_gate.describe()["encoder_backend"] == "torch" and ort_gate.describe()["encoder_backend"] == "onnxruntime"
    assert not ort_gate.encoder.onnx_exported  # training exported it
    assert np.abs(torch_gate.scores(texts, cues) - ort_gate.scores(texts, cues)).max() < 1e-5


def test_mark_sets_scores_and_decisions(gate_dir):
    folder, cfg = gate_dir
    gate = SentenceGate(folder, device="cpu")
    seg = make_segmenter(cfg)
    doc = prepare({"id": "d", "text": "The earthquake caused a tsunami that destroyed the town. "
                                        "The town hall is a red building."}, seg)
    gate.mark(doc.sentences)
    assert len(doc.sentences) == 2
    for s in doc.sentences:
        assert 0.0 <= s.gate_score <= 1.0
        assert s.is_candidate == (s.gate_score >= gate.threshold)
    assert doc.sentences[0].gate_score > doc.sentences[1].gate_score
    stiff = SentenceGate(folder, device="cpu", threshold=1.01, encoder=gate.encoder)
    stiff.mark(doc.sentences)
    assert not any(s.is_candidate for s in doc.sentences)


def test_extract_reads_only_what_the_gate_keeps(gate_dir, tmp_path):
    folder, gate_cfg = gate_dir
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": f"s{i}", "text": t}) + "\n" for i, t in enumerate([
        "Heavy rain caused floods across the region.", "The museum opens at nine."])), encoding="utf-8")
    base = {"extract.gate.model": str(folder), "extract.device": "cpu", "paths.cache": str(gate_cfg.path("paths.cache"))}
    shut = load_config(search_cwd=False, overrides={**base, "extract.gate.threshold": 1.01})
    res = extract(shut, extractor="patterns", input=inp, output=tmp_path / "a.jsonl")
    assert res.counts["sentences"] == 2 and res.counts["candidates"] == 0 and res.extractions == 0
    manifest = json.loads(res.manifest_path.read_text())
    assert manifest["models"]["gate"]["threshold"] == 1.01 and manifest["models"]["gate"]["encoder_backend"] == "onnxruntime"
    cues = load_config(search_cwd=False, overrides={**base, "extract.gate.kind": "cues"})
    res = extract(cues, extractor="patterns", input=inp, output=tmp_path / "b.jsonl")
    assert res.counts["candidates"] == 1 and res.extractions >= 1  # "caused" is a cue


def test_a_missing_gate_model_or_an_unknown_gate_is_one_clear_error(tmp_path):
    cfg = load_config(search_cwd=False, overrides={"extract.gate.model": str(tmp_path / "none")})
    with pytest.raises(ModelError, match="train-gate"):
        make_gate(cfg)
    with pytest.raises(ConfigError, match="extract.gate.kind"):
        make_gate(load_config(search_cwd=False, overrides={"extract.gate.kind": "maybe"}))
    assert make_gate(load_config(search_cwd=False, overrides={"extract.candidates_only": False})) is None


def test_pair_match_is_token_overlap_one_to_one():
    m = PairMatch()
    gold = [("the police fired tear gas", "protesters fled"), ("protesters fled", "the square emptied")]
    m.add([("police fired", "protesters fled the square"), ("tear gas", "they fled")], gold)
    d = m.as_dict()
    # The first prediction matches the first gold pair; the second shares no content token with
    # the remaining gold pair's effect ("fled" vs "square emptied"): 1 of 2 both ways.
    assert (d["matched"], d["precision"], d["recall"]) == (1.0, 0.5, 0.5)
    m.add([("a", "b")], [])
    assert m.as_dict()["precision"] == pytest.approx(1 / 3)
    _ = FIXTURES


def test_word_features_are_the_usual_tfidf():
    """WordFeatures equals scikit-learn's TfidfVectorizer with the same settings (unigrams and
    bigrams, min_df 2, sublinear tf, smoothed idf, L2 rows) on real sentences of the gate data."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from causalkg.kg.gate import WordFeatures

    texts = [json.loads(l)["text"] for l in (SNAP / "val.jsonl").read_text(encoding="utf-8").splitlines()[:300]]
    ours = WordFeatures.fit(texts[:200], min_df=2)
    ref = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit(texts[:200])
    assert ours.terms == list(ref.get_feature_names_out())
    np.testing.assert_allclose(ours.idf, ref.idf_, rtol=1e-12)
    a, b = ours.transform(texts[200:]).toarray(), ref.transform(texts[200:]).toarray()
    assert a.shape == b.shape and np.abs(a - b).max() < 1e-12
    assert ours.transform(["zzzz qqqq"]).nnz == 0  # unseen words: an all-zero row, no division by zero


def test_a_gate_of_the_older_format_asks_to_be_retrained(gate_dir, tmp_path):
    import shutil

    folder, _ = gate_dir
    old = tmp_path / "old-gate"
    shutil.copytree(folder, old)
    (old / "words.json").unlink()
    with pytest.raises(ModelError, match="older version"):
        SentenceGate(old, device="cpu")


def test_the_gate_fine_tunes_its_own_encoder_and_records_the_mix(gate_dir):
    from causalkg.linking.encoder import Encoder

    folder, _ = gate_dir
    manifest = json.loads((folder / "manifest.json").read_text())
    v = manifest["validation"]
    assert [m["mix"] for m in v["mixes"]] == [0.25, 0.5, 0.75, 1.0]
    assert v["mix"] == max(v["mixes"], key=lambda m: m["val_average_precision"])["mix"]
    assert v["dtype"] in ("float32", "bfloat16") and manifest["training"]["steps"] == 6
    assert (folder / "encoder" / "modules.json").is_file()  # a sentence-transformers folder
    text = ["Heavy rain caused the river to flood the valley."]
    tuned = Encoder(str(folder / "encoder"), device="cpu").encode(text)
    base = Encoder("all-MiniLM-L6-v2", device="cpu").encode(text)
    assert 1e-4 < float(np.abs(tuned - base).max())  # six steps moved the weights
    assert float((tuned * base).sum()) > 0.9  # ... and kept the encoder what it was


def test_gate_training_settings_are_checked(tmp_path):
    for key, value, message in (("extract.gate.train.mix", [], "gate.train.mix"),
                                ("extract.gate.train.mix", [1.5], "gate.train.mix"),
                                ("extract.gate.train.steps", 0, "gate.train.steps")):
        with pytest.raises(ConfigError, match=message):  # at load (a declared range) or at training
            train_gate(load_config(search_cwd=False, overrides={key: value}), output=tmp_path / "g")


def test_extract_dtype_sets_the_gate_encoders_format(gate_dir, monkeypatch):
    from causalkg.core import models
    from causalkg.core.errors import ConfigError
    from causalkg.kg.gate import gate_dtype

    folder, cfg = gate_dir
    picks = {d: gate_dtype(load_config(search_cwd=False, overrides={"extract.dtype": d}))
             for d in ("float32", "bfloat16", "float16", "auto", "int8", "int8-per-channel")}
    assert picks == {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "auto": "float16",
                     "int8": "float32", "int8-per-channel": "float32"}
    with pytest.raises(ConfigError, match="extract.dtype must be one of"):
        gate_dtype(load_config(search_cwd=False, overrides={"extract.dtype": "fp8"}))
    texts = ["The earthquake caused a tsunami that destroyed the town.", "The town hall is a red building.",
             "Prices rose after the harvest failed."]
    cues = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: False)
    assert SentenceGate(folder, device="cpu", dtype="bfloat16").describe()["encoder_dtype"] == "float32"
    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: True)  # emulated where it is not
    half = SentenceGate(folder, device="cpu", dtype="bfloat16", backend="auto", cache_dir=cfg.path("paths.cache") / "onnx")
    assert half.describe()["encoder_dtype"] == "bfloat16" and half.describe()["encoder_backend"] == "torch"
    full = SentenceGate(folder, device="cpu")
    assert np.abs(half.scores(texts, cues) - full.scores(texts, cues)).max() < 0.02


def _val_sentences(cfg, seg) -> list:
    """The validation sentences the gate was trained with, as segmenter sentences (one each)."""
    out = []
    for line in (cfg.path("extract.gate.train.data") / "val.jsonl").read_text(encoding="utf-8").splitlines():
        sents = prepare({"id": "v", "text": json.loads(line)["text"]}, seg).sentences
        out += sents[:1]
    return out


def test_training_stores_a_first_pass_that_keeps_every_validation_pass(gate_dir):
    from causalkg.kg.gate import first_pass_block

    folder, cfg = gate_dir
    block = json.loads((folder / "manifest.json").read_text())["first_pass"]
    assert block["keep"] == 1.0 and block["gate_passes_kept"] == block["gate_passes"] > 0
    seg = make_segmenter(cfg)
    sents = _val_sentences(cfg, seg)
    probe = SentenceGate(folder, device="cpu")
    probe.mark(sents)
    # A stricter gate than the tiny one's tuned threshold (which passes most of these 40), so
    # that its first pass has sentences to stop: the one the median score gives.
    strict = float(np.median([s.gate_score for s in sents]))
    full = SentenceGate(folder, device="cpu", encoder=probe.encoder, threshold=strict)
    full.mark(sents)
    passed = [s.gate_pass for s in sents]
    scores = [s.gate_score for s in sents]
    cues = np.asarray([1.0 if s.cues else 0.0 for s in sents])
    fp = first_pass_block(full.word_logits([s.text for s in sents], cues), np.asarray(passed), 1.0)
    assert fp["gate_passes_kept"] == fp["gate_passes"] == sum(passed)
    first = SentenceGate(folder, device="cpu", encoder=probe.encoder, threshold=strict, first_pass=fp["threshold"])
    first.mark(sents)
    # The first pass keeps every sentence the whole gate passes, with the same score ...
    for s, p, sc in zip(sents, passed, scores):
        if p:
            assert s.gate_pass and s.gate_score == sc and s.gate_reason == "gate"
    # ... and spares the encoder the ones it stops, which are recorded as such.
    stopped = [s for s in sents if s.gate_reason == "first pass"]
    assert stopped and all(s.gate_score is None and not s.gate_pass for s in stopped)
    assert first.encoded == len(sents) - len(stopped) < full.encoded == len(sents)
    assert first.kept == full.kept


def test_a_gate_without_a_first_pass_gets_it_from_its_validation_file_once(gate_dir, tmp_path):
    import shutil

    from causalkg.kg.gate import load_first_pass

    folder, cfg = gate_dir
    old = tmp_path / "causal-gate"
    shutil.copytree(folder, old)
    manifest = json.loads((old / "manifest.json").read_text())
    stored = manifest.pop("first_pass")
    (old / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    gate = SentenceGate(old, device="cpu")
    seg = make_segmenter(cfg)
    val = cfg.path("extract.gate.train.data") / "val.jsonl"
    cache = tmp_path / "cache"
    assert load_first_pass(gate, keep=1.0, validation=val, segmenter=seg, cache_dir=cache) == (
        stored["threshold"], "validation")
    assert load_first_pass(gate, keep=1.0, validation=val, segmenter=seg, cache_dir=cache) == (
        stored["threshold"], "validation (cached)")
    assert load_first_pass(SentenceGate(folder, device="cpu", encoder=gate.encoder), keep=1.0, validation=None,
                           segmenter=seg) == (stored["threshold"], "model manifest")
    with pytest.raises(ModelError, match="gate.first_pass = false"):
        load_first_pass(gate, keep=1.0, validation=SNAP / "test.jsonl", segmenter=seg)


def test_extract_with_the_first_pass_reads_what_the_gate_passes(gate_dir, tmp_path):
    folder, gate_cfg = gate_dir
    base = {"extract.gate.model": str(folder), "extract.device": "cpu", "paths.cache": str(gate_cfg.path("paths.cache")),
            "extract.gate.train.data": str(gate_cfg.path("extract.gate.train.data"))}
    wiki = FIXTURES / "extract" / "wiki_docs.jsonl"
    runs = {}
    for on in (False, True):
        cfg = load_config(search_cwd=False, overrides={**base, "extract.gate.first_pass": on})
        res = extract(cfg, extractor="patterns", input=wiki, output=tmp_path / f"{on}.jsonl")
        runs[on] = (res, json.loads(res.manifest_path.read_text())["models"]["gate"])
    (off, off_gate), (on, on_gate) = runs[False], runs[True]
    assert off_gate["first_pass"] is None and on_gate["first_pass_source"] == "model manifest"
    assert on.counts["sentences"] == off.counts["sentences"]
    assert on.counts["candidates"] <= off.counts["candidates"]
    with pytest.raises(ConfigError, match="gate_first_pass_keep"):
        load_config(search_cwd=False, overrides={"extract.gate_first_pass_keep": 0.0})


def test_ck_train_gate_returns_a_result_that_renders_itself(gate_training, cli, in_tmp):
    folder, cfg, res = gate_training
    v = res.validation
    assert type(res) is ck.GateTraining and res.output == folder and res.detail.manifest["stage"] == "kg.train-gate"
    assert str(res).splitlines() == [
        f"trained the sentence gate in {res.seconds:.0f} s; saved to {folder}",
        f"validation ({v['sentences']} sentences, {v['causal']} causal): threshold {v['threshold']:.4f} keeps "
        f"{100 * v['at_threshold']['recall']:.1f}% of causal sentences and {100 * v['at_threshold']['kept']:.1f}% of all "
        f"(mix {v['mix']}, C {v['c']}, {v['words']} word n-grams)"]
    assert v["sentences"] == 40 and json.loads(res.to_table("json"))["validation"]["threshold"] == v["threshold"]
    again = ck.train_gate(output=folder, if_missing=True, cfg=cfg)
    assert again.skipped and again.to_table("csv").splitlines() == ["line", f"nothing to do: {again.reason}"]
    # the command prints the same result
    (in_tmp / "gate.toml").write_text(to_toml(cfg.to_dict()), encoding="utf-8")  # the fixture's settings
    r = cli("kg", "train-gate", "--config", in_tmp / "gate.toml", "--output", folder, "--if-missing")
    assert r.code == 0 and r.out == str(again) + "\n"
def test_a_gate_of_the_first_k_encoder_layers_trains_and_runs_with_k(gate_dir, tmp_path):
    """extract.gate.train.encoder_layers = 2: the encoder keeps its first two transformer layers,
    is fine-tuned and saved that way, the manifest records it, and the loaded gate runs two
    layers on PyTorch and on ONNX Runtime alike. 0 (the default) keeps all six and the training
    fingerprint the gates trained before had."""
    import shutil

    from safetensors import safe_open

    full_folder, cfg = gate_dir
    small = load_config(search_cwd=False, overrides={**{k: cfg.get(k) for k in (
        "extract.gate.train.data", "extract.gate.train.target_recall", "extract.gate.train.c", "extract.gate.train.steps",
        "extract.gate.train.batch_size")}, "extract.device": "cpu", "paths.cache": str(cfg.path("paths.cache")),
        "extract.gate.train.encoder_layers": 2})
    res = train_gate(small, output=tmp_path / "gate-2")
    folder = res.output
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["training"]["encoder_layers"] == 2 and manifest["models"]["encoder_layers"] == 2
    full = json.loads((full_folder / "manifest.json").read_text())
    assert "encoder_layers" not in full["training"] and full["models"]["encoder_layers"] == 6
    assert manifest["training"]["fingerprint"] != full["training"]["fingerprint"]
    assert json.loads((folder / "encoder" / "config.json").read_text())["num_hidden_layers"] == 2
    with safe_open(str(folder / "encoder" / "model.safetensors"), "pt") as fh:
        layers = {int(k.split("encoder.layer.")[1].split(".")[0]) for k in fh.keys() if "encoder.layer." in k}
    assert layers == {0, 1}  # the weights of layers 2-5 are not saved
    texts = ["The earthquake caused a tsunami that destroyed the town.", "The town hall is a red building."]
    cues = np.array([1.0, 0.0], dtype=np.float32)
    on_torch = SentenceGate(folder, device="cpu", backend="torch")
    on_ort = SentenceGate(folder, device="cpu", backend="onnxruntime", cache_dir=cfg.path("paths.cache") / "onnx")
    assert len(on_torch.encoder.model[0].auto_model.encoder.layer) == 2
    assert on_torch.describe()["encoder_layers"] == on_ort.describe()["encoder_layers"] == 2
    assert SentenceGate(full_folder, device="cpu").describe()["encoder_layers"] == 6
    # ONNX Runtime runs the two-layer export: the same scores as PyTorch's two layers
    assert np.abs(on_torch.scores(texts, cues) - on_ort.scores(texts, cues)).max() < 1e-5
    assert manifest["validation"]["at_threshold"]["recall"] >= 0.9
    # a manifest that says another depth than the saved encoder is refused
    odd = tmp_path / "odd"
    shutil.copytree(folder, odd)
    manifest["training"]["encoder_layers"] = 3
    (odd / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match="3 encoder layers"):
        SentenceGate(odd, device="cpu")
    with pytest.raises(ConfigError, match="encoder_layers = 7, but encoder 'all-MiniLM-L6-v2' has 6 layers"):
        train_gate(load_config(search_cwd=False, overrides={"extract.gate.train.encoder_layers": 7, "extract.device": "cpu",
                                                            "extract.gate.train.steps": 1}), output=tmp_path / "g7")
    with pytest.raises(ConfigError, match="encoder_layers"):
        load_config(search_cwd=False, overrides={"extract.gate.train.encoder_layers": -1})
