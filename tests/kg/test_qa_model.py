"""Span decoding (kg.qa_decode) and training (kg.train_qa) on tiny models.

The tiny models test mechanics (loading, batching, windows, offsets, thresholds, saving,
fingerprints); never quality. The benchmark measures quality.
"""

from __future__ import annotations

import json
import shutil

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.manifest import read_manifest
from causalkg.testing.tiny_models import tiny_qa_model
from causalkg.kg import qa_data
from causalkg.kg.qa_decode import QAModel, clean_span, trim_questions
from causalkg.kg.train_qa import model_is_current, recommended_null_threshold, train_qa, training_plan

from tests.conftest import FIXTURES

FIX = FIXTURES / "extract"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_qa_model(tmp_path_factory.mktemp("tiny") / "qa", seed=3)


@pytest.fixture(scope="module")
def gold():
    return list(qa_data.read_gold(FIX / "gold_sentences.jsonl"))


def test_answers_slice_their_context_and_respect_max_answer_tokens(tiny_dir, gold):
    qa = QAModel(str(tiny_dir), max_answer_tokens=5, batch_size=4)
    contexts = [r["text"] for r in gold]
    answers = qa.answer(["What is the cause?"] * len(contexts), contexts)
    assert len(answers) == len(contexts)
    got = [a for a in answers if a is not None]
    assert len(got) >= len(contexts) // 2
    for a, ctx in zip(answers, contexts):
        if a is None:
            continue
        assert ctx[a.start : a.end] == a.text and a.text == a.text.strip()
        assert 0.0 <= a.score <= 1.0
        # Spans are cut to 5 word pieces, then widened to whole words: at most 5 words.
        assert len(a.text.split()) <= 5


def test_span_edges_are_whole_words_without_stray_punctuation():
    # Real sentences of the snapshot corpus, with the spans the decoder once returned.
    text = "Second English Civil War (1648\u20131649)"
    assert clean_span(text, len(text) - 1, len(text)) is None  # ")" alone is no answer
    text = "SkyWest Airlines (operating as United Express) Flight 5741 (a Embraer 120) collided."
    end = text.index(" (a Embraer")
    assert clean_span(text, 0, end + 2) == (0, end)  # a trailing " (" is trimmed
    assert clean_span(text, 9, 17) == (8, 16)  # widened to whole words: "Airlines"
    assert clean_span(text, 45, 60) == (47, 58)  # ") Flight 5741 (" -> "Flight 5741"
    assert clean_span("  , ;  ", 0, 7) is None


