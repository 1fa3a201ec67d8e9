"""The persisted concept index: one vector per surface form (label or alias) of every concept in
``data/wikidata/concepts.jsonl``, in FAISS, with the metadata to turn a hit back into a concept.

Flow: corpus writes ``data/wikidata/concepts.jsonl`` -> ``build_index`` writes ``data/linking/``
-> ``linking.linker.Linker`` loads it and answers queries (the kg stage calls it in batches).

``data/linking/`` holds:

- ``index.faiss``: the vectors (L2-normalised, inner product = cosine). ``flat`` is exact
  (``IndexFlatIP``); ``hnsw`` (``IndexHNSWFlat``) and ``ivf`` (``IndexIVFFlat``) are approximate,
  for vocabularies too large for exact search (``bench/bench_linking.py`` reports their recall).
- ``surfaces.jsonl``: row ``i`` describes vector ``i``: ``{"qid", "surface", "primary"}``.
- ``concepts.jsonl``: ``{"id", "kind", "label", "seed_classes", "instance_of", "subclass_of"}``
  of every indexed concept (what filters and context need, so the index stands alone).
- ``manifest.json``: model name and content fingerprint, index settings, the concepts file's
  path, size and SHA-256, counts, timings. Written last: a build killed half-way leaves no
  manifest, and the index counts as missing.

The index is current when the manifest's model, model fingerprint, index settings, format
version and concepts checksum all match; ``build_index`` then does nothing (unless
``refresh``), and ``Linker.load`` refuses a stale index rather than answer with mismatched
vectors.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from causalkg.config import Config
from causalkg.contracts import Concept
from causalkg.distributed import engine_of
from causalkg.errors import ConfigError, ModelError, SourceError
from causalkg.jsonl import ReadStats, atomic_write, read_jsonl, write_jsonl
from causalkg.layout import Layout
from causalkg.manifest import MANIFEST_NAME, build_manifest, file_sha256, read_manifest, write_manifest
from causalkg.progress import progress
from causalkg.registry import versioned_spec
from causalkg.linking.normalize import clean, fold

log = logging.getLogger(__name__)

FORMAT_VERSION = "1"
INDEX_FILE = "index.faiss"
SURFACES_FILE = "surfaces.jsonl"
CONCEPTS_FILE = "concepts.jsonl"
INDEX_TYPES = ("flat", "hnsw", "ivf")
BUILD_HINT = "run causalkg link build"
EMBED_CHUNK = 8192  # surface forms per encoder call during a build (one progress step each)


def index_dir(cfg: Config) -> Path:
    """``<paths.data>/linking``: where the index lives."""
    return Layout.from_config(cfg).linking_dir


def default_concepts_path(cfg: Config) -> Path:
    """``<paths.data>/wikidata/concepts.jsonl``: the vocabulary the corpus stage writes."""
    return Layout.from_config(cfg).concepts


def build_settings(cfg: Config) -> dict[str, Any]:
    """The index settings that change the built index (search-time ones are left out)."""
    lk = cfg["linking"]
    kind = lk["index"]
    if kind not in INDEX_TYPES:
        raise ConfigError(f"linking.index must be one of {', '.join(INDEX_TYPES)}, got {kind!r}")
    settings: dict[str, Any] = {"type": kind}
    if kind == "hnsw":
        settings.update(m=int(lk["hnsw_m"]), ef_construction=int(lk["hnsw_ef_construction"]))
    elif kind == "ivf":
        settings.update(nlist=int(lk["ivf_nlist"]))
    return settings


def make_faiss_index(settings: dict[str, Any], dim: int, n: int):
    """An empty FAISS index of the given settings for ``n`` vectors of ``dim`` (IVF still untrained)."""
    import faiss

    kind = settings["type"]
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, int(settings["m"]), faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(settings["ef_construction"])
        return index
    if kind == "ivf":
        nlist = ivf_nlist(settings.get("nlist", 0), n)
        quantizer = faiss.IndexFlatIP(dim)
        # faiss's Python wrapper keeps a reference to the quantizer inside the index.
        return faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    raise ConfigError(f"unknown index type {kind!r}")


def ivf_nlist(configured: int, n: int) -> int:
    """Lists for an IVF index: the configured count, or 4*sqrt(n) when 0; never more than
    n/39 (FAISS wants about 39 training points per list), never fewer than 1."""
    nlist = int(configured) if configured and configured > 0 else int(4 * math.sqrt(max(n, 1)))
    return max(1, min(nlist, n // 39 if n >= 39 else 1))


def fill_index(index, vectors: np.ndarray, *, seed: int = 0) -> None:
    """Train (IVF) and add ``vectors`` to ``index``."""
    if not index.is_trained:
        nlist = index.nlist
        sample = vectors
        if len(vectors) > 256 * nlist:
            rng = np.random.default_rng(seed)
            sample = vectors[rng.choice(len(vectors), 256 * nlist, replace=False)]
        index.train(sample)
    if len(vectors):
        index.add(vectors)
    if hasattr(index, "make_direct_map"):
        index.make_direct_map()  # IVF: lets the linker read a surface's vector back (context)


# --- the vocabulary ---------------------------------------------------------------------------


@dataclass
class Vocabulary:
    """Concepts and their surface forms, read from a concepts JSONL file."""

    concepts: list[dict] = field(default_factory=list)  # compact records, in file order
    surfaces: list[dict] = field(default_factory=list)  # {"qid", "surface", "primary"}
    merged_duplicates: int = 0
    without_surface: int = 0


def collect_vocabulary(records: Iterable[Concept]) -> Vocabulary:
    """Concepts -> compact concept records and one surface row per distinct label or alias.

    A concept id seen twice is merged (aliases and seed classes united, ``class`` wins over
    ``instance``) and counted. Surface forms of one concept that fold to the same key ("War",
    "war") keep one row, the first (the label when there is one). A concept with no label and no
    alias cannot be linked to; it is counted and left out.
    """
    by_id: dict[str, dict] = {}
    names: dict[str, list[str]] = {}
    vocab = Vocabulary()
    for c in records:
        entry = by_id.get(c.id)
        if entry is None:
            by_id[c.id] = {
                "id": c.id, "kind": c.kind, "label": c.label,
                "seed_classes": list(c.seed_classes), "instance_of": list(c.instance_of),
                "subclass_of": list(c.subclass_of),
            }
            names[c.id] = [x for x in [c.label, *c.aliases] if x]
            continue
        vocab.merged_duplicates += 1
        if c.kind == "class":
            entry["kind"] = "class"
        if not entry["label"] and c.label:
            entry["label"] = c.label
        for key in ("seed_classes", "instance_of", "subclass_of"):
            entry[key] += [q for q in getattr(c, key) if q not in entry[key]]
        names[c.id] += [x for x in [c.label, *c.aliases] if x]
    for qid, entry in by_id.items():
        seen: set[str] = set()
        rows = []
        for name in names[qid]:
            key = fold(clean(name))
            if not key or key in seen:
                continue
            seen.add(key)
            rows.append({"qid": qid, "surface": name, "primary": bool(entry["label"]) and name == entry["label"]})
        if not rows:
            vocab.without_surface += 1
            continue
        vocab.concepts.append(entry)
        vocab.surfaces.extend(rows)
    return vocab


def read_vocabulary(path: Path, *, lenient: bool = False) -> tuple[Vocabulary, ReadStats]:
    """Read and collect a concepts JSONL file (Concept contract). SchemaError names ``path:line``."""
    stats = ReadStats()
    vocab = collect_vocabulary(read_jsonl(path, Concept, lenient=lenient, stats=stats))
    return vocab, stats


# --- currency ---------------------------------------------------------------------------------


def _record_path(path: Path, cfg: Config) -> str:
    """The concepts path as stored in the manifest: relative to ``paths.data`` when inside it
    (so a moved project folder still checks), else absolute."""
    p = path.resolve()
    try:
        return str(p.relative_to(cfg.path("paths.data").resolve()))
    except ValueError:
        return str(p)


def recorded_concepts_path(manifest: dict, cfg: Config) -> Path | None:
    """The concepts file the index was built from, resolved against ``paths.data``."""
    rec = (manifest.get("inputs") or {}).get("concepts") or {}
    if not rec.get("path"):
        return None
    p = Path(rec["path"])
    return p if p.is_absolute() else cfg.path("paths.data") / p


def concepts_changed(manifest: dict, path: Path) -> bool:
    """Whether ``path`` differs from the concepts file recorded in ``manifest``.

    Same size and modification time count as unchanged (no hashing); otherwise the SHA-256
    decides, so a file touched but not changed is still current."""
    rec = (manifest.get("inputs") or {}).get("concepts") or {}
    st = path.stat()
    if rec.get("bytes") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns:
        return False
    return rec.get("sha256") != file_sha256(path)


def staleness(cfg: Config, manifest: dict | None, folder: Path) -> list[str]:
    """Why the index in ``folder`` does not fit ``cfg`` (empty when it does), leaving the
    concepts file aside (see ``concepts_changed``). Loads no model."""
    from causalkg.linking.encoder import model_fingerprint

    if manifest is None:
        return [f"no concept index in {folder}"]
    reasons = []
    missing = [n for n in (INDEX_FILE, SURFACES_FILE, CONCEPTS_FILE) if not (folder / n).is_file()]
    if missing:
        reasons.append(f"{folder} lacks {', '.join(missing)}")
    if manifest.get("format_version") != FORMAT_VERSION:
        reasons.append(f"index format {manifest.get('format_version')!r} is not {FORMAT_VERSION!r}")
    built = manifest.get("index") or {}
    model = cfg["linking"]["model"]
    if built.get("model") != model:
        reasons.append(f"the index was built with model {built.get('model')!r}, linking.model is {model!r}")
    else:
        fp = model_fingerprint(model)
        if built.get("model_fingerprint") != fp:
            reasons.append(f"model {model!r} changed since the index was built (fingerprint {fp[:19]}...)")
    settings = build_settings(cfg)
    if built.get("settings") != settings:
        reasons.append(f"the index was built as {built.get('settings')}, the config asks for {settings}")
    return reasons


# --- building ---------------------------------------------------------------------------------


def build_index(
    cfg: Config,
    *,
    concepts_path: str | os.PathLike | None = None,
    refresh: bool = False,
    model: str | None = None,
    index: str | None = None,
    lenient: bool = False,
) -> dict[str, Any]:
    """Build the concept index in ``<paths.data>/linking``, or skip when it is current.

    ``concepts_path``: the vocabulary (default ``<paths.data>/wikidata/concepts.jsonl``);
    ``refresh``: rebuild even when current; ``model`` / ``index``: override ``linking.model`` /
    ``linking.index``; ``lenient``: skip (and count) bad concept lines instead of failing.
    Returns ``{"built": bool, "folder", "model", "index", "counts", "notes", "reasons",
    "seconds"}`` (``reasons``: why it was rebuilt, or empty when skipped).
    Raises SourceError when the concepts file is missing (hint: run causalkg corpus build),
    SchemaError on a bad line, ModelError when the model cannot be loaded.
    """
    cfg = cfg.with_overrides({"linking.model": model, "linking.index": index}, origin="build_index")
    settings = build_settings(cfg)
    folder = index_dir(cfg)
    path = Path(concepts_path) if concepts_path is not None else default_concepts_path(cfg)
    if not path.is_file():
        raise SourceError(f"concepts file not found: {path}", hint="run causalkg corpus build, or pass --concepts FILE")
    manifest = read_manifest(folder)
    reasons = staleness(cfg, manifest, folder)
    if manifest is not None and not reasons:
        recorded = recorded_concepts_path(manifest, cfg)
        if recorded is None or recorded.resolve() != path.resolve():
            reasons.append(f"the index was built from {recorded}, not {path}")
        elif concepts_changed(manifest, path):
            reasons.append(f"{path} changed since the index was built")
    if manifest is not None and not reasons and not refresh:
        return {
            "built": False, "folder": str(folder), "model": cfg["linking"]["model"],
            "index": settings, "counts": manifest.get("counts", {}), "notes": [], "reasons": [],
            "seconds": 0.0,
        }
    if refresh and not reasons:
        reasons = ["--force"]
    return _build(cfg, settings, folder, path, reasons, lenient=lenient)


class EncodeWorker:
    """A Ray actor of the ``ray`` engine: loads the encoder once, embeds chunks of texts."""

    def __init__(self, model: str, device: str, batch_size: int, backend: str = "torch", cache_dir: str | None = None):
        from causalkg.linking.encoder import create_encoder

        self.encoder = create_encoder(model, device=device, batch_size=batch_size, backend=backend, cache_dir=cache_dir)

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.encoder.encode(texts)

    def identity(self) -> tuple[str, str, str]:
        return self.encoder.path, self.encoder.fingerprint, self.encoder.backend


class _Described:
    """The encoder's path, fingerprint and backend for the manifest, when the actors did the encoding."""

    def __init__(self, path: str, fingerprint: str, backend: str = "torch"):
        self.path, self.fingerprint, self.backend = path, fingerprint, backend


