"""Loading local transformers models for the judging-the-judges measures, and naming them.

The NLI complementer of SQC (``evaluation.judging.nli``) and the token-probability consistency judge
(``evaluation.judging.causal_lm``) load a model by hub name or local path through the transformers Auto
classes. This module holds what they share: one loader that turns any loading failure into a
``ModelError`` with the fix, and a stable model id (for manifests and for the on-disk cache of
model answers: a local folder is identified by its path and the size and time of its files, so
a retrained model at the same path never reuses old answers).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from causalkg.core.cache import DiskCache
from causalkg.core.errors import ModelError
from causalkg.core.manifest import fingerprint
from causalkg.core.models import resolve_device


def model_id(name_or_path: str) -> str:
    """``name`` for a hub name; ``path#<digest of its files' names, sizes and times>`` for a folder."""
    p = Path(name_or_path)
    if not p.exists():
        return name_or_path
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    stats = [(str(f.relative_to(p)) if p.is_dir() else f.name, f.stat().st_size, int(f.stat().st_mtime)) for f in files]
    return f"{p.resolve()}#{fingerprint(stats)[:12]}"


def load_pretrained(kind: str, name_or_path: str, *, device: str) -> tuple[Any, Any]:
    """(tokenizer, model) for ``kind`` in {"sequence-classification", "causal-lm"}, in eval mode
    on ``device``. Raises ModelError naming the model and how to make it available."""
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

    auto = {"sequence-classification": AutoModelForSequenceClassification, "causal-lm": AutoModelForCausalLM}[kind]
    local = Path(name_or_path).exists()
    offline = bool(os.environ.get("HF_HUB_OFFLINE")) or local
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, local_files_only=offline)
        model = auto.from_pretrained(name_or_path, local_files_only=offline)
    except Exception as exc:  # noqa: BLE001 - every loading failure becomes one clear error
        raise ModelError(
            f"cannot load {kind} model {name_or_path!r}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
            hint="name a local model folder, or a hub model already in your Hugging Face cache",
        ) from exc
    model.eval()
    model.to(device)
    return tokenizer, model


class PretrainedScorer:
    """What the NLI and causal-LM scorers share: a model of ``kind`` loaded on a device, a batch
    size, an optional disk cache of answers and the model id that keys it."""

    kind = ""  # "sequence-classification" or "causal-lm", set by the subclass

    def __init__(self, name_or_path: str, *, device: str = "auto", batch_size: int = 16,
                 cache: DiskCache | None = None):
        self.name = name_or_path
        self.device = resolve_device(device)
        self.batch_size = max(1, int(batch_size))
        self.cache = cache
        self.model_id = model_id(name_or_path)
        self.tokenizer, self.model = load_pretrained(self.kind, name_or_path, device=self.device)