def test_questions_are_cut_alike_for_training_and_extraction(tiny_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    long_q = "What caused " + "the long and winding clause " * 40 + "?"
    cut, short = trim_questions(tok, [long_q, "What caused the flood?"], 16)
    assert short == "What caused the flood?"
    assert long_q.startswith(cut) and len(tok(cut, add_special_tokens=False)["input_ids"]) == 16
    assert QAModel(str(tiny_dir), max_question_tokens=16)._trim_questions([long_q]) == [cut]


def test_long_contexts_are_read_in_windows_and_identical_pairs_once(tiny_dir, gold):
    qa = QAModel(str(tiny_dir), max_seq_length=64, doc_stride=16, max_question_tokens=16, batch_size=8)
    long_ctx = " ".join(r["text"] for r in gold)  # about 3,000 characters: many windows
    short = "Floods followed the storm."
    answers = qa.answer(["What caused the protest?", "What caused the protest?", "What is the cause?"],
                        [long_ctx, long_ctx, short])
    assert qa.features > 10  # the long context became many windows, computed once
    first_features = qa.features
    assert answers[0] == answers[1]
    a = answers[0]
    assert a is not None and long_ctx[a.start : a.end] == a.text
    qa.answer(["What is the cause?"], [short])
    assert qa.features == first_features + 1
    assert qa.answer([], []) == []


def test_long_questions_are_cut_not_fatal(tiny_dir):
    qa = QAModel(str(tiny_dir), max_seq_length=64, doc_stride=8, max_question_tokens=16)
    question = "What did " + "the very long cause " * 40 + "lead to?"
    (a,) = qa.answer([question], ["The storm caused damage to the harbour."])
    assert a is None or "The storm caused damage to the harbour."[a.start : a.end] == a.text


def test_bad_windows_and_missing_models_fail_clearly(tiny_dir, tmp_path):
    with pytest.raises(ConfigError, match="doc_stride"):
        QAModel(str(tiny_dir), max_seq_length=64, max_question_tokens=16, doc_stride=60)
    with pytest.raises(ModelError, match="not found: no folder .*no such model in the local Hugging Face cache"):
        QAModel("models/does-not-exist", base_dir=tmp_path)
    (tmp_path / "broken").mkdir()
    with pytest.raises(ModelError, match="cannot load the QA model in"):
        QAModel("broken", base_dir=tmp_path)


def _train_cfg(tmp_path, **over):
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    recs = [json.loads(l) for l in (FIX / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines()]
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs[:18]), encoding="utf-8")
    (data / "val.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs[18:]), encoding="utf-8")
    overrides = {"extract.qa.train.data": str(data), "extract.qa.train.steps": 4, "extract.qa.train.batch_size": 8,
                 "extract.qa.train.eval_every": 2, "extract.qa.train.selection_questions": 10,
                 "extract.qa.train.learning_rate": 0.001, "extract.device": "cpu", "extract.qa.batch_size": 16}
    overrides.update(over)
    return load_config(search_cwd=False, overrides=overrides)


def test_train_saves_a_loadable_model_with_manifest_and_if_missing_skips(tiny_dir, tmp_path):
    cfg = _train_cfg(tmp_path)
    out = tmp_path / "models" / "causal-qa"
    res = train_qa(cfg, output=out, base_model=str(tiny_dir))
    assert not res.skipped and res.steps == 4
    for name in ("config.json", "model.safetensors", "tokenizer.json", "manifest.json"):
        assert (out / name).is_file(), name
    man = read_manifest(out)
    assert man["stage"] == "kg.train-qa"
    assert man["training"]["steps"] == 4 and len(man["training"]["train_sha256"]) == 64
    assert [h["step"] for h in man["validation"]["history"]] == [2, 4]
    assert 0 <= man["validation"]["at_tuned_threshold"]["f1"] <= 100
    assert man["validation"]["selected_step"] in (2, 4)
    assert recommended_null_threshold(out) == man["recommended"]["null_threshold"]
    # It loads like any QA model.
    (a,) = QAModel(str(out)).answer(["What is the cause?"], ["Floods followed the storm."])
    assert a is None or a.text in "Floods followed the storm."

    again = train_qa(cfg, output=out, base_model=str(tiny_dir), if_missing=True)
    assert again.skipped and "is current" in again.reason
    current, why = model_is_current(out, "another-fingerprint")
    assert not current and "other data or settings" in why
    # Different settings: --if-missing trains again.
    cfg2 = _train_cfg(tmp_path, **{"extract.qa.train.steps": 2, "extract.qa.train.eval_every": 1})
    res2 = train_qa(cfg2, output=out, base_model=str(tiny_dir), if_missing=True)
    assert not res2.skipped and read_manifest(out)["training"]["steps"] == 2
    assert not list(out.parent.glob(".causal-qa.*"))  # no temporary folders left behind


def test_if_missing_leaves_a_foreign_model_alone(tiny_dir, tmp_path):
    cfg = _train_cfg(tmp_path)
    foreign = tmp_path / "their-model"
    shutil.copytree(tiny_dir, foreign)
    res = train_qa(cfg, output=foreign, base_model=str(tiny_dir), if_missing=True)
    assert res.skipped and "not trained by causalkg" in res.reason


def test_training_data_must_exist(tmp_path):
    cfg = load_config(search_cwd=False, overrides={"extract.qa.train.data": str(tmp_path / "nothing")})
    with pytest.raises(ConfigError, match="QA training data not found"):
        train_qa(cfg, output=tmp_path / "m")


def test_inference_formats_resolve_by_device():
    from causalkg.kg.qa_decode import inference_dtype

    assert inference_dtype("auto", "cpu") == "int8" and inference_dtype("auto", "cuda:0") == "float16"
    assert inference_dtype("int8", "cuda") == "float32"  # dynamic quantization is CPU-only
    assert inference_dtype("float16", "cpu") == "float32" and inference_dtype("bfloat16", "cuda") == "bfloat16"
    # bfloat16 on a CPU only where the CPU multiplies it natively (else emulated, slower than float32)
    from causalkg.core.models import cpu_has_native_bf16

    assert inference_dtype("bfloat16", "cpu") == ("bfloat16" if cpu_has_native_bf16() else "float32")
    with pytest.raises(ConfigError, match="extract.dtype must be one of"):
        inference_dtype("int4", "cpu")


def test_int8_model_quantizes_every_linear_layer_and_answers_like_float32(tiny_dir, gold):
    import torch

    f32 = QAModel(str(tiny_dir), batch_size=4, device="cpu")
    q8 = QAModel(str(tiny_dir), batch_size=4, device="cpu", dtype="int8")
    assert f32.dtype == "float32" and q8.dtype == "int8"
    linear = [m for m in f32.model.modules() if isinstance(m, torch.nn.Linear)]
    still_float = [m for m in q8.model.modules() if type(m) is torch.nn.Linear]
    assert linear and not still_float
    contexts = [r["text"] for r in gold]
    a, b = (m.answer(["What is the cause?"] * len(contexts), contexts) for m in (f32, q8))
    # The same contract (spans slice their context); values may move a little with int8.
    for ans, ctx in zip(b, contexts):
        assert ans is None or ctx[ans.start : ans.end] == ans.text
    assert sum(x is not None for x in b) >= len(contexts) // 2
    assert sum(x is not None for x in a) >= len(contexts) // 2


def test_onnx_runtime_answers_like_pytorch_and_exports_once(tiny_dir, gold):
    from causalkg.kg.onnx_runtime import resolve_backend

    assert resolve_backend("auto", "cpu") == "onnxruntime" and resolve_backend("auto", "cuda") == "torch"
    with pytest.raises(ConfigError, match="extract.backend must be one of"):
        resolve_backend("tensorrt", "cpu")
    with pytest.raises(ConfigError, match="runs on the CPU"):
        resolve_backend("onnxruntime", "cuda:0")
    pt = QAModel(str(tiny_dir), batch_size=4, device="cpu", backend="torch")
    ort = QAModel(str(tiny_dir), batch_size=4, device="cpu", backend="onnxruntime")
    assert (pt.backend, ort.backend) == ("torch", "onnxruntime")
    exported = tiny_dir / "onnx" / "model.onnx"
    stamp = exported.stat().st_mtime_ns
    QAModel(str(tiny_dir), device="cpu", backend="onnxruntime")  # the same weights: no new export
    assert exported.stat().st_mtime_ns == stamp
    contexts = [r["text"] for r in gold]
    a = pt.answer(["What is the cause?"] * len(contexts), contexts)
    b = ort.answer(["What is the cause?"] * len(contexts), contexts)
    # The same graph in float32: the same spans, scores equal to float rounding.
    assert [(x.start, x.end) if x else None for x in a] == [(y.start, y.end) if y else None for y in b]
    for x, y in zip(a, b):
        if x is not None:
            assert y.score == pytest.approx(x.score, abs=1e-4) and y.null_diff == pytest.approx(x.null_diff, abs=1e-3)


def test_n_best_answers_do_not_overlap_and_start_with_the_best(tiny_dir, gold):
    qa = QAModel(str(tiny_dir), max_answer_tokens=8, batch_size=4)
    contexts = [r["text"] for r in gold]
    questions = ["What is the cause?"] * len(contexts)
    one = qa.answer(questions, contexts)
    three = qa.answers(questions, contexts, 3)
    assert len(three) == len(contexts)
    assert any(len(a) > 1 for a in three)  # sentences of a dozen words hold more than one span
    for best, alts, ctx in zip(one, three, contexts):
        assert len(alts) <= 3
        assert (alts[0] if alts else None) == best  # the first is exactly ``answer``'s
        for i, a in enumerate(alts):
            assert ctx[a.start : a.end] == a.text
            for b in alts[i + 1 :]:
                assert a.end <= b.start or b.end <= a.start  # no two overlap
        # best first: the margin over the null answer never rises along the list
        assert all(x.null_diff >= y.null_diff - 1e-6 for x, y in zip(alts, alts[1:]))
    assert qa.answers([], [], 2) == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_training_in_either_dtype_records_it_and_saves_float32_weights(tiny_dir, tmp_path, dtype):
    cfg = _train_cfg(tmp_path, **{"extract.qa.train.dtype": dtype})
    out = tmp_path / "models" / f"qa-{dtype}"
    train_qa(cfg, output=out, base_model=str(tiny_dir))
    man = read_manifest(out)
    assert man["models"]["dtype"] == dtype and man["training"]["dtype"] == dtype
    # bfloat16 is computed under autocast: the saved weights stay float32
    import torch
    from safetensors.torch import load_file

    assert {t.dtype for t in load_file(out / "model.safetensors").values()} == {torch.float32}


def test_an_unknown_training_dtype_is_refused(tmp_path):
    cfg = _train_cfg(tmp_path, **{"extract.qa.train.dtype": "int4"})
    with pytest.raises(ConfigError, match="extract.qa.train.dtype must be one of auto, float32, bfloat16"):
        training_plan(cfg)


def test_auto_training_dtype_follows_the_cpu():
    from causalkg.core.models import cpu_has_native_bf16, training_dtype

    zen4 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n"
    old = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n"
    assert cpu_has_native_bf16(zen4) and not cpu_has_native_bf16(old)
    assert cpu_has_native_bf16("flags : amx_tile amx_bf16\n")
    assert training_dtype("float32", "cpu") == "float32" and training_dtype("bfloat16", "cpu") == "bfloat16"
    assert training_dtype("auto", "cpu") == ("bfloat16" if cpu_has_native_bf16() else "float32")
    # On a GPU auto is float32 (faster there for these small models; measured on an H200), and
    # bfloat16 only when asked for.
    assert training_dtype("auto", "cuda") == "float32" and training_dtype("auto", "cuda:1") == "float32"
    assert training_dtype("bfloat16", "cuda") == "bfloat16"
    with pytest.raises(ConfigError):
        training_dtype("fp8", "cpu")


def test_bfloat16_runs_on_pytorch_and_is_float32_without_native_support(tiny_dir, gold, monkeypatch):
    """bfloat16 is never handed to ONNX Runtime; where the CPU has no native bfloat16 it is float32."""
    from causalkg.kg import qa_decode
    from causalkg.core import models

    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: True)
    qa = QAModel(str(tiny_dir), dtype="bfloat16", backend="auto", max_seq_length=64, max_question_tokens=16, doc_stride=16)
    assert qa.dtype == "bfloat16" and not isinstance(qa.model, qa_decode.OnnxModel)
    assert {p.dtype for p in qa.model.parameters()} == {__import__("torch").bfloat16}
    texts = [r["text"] for r in gold[:4]]
    got = qa.answer(["What is the cause?"] * len(texts), texts)
    assert len(got) == len(texts) and all(a is None or a.text in t for a, t in zip(got, texts))
    monkeypatch.setattr(models, "cpu_has_native_bf16", lambda cpuinfo=None: False)
    assert QAModel(str(tiny_dir), dtype="bfloat16", backend="torch", max_seq_length=64,
                   max_question_tokens=16, doc_stride=16).dtype == "float32"


