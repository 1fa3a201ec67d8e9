"""ONNX Runtime for the transformer models of extraction (CPU inference).

Where it sits: ``kg.qa_decode`` loads a QA model and, when ``extract.backend`` resolves to
``onnxruntime``, runs it through :class:`OnnxModel` instead of PyTorch. The model is exported
once to ``<model folder>/onnx/model.onnx`` (or ``model.int8.onnx`` and
``model.int8-per-channel.onnx`` for the dynamic int8 quantizations, :data:`QUANTIZATIONS`), keyed by the checksum of the weights it came from, so a retrained model gets a
new export. On 2 CPU cores ONNX Runtime runs the same float32 graph about 3.5x faster than
PyTorch eager (fused attention, GELU and layer norm; ``python -m bench inference``), with
logits equal to PyTorch's to about 1e-5. The backend setting, the atomic export and the
session options are shared with the sentence encoder (:mod:`causalkg.core.onnxrt`).

The wrapper is called like a Hugging Face model (keyword tensors in, an object with
``start_logits``/``end_logits`` torch tensors out), so the span decoding is shared.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from causalkg.core.jsonl import atomic_write
from causalkg.core.onnxrt import BACKENDS, cpu_session, export_module, onnxruntime_available, resolve_backend  # noqa: F401 - re-exported

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUTS = ("start_logits", "end_logits")


def _weights_digest(model_dir: Path) -> str:
    h = hashlib.sha256()
    for name in sorted(os.listdir(model_dir)):
        p = model_dir / name
        if p.is_file() and (name.endswith(".safetensors") or name.endswith(".bin") or name == "config.json"):
            h.update(name.encode())
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


# ``extract.dtype`` -> the options of ONNX Runtime's dynamic quantization (weights int8,
# activations quantized per batch; only matrix products with a constant weight). ``int8``: one
# scale per weight matrix. ``int8-per-channel``: one scale per output channel and 7-bit weights
# (``reduce_range``, which also keeps u8 x s8 products from saturating on CPUs without VNNI).
# On the trained QA model's validation split (``python -m bench inference``) the first costs
# about 1 point of macro F1, the second stays within 0.5 of float32 at the same speed (but loses
# 3 points of pair F1 end to end on the held-out split); leaving the most sensitive layers in
# float32 (the FFN output projections, the first layer, the QA head) was no closer and slower.
QUANTIZATIONS: dict[str, dict[str, Any]] = {
    "int8": {},
    "int8-per-channel": {"per_channel": True, "reduce_range": True},
}


def _quantizer(options: dict[str, Any]) -> Any:
    def quantize(fp32: Path, out: Path) -> None:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, **options)

    return quantize


def export_onnx(model: Any, tokenizer: Any, model_dir: Path, *, quantize: str | None = None) -> Path:
    """The ONNX file of ``model`` (a float32 PyTorch QA model loaded from ``model_dir``),
    exported now unless an export of the same weights is there; ``quantize`` names a format of
    :data:`QUANTIZATIONS` to quantize the export to. Written atomically."""
    if quantize is not None and quantize not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantize!r}")
    out_dir = model_dir / "onnx"
    digest = _weights_digest(model_dir)
    target = out_dir / (f"model.{quantize}.onnx" if quantize else "model.onnx")
    options = QUANTIZATIONS[quantize] if quantize else None
    stamp = out_dir / (target.name + ".json")
    if target.exists() and stamp.exists():
        try:
            made = json.loads(stamp.read_text())
            # the same weights, quantized the same way (a changed recipe makes a new file)
            if made["weights_sha256"] == digest and made.get("options") == options:
                return target
        except (ValueError, KeyError):
            pass
    sample = tokenizer(["What is the cause?"] * 2, ["Heavy rain caused floods."] * 2, return_tensors="pt", padding=True)
    export_module(model, {k: sample[k] for k in INPUTS if k in sample}, target, outputs=OUTPUTS,
                  what=str(model_dir), hint="set extract.backend = torch",
                  post=_quantizer(options) if options is not None else None)
    with atomic_write(stamp) as fh:
        fh.write(json.dumps({"weights_sha256": digest, "quantize": quantize, "options": options}))
    return target


class OnnxModel:
    """An ONNX Runtime session called like a Hugging Face QA model."""

    def __init__(self, path: Path, *, threads: int | None = None):
        self.session = cpu_session(path, threads=threads)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.path = path

    def __call__(self, **batch: Any) -> SimpleNamespace:
        import torch

        feed = {k: batch[k].cpu().numpy().astype("int64") for k in self.inputs}
        start, end = self.session.run(list(OUTPUTS), feed)
        return SimpleNamespace(start_logits=torch.from_numpy(start), end_logits=torch.from_numpy(end))