def _build(cfg: Config, settings: dict, folder: Path, path: Path, reasons: list[str], *, lenient: bool) -> dict[str, Any]:
    from causalkg.linking.encoder import create_encoder, encoder_options, encoder_spec

    lk = cfg["linking"]
    t0 = time.perf_counter()
    st = path.stat()
    sha = file_sha256(path)
    vocab, stats = read_vocabulary(path, lenient=lenient)
    notes: list[str] = []
    if stats.skipped:
        notes.append(stats.summary())
    if vocab.merged_duplicates:
        notes.append(f"{vocab.merged_duplicates} repeated concept ids merged")
    if vocab.without_surface:
        notes.append(f"{vocab.without_surface} concepts without label or alias left out")
    if not vocab.surfaces:
        raise SourceError(f"{path}: no concept with a label or alias", hint="run causalkg corpus build")
    t_read = time.perf_counter() - t0

    texts = [s["surface"] for s in vocab.surfaces]
    t1 = time.perf_counter()
    # the vectors go straight into one array, chunk by chunk (no list of chunks and no
    # concatenated copy of it: at 181,006 concepts each copy is 384 MB)
    vectors: np.ndarray | None = None
    filled = 0

    def put(vecs: np.ndarray) -> None:
        nonlocal vectors, filled
        if vectors is None:
            vectors = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
        vectors[filled:filled + len(vecs)] = vecs
        filled += len(vecs)

    chunks = [texts[start:start + EMBED_CHUNK] for start in range(0, len(texts), EMBED_CHUNK)]
    ray_stats = None
    with progress(total=len(texts), desc="embedding surface forms", unit="form", mode=cfg.get("run.progress", "auto")) as bar:
        if engine_of(cfg) == "ray":
            # run.engine = "ray": the chunks go to a pool of encoder actors (one model load each,
            # a GPU each when the cluster has them); vectors come back in chunk order.
            from causalkg.distributed import ActorPool, RaySettings, RayStats

            ray_stats = RayStats()
            opts = encoder_options(cfg)
            pool = ActorPool(EncodeWorker, (lk["model"], opts["device"], opts["batch_size"], opts["backend"], str(opts["cache_dir"])),
                             RaySettings.from_config(cfg), stats=ray_stats)
            try:
                encoder = _Described(*pool.ray.get(pool.actors[0].identity.remote()))
                for chunk, vecs in pool.map_ordered("encode", chunks, lambda c: (c,),
                                                    what=lambda c: f"a chunk of {len(c)} surface forms"):
                    put(vecs)
                    bar.update(len(chunk))
            finally:
                pool.close()
        else:
            encoder = create_encoder(lk["model"], **encoder_options(cfg))
            for chunk in chunks:
                put(encoder.encode(chunk))
                bar.update(len(chunk))
    del chunks
    if vectors is None or filled != len(texts):
        raise ModelError(f"the encoder returned {filled} vectors for {len(texts)} surface forms")
    t_embed = time.perf_counter() - t1

    import faiss

    t2 = time.perf_counter()
    dim = int(vectors.shape[1])
    faiss_index = make_faiss_index(settings, dim, len(vectors))
    fill_index(faiss_index, vectors)
    del vectors  # the index holds its own copy
    t_index = time.perf_counter() - t2

    folder.mkdir(parents=True, exist_ok=True)
    # The manifest goes first and comes back last: a build killed in between leaves no
    # manifest, so the half-written folder counts as missing rather than current.
    (folder / MANIFEST_NAME).unlink(missing_ok=True)
    with atomic_write(folder / INDEX_FILE, "wb") as fh:
        # written through as FAISS serialises it (serialize_index would make two more copies)
        faiss.write_index(faiss_index, faiss.PyCallbackIOWriter(fh.write))
    write_jsonl(folder / SURFACES_FILE, vocab.surfaces)
    write_jsonl(folder / CONCEPTS_FILE, vocab.concepts)
    counts = {
        "concepts": len(vocab.concepts),
        "classes": sum(1 for c in vocab.concepts if c["kind"] == "class"),
        "instances": sum(1 for c in vocab.concepts if c["kind"] == "instance"),
        "surfaces": len(vocab.surfaces),
        "lines": stats.lines,
        "skipped_lines": stats.skipped,
        "merged_duplicates": vocab.merged_duplicates,
        "without_surface": vocab.without_surface,
        "dim": dim,
    }
    seconds = time.perf_counter() - t0
    manifest = build_manifest(
        "linking", cfg,
        outputs={"index": INDEX_FILE, "surfaces": SURFACES_FILE, "concepts": CONCEPTS_FILE},
        counts=counts,
        timings={"read": t_read, "embed": t_embed, "index": t_index, "total": seconds},
        models={"encoder": {"name": lk["model"], "spec": versioned_spec("encoder", encoder_spec(lk["model"])),
                            "path": encoder.path, "fingerprint": encoder.fingerprint,
                            "backend": getattr(encoder, "backend", "torch")}},
        notes=notes + [f"rebuilt: {r}" for r in reasons],
        extra={
            "format_version": FORMAT_VERSION,
            "inputs": {"concepts": {"path": _record_path(path, cfg), "bytes": st.st_size,
                                    "mtime_ns": st.st_mtime_ns, "sha256": sha}},
            "index": {"model": lk["model"], "model_fingerprint": encoder.fingerprint, "settings": settings,
                      "metric": "inner_product", "normalised": True},
            "engine": "ray" if ray_stats is not None else "local",
            **({"ray": ray_stats.to_dict()} if ray_stats is not None else {}),
        },
    )
    write_manifest(folder, manifest)
    log.debug("linking index: %d surface forms of %d concepts, %s, %.1f s", counts["surfaces"], counts["concepts"], settings["type"], seconds)
    return {
        "built": True, "folder": str(folder), "model": lk["model"], "index": settings,
        "counts": counts, "notes": notes, "reasons": reasons, "seconds": seconds,
    }


def read_index_files(folder: Path):
    """(faiss index, surface rows, concept records) of a built index folder."""
    import faiss

    index = faiss.read_index(str(folder / INDEX_FILE))
    surfaces = list(read_jsonl(folder / SURFACES_FILE))
    concepts = list(read_jsonl(folder / CONCEPTS_FILE))
    if index.ntotal != len(surfaces):
        raise SourceError(
            f"{folder}: {INDEX_FILE} has {index.ntotal} vectors but {SURFACES_FILE} {len(surfaces)} rows",
            hint=f"{BUILD_HINT} --force",
        )
    return index, surfaces, concepts
