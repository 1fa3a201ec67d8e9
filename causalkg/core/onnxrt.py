"""ONNX Runtime on the CPU, shared by the models that use it: the QA extractor
(``kg.onnx_runtime``) and the sentence encoder (``linking.encoder``).

Three pieces: which backend a setting resolves to (``resolve_backend``), exporting a PyTorch
module to an ONNX file atomically (``export_module``), and an inference session with the
toolkit's thread settings (``cpu_session``). What is exported, where it is kept and how it is
keyed stays with each model.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

from causalkg.core.errors import ConfigError, ModelError

BACKENDS = ("auto", "torch", "onnxruntime")
OPSET = 17


def onnxruntime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def onnxruntime_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


def resolve_backend(backend: str, device: str, *, key: str = "extract.backend") -> str:
    """``torch`` or ``onnxruntime``: ``auto`` is ONNX Runtime on a CPU when it is installed,
    PyTorch otherwise (GPUs run PyTorch, where fp16 does the work). ``key`` names the setting
    in the error messages."""
    if backend not in BACKENDS:
        raise ConfigError(f"{key} must be one of {', '.join(BACKENDS)}, got {backend!r}")
    gpu = str(device).startswith("cuda")
    if backend == "auto":
        return "onnxruntime" if not gpu and onnxruntime_available() else "torch"
    if backend == "onnxruntime":
        if gpu:
            raise ConfigError(f"{key} = onnxruntime runs on the CPU; use torch on a GPU")
        if not onnxruntime_available():
            raise ConfigError(f"{key} = onnxruntime but onnxruntime is not installed",
                              hint=f"pip install onnxruntime onnx, or set {key} = torch")
    return backend


def export_module(module: Any, sample: dict[str, Any], target: Path, *, outputs: Sequence[str],
                  what: str, hint: str, post: Callable[[Path, Path], None] | None = None) -> Path:
    """Export ``module`` (called with the tensors of ``sample`` as positional arguments, in
    order) to ``target``, batch and token axes dynamic. Written to a temporary file of this
    process in the same folder, flushed to disk and renamed, so a reader (or a process exporting
    the same file at the same time) never sees a partial file. ``post(exported, final_tmp)``
    turns the exported file into the final one (quantization); ``what`` and ``hint`` make the
    ModelError raised when the exporter fails."""
    import torch

    target.parent.mkdir(parents=True, exist_ok=True)
    # A name of its own per call (process and thread): concurrent exports never share a file.
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    raw = tmp.with_suffix(".raw.tmp") if post else tmp
    names = list(sample)
    try:
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module, tuple(sample[k] for k in names), str(raw), input_names=names,
                output_names=list(outputs), opset_version=OPSET, dynamo=False,
                dynamic_axes={k: {0: "batch", 1: "tokens"} for k in (*names, *outputs)},
            )
            if post:
                post(raw, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; a shared cache is read by others too
        os.replace(tmp, target)
    except Exception as exc:  # the exporter raises many kinds; the user needs one line
        raise ModelError(f"cannot export {what} to ONNX: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         hint=hint) from None
    finally:
        tmp.unlink(missing_ok=True)
        raw.unlink(missing_ok=True)
    return target


def cpu_session(path: Path, *, threads: int | None = None) -> Any:
    """An ONNX Runtime session on the CPU, with as many intra-op threads as torch uses (or
    ``threads``), one inter-op thread, warnings off."""
    import onnxruntime as ort
    import torch

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads or torch.get_num_threads())
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
