"""ONNX Runtime for the transformer models of extraction (CPU inference).

Where it sits: ``kg.qa_decode`` loads a QA model and, when ``extract.backend`` resolves to
``onnxruntime``, runs it through :class:`OnnxModel` instead of PyTorch. The model is exported
once to ``<model folder>/onnx/model.onnx`` (or ``model.int8.onnx`` for dynamic int8
quantization), keyed by the checksum of the weights it came from, so a retrained model gets a
new export. On 2 CPU cores ONNX Runtime runs the same float32 graph about 3.5x faster than
PyTorch eager (fused attention, GELU and layer norm; ``python -m bench inference``), with
logits equal to PyTorch's to about 1e-5.

The wrapper is called like a Hugging Face model (keyword tensors in, an object with
``start_logits``/``end_logits`` torch tensors out), so the span decoding is shared.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from causalkg.errors import ConfigError, ModelError

BACKENDS = ("auto", "torch", "onnxruntime")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUTS = ("start_logits", "end_logits")


def onnxruntime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_backend(backend: str, device: str) -> str:
    """``torch`` or ``onnxruntime``: ``auto`` is ONNX Runtime on a CPU when it is installed,
    PyTorch otherwise (GPUs run PyTorch, where fp16 does the work)."""
    if backend not in BACKENDS:
        raise ConfigError(f"extract.backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    gpu = str(device).startswith("cuda")
    if backend == "auto":
        return "onnxruntime" if not gpu and onnxruntime_available() else "torch"
    if backend == "onnxruntime":
        if gpu:
            raise ConfigError("extract.backend = onnxruntime runs on the CPU; use torch on a GPU")
        if not onnxruntime_available():
            raise ConfigError("extract.backend = onnxruntime but onnxruntime is not installed",
                              hint="pip install onnxruntime onnx, or set extract.backend = torch")
    return backend


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


def export_onnx(model: Any, tokenizer: Any, model_dir: Path, *, int8: bool = False) -> Path:
    """The ONNX file of ``model`` (a float32 PyTorch QA model loaded from ``model_dir``),
    exported now unless an export of the same weights is there. Written atomically."""
    import torch

    out_dir = model_dir / "onnx"
    digest = _weights_digest(model_dir)
    target = out_dir / ("model.int8.onnx" if int8 else "model.onnx")
    stamp = out_dir / (target.name + ".json")
    if target.exists() and stamp.exists():
        try:
            if json.loads(stamp.read_text())["weights_sha256"] == digest:
                return target
        except (ValueError, KeyError):
            pass
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".{target.name}.{os.getpid()}.tmp"
    sample = tokenizer(["What is the cause?"] * 2, ["Heavy rain caused floods."] * 2, return_tensors="pt", padding=True)
    names = [k for k in INPUTS if k in sample]
    try:
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            fp32 = tmp.with_suffix(".fp32.tmp") if int8 else tmp
            torch.onnx.export(
                model, tuple(sample[k] for k in names), str(fp32), input_names=names,
                output_names=list(OUTPUTS), opset_version=17, dynamo=False,
                dynamic_axes={k: {0: "batch", 1: "tokens"} for k in (*names, *OUTPUTS)},
            )
            if int8:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8)
                fp32.unlink(missing_ok=True)
        os.replace(tmp, target)
    except Exception as exc:  # the exporter raises many kinds; the user needs one line
        tmp.unlink(missing_ok=True)
        raise ModelError(f"cannot export {model_dir} to ONNX: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         hint="set extract.backend = torch") from None
    stamp.write_text(json.dumps({"weights_sha256": digest, "int8": int8}))
    return target


class OnnxModel:
    """An ONNX Runtime session called like a Hugging Face QA model."""

    def __init__(self, path: Path, *, threads: int | None = None):
        import onnxruntime as ort
        import torch

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or torch.get_num_threads())
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.path = path

    def __call__(self, **batch: Any) -> SimpleNamespace:
        import torch

        feed = {k: batch[k].cpu().numpy().astype("int64") for k in self.inputs}
        start, end = self.session.run(list(OUTPUTS), feed)
        return SimpleNamespace(start_logits=torch.from_numpy(start), end_logits=torch.from_numpy(end))