def test_int8_per_channel_runs_on_both_backends_with_spans_close_to_float32(tiny_dir, gold):
    import onnx
    import torch

    from causalkg.kg.onnx_runtime import QUANTIZATIONS
    from causalkg.kg.qa_decode import inference_dtype

    assert inference_dtype("int8-per-channel", "cpu") == "int8-per-channel"
    assert inference_dtype("int8-per-channel", "cuda:0") == "float32"  # CPU-only, like int8
    contexts = [r["text"] for r in gold]
    questions = ["What is the cause?"] * len(contexts)
    f32 = QAModel(str(tiny_dir), batch_size=4, device="cpu", backend="torch").answer(questions, contexts)
    ort = QAModel(str(tiny_dir), batch_size=4, device="cpu", backend="onnxruntime", dtype="int8-per-channel")
    pt = QAModel(str(tiny_dir), batch_size=4, device="cpu", backend="torch", dtype="int8-per-channel")
    assert (ort.backend, ort.dtype, pt.backend, pt.dtype) == ("onnxruntime", "int8-per-channel", "torch",
                                                              "int8-per-channel")
    # ONNX Runtime: a file of its own, stamped with its recipe, one weight scale per output channel.
    path = tiny_dir / "onnx" / "model.int8-per-channel.onnx"
    assert ort.model.path == path
    assert json.loads((tiny_dir / "onnx" / "model.int8-per-channel.onnx.json").read_text())["options"] == \
        QUANTIZATIONS["int8-per-channel"]
    graph = onnx.load(str(path)).graph
    quantized = [n for n in graph.node if n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul")]
    assert quantized
    scales = {i.name: list(i.dims) for i in graph.initializer if i.name.endswith("_scale")}
    assert any(len(d) == 1 and d[0] > 1 for d in scales.values())  # a vector of scales, not one
    # PyTorch: every linear layer quantized per output channel.
    qlinear = [m for m in pt.model.modules() if hasattr(m, "weight") and callable(m.weight)
               and type(m) is not torch.nn.Linear]
    assert qlinear and all(m.weight().qscheme() == torch.per_channel_affine for m in qlinear)
    for model in (ort, pt):
        got = model.answer(questions, contexts)
        for ans, ctx in zip(got, contexts):
            assert ans is None or ctx[ans.start : ans.end] == ans.text
        same = sum((a.start, a.end) == (b.start, b.end) if a and b else a is b for a, b in zip(f32, got))
        assert same >= 0.75 * len(contexts)


def test_a_qa_model_of_the_first_k_encoder_layers_trains_and_answers(tiny_dir, tmp_path):
    """extract.qa.train.encoder_layers = 1: the saved model has one transformer layer, its
    manifest says so, and it answers like any QA model; 0 (all) leaves the fingerprint as it was."""
    from transformers import AutoConfig

    layers = AutoConfig.from_pretrained(tiny_dir).num_hidden_layers
    assert layers >= 2
    cfg = _train_cfg(tmp_path, **{"extract.qa.train.encoder_layers": 1})
    out = tmp_path / "shallow"
    train_qa(cfg, output=out, base_model=str(tiny_dir))
    assert AutoConfig.from_pretrained(out).num_hidden_layers == 1
    assert read_manifest(out)["training"]["encoder_layers"] == 1
    (a,) = QAModel(str(out)).answer(["What is the cause?"], ["Floods followed the storm."])
    assert a is None or a.text in "Floods followed the storm."
    assert "encoder_layers" not in training_plan(_train_cfg(tmp_path), base_model=str(tiny_dir))
    with pytest.raises(ConfigError, match=f"encoder_layers = {layers + 1}, but .* has {layers} layers"):
        train_qa(_train_cfg(tmp_path, **{"extract.qa.train.encoder_layers": layers + 1}), output=tmp_path / "x",
                 base_model=str(tiny_dir))


def test_a_shallow_qa_model_distils_from_a_teacher(tiny_dir, tmp_path):
    """extract.qa.train.teacher: a one-layer student learns from the gold spans and the teacher's
    span scores; the manifest records the teacher's weights, which change the fingerprint; a
    missing teacher is named."""
    import torch

    from causalkg.kg.train_qa import distillation_loss

    over = {"extract.qa.train.encoder_layers": 1, "extract.qa.train.teacher": str(tiny_dir),
            "extract.qa.train.distill_weight": 0.7, "extract.qa.train.distill_temperature": 3.0}
    out = tmp_path / "student"
    train_qa(_train_cfg(tmp_path, **over), output=out, base_model=str(tiny_dir))
    training = read_manifest(out)["training"]
    assert training["teacher"] == str(tiny_dir) and len(training["teacher_sha256"]) == 64
    assert (training["distill_weight"], training["distill_temperature"]) == (0.7, 3.0)
    (a,) = QAModel(str(out)).answer(["What is the cause?"], ["Floods followed the storm."])
    assert a is None or a.text in "Floods followed the storm."
    plain = training_plan(_train_cfg(tmp_path, **{"extract.qa.train.encoder_layers": 1}), base_model=str(tiny_dir))
    assert "teacher" not in plain and plain["fingerprint"] != training["fingerprint"]
    with pytest.raises(ConfigError, match="holds no trained QA model"):
        training_plan(_train_cfg(tmp_path, **{**over, "extract.qa.train.teacher": str(tmp_path / "none")}),
                      base_model=str(tiny_dir))
    # the divergence: 0 for the same scores, padding ignored, positive otherwise
    s = torch.tensor([[2.0, 0.5, -1.0, 7.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    same = distillation_loss(s, s, s.clone().index_fill_(1, torch.tensor([3]), -5.0), s, mask, 2.0)
    assert float(same) == pytest.approx(0.0, abs=1e-6)
    assert float(distillation_loss(s, s, s.flip(1), s.flip(1), mask, 2.0)) > 0.1
