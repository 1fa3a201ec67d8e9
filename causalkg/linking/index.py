"""The persisted concept index: one vector per surface form (label or alias) of every concept in
``data/wikidata/concepts.jsonl``, in FAISS, with the metadata to turn a hit back into a concept.

Flow: corpus writes ``data/wikidata/concepts.jsonl`` -> ``build_index`` writes ``data/linking/``
-> ``linking.linker.Linker`` loads it and answers queries (the kg stage calls it in batches).

``data/linking/`` holds:

- ``index.faiss``: the vectors (L2-normalised, inner product = cosine). ``flat`` is exact
  (``IndexFlatIP``), reading every vector for every phrase; ``ivf`` (``IndexIVFFlat``) is exact
  too with ``linking.ivf_nprobe = 0`` (the default) and reads only the lists that can hold a
  match, so it is the one for large vocabularies; ``hnsw`` (``IndexHNSWFlat``), and ``ivf`` with
  ``ivf_nprobe`` > 0, are approximate (``bench/bench_linking.py`` reports their recall).
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

import itertools
import logging
import math
import os
import struct
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from causalkg.core.config import Config
from causalkg.core.contracts import Concept
from causalkg.core.distributed import engine_of
from causalkg.core.errors import ConfigError, ModelError, SourceError
from causalkg.core.jsonl import ReadStats, atomic_write, read_jsonl, to_json_line
from causalkg.core.layout import Layout
from causalkg.core.manifest import MANIFEST_NAME, build_manifest, file_sha256, read_manifest, write_manifest
from causalkg.core.models import release_free_heap
from causalkg.core.progress import progress
from causalkg.registry import versioned_spec
from causalkg.linking.normalize import clean, fold

log = logging.getLogger(__name__)

FORMAT_VERSION = "1"
INDEX_FILE = "index.faiss"
SURFACES_FILE = "surfaces.jsonl"
CONCEPTS_FILE = "concepts.jsonl"
INDEX_TYPES = ("flat", "hnsw", "ivf")
INDEX_SETTINGS = ("auto", *INDEX_TYPES)  # linking.index: auto picks flat or ivf by the vocabulary's size
# linking.index = "auto": ivf (exact) from this many distinct concepts, flat below. Both give the
# same candidates; at 26,715 concepts (about 37,000 surface forms) kg assemble took as long with
# either, at 181,006 ivf took 2.3x less (docs/scale.md); at the snapshot's 904 a flat search is
# about twice as fast.
AUTO_IVF_CONCEPTS = 50_000
BUILD_HINT = "run causalkg link build"
EMBED_CHUNK = 8192  # surface forms per encoder call during a build (one progress step each)


def index_dir(cfg: Config) -> Path:
    """``<paths.data>/linking``: where the index lives."""
    return Layout.from_config(cfg).linking_dir


def default_concepts_path(cfg: Config) -> Path:
    """``<paths.data>/wikidata/concepts.jsonl``: the vocabulary the corpus stage writes."""
    return Layout.from_config(cfg).concepts


def build_settings(cfg: Config, concepts: int | None = None) -> dict[str, Any]:
    """The index settings that change the built index (search-time ones are left out).
    ``linking.index = "auto"`` resolves by ``concepts``, the vocabulary's distinct concept ids:
    ``ivf`` from AUTO_IVF_CONCEPTS, else ``flat`` (``concepts`` None: left as ``auto``)."""
    lk = cfg["linking"]
    kind = lk["index"]
    if kind not in INDEX_SETTINGS:
        raise ConfigError(f"linking.index must be one of {', '.join(INDEX_SETTINGS)}, got {kind!r}")
    if kind == "auto":
        if concepts is None:
            return {"type": "auto"}
        kind = "ivf" if concepts >= AUTO_IVF_CONCEPTS else "flat"
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
    """Lists for an IVF index: the configured count, or n/40 when 0 (small lists: the exact
    search, ``linking.ivf_nprobe = 0``, reads only the lists that can hold a match); never more
    than n/39 (about 39 training points per list), never fewer than 1."""
    nlist = int(configured) if configured and configured > 0 else n // 40
    return max(1, min(nlist, n // 39 if n >= 39 else 1))


def _share(sizes: np.ndarray, total: int) -> np.ndarray:
    """``total`` lists shared among groups of ``sizes`` points in proportion, at least one per
    non-empty group and never more than its points (the caller keeps total <= sum(sizes))."""
    share = sizes * (total / max(int(sizes.sum()), 1))
    alloc = np.minimum(np.maximum(np.floor(share).astype(np.int64), (sizes > 0).astype(np.int64)), sizes)
    while alloc.sum() < total:  # the largest remainder first, among the groups with room
        room = np.where(alloc < sizes, share - alloc, -np.inf)
        alloc[int(np.argmax(room))] += 1
    while alloc.sum() > total:  # a group given its one list while its share was below one
        over = np.where(alloc > 1, alloc - share, -np.inf)
        alloc[int(np.argmax(over))] -= 1
    return alloc


IVF_CHUNK = 8192  # vectors read, assigned and written at a time when an IVF index is made


class ArrayVectors:
    """Vectors held in memory, read the way ``VectorFile`` reads its file."""

    def __init__(self, vectors: np.ndarray):
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.n, self.d = self.vectors.shape

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, self.n, IVF_CHUNK):
            yield start, self.vectors[start:start + IVF_CHUNK]

    def grouped(self, group: np.ndarray, sizes: np.ndarray) -> Callable[[int], np.ndarray]:
        return lambda g: self.vectors[group == g]


class VectorFile:
    """float32 vectors of dimension ``d`` in a raw file (what a build writes as the encoder
    returns them), read ``IVF_CHUNK`` at a time, so that making an IVF index never holds them."""

    def __init__(self, path: Path, d: int):
        self.path, self.d = Path(path), int(d)
        self.n = self.path.stat().st_size // (4 * self.d)
        self.scratch = _scratch_of(self.path)

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        with open(self.path, "rb") as fh:
            for start in range(0, self.n, IVF_CHUNK):
                m = min(IVF_CHUNK, self.n - start)
                yield start, np.fromfile(fh, dtype=np.float32, count=m * self.d).reshape(m, self.d)

    def grouped(self, group: np.ndarray, sizes: np.ndarray) -> Callable[[int], np.ndarray]:
        """The vectors of each group, in id order: written once, group after group, to
        ``scratch`` beside this file, then read back a group at a time."""
        first = _starts(sizes)
        row = 4 * self.d
        with open(self.scratch, "wb") as out:
            at = first.copy()
            for start, a in self.chunks():
                places = _places(group[start:start + len(a)], at)
                for rows in _runs(places):
                    out.seek(int(places[rows[0]]) * row)
                    out.write(memoryview(np.ascontiguousarray(a[rows])).cast("B"))

        def members(g: int) -> np.ndarray:
            with open(self.scratch, "rb") as fh:
                fh.seek(int(first[g]) * row)
                return np.fromfile(fh, dtype=np.float32, count=int(sizes[g]) * self.d).reshape(-1, self.d)
        return members

    def remove(self) -> None:
        remove_vector_files(self.path)


def _scratch_of(path: Path) -> Path:
    """Where ``VectorFile.grouped`` lays out the vectors of ``path`` group by group."""
    return path.with_name(path.name + ".grouped")


def remove_vector_files(path: Path) -> None:
    """Remove a ``VectorFile`` and its scratch file (either may be missing)."""
    path = Path(path)
    path.unlink(missing_ok=True)
    _scratch_of(path).unlink(missing_ok=True)


def _starts(sizes: np.ndarray) -> np.ndarray:
    """Where each group begins when the groups of ``sizes`` are laid end to end."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.cumsum(sizes) - sizes


def _places(keys: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The place of each of a chunk's vectors (group ``keys``, in id order) when every group's
    vectors stand together in id order from ``first[group]``; ``first`` is advanced past the
    chunk's vectors, so that chunks given in id order continue where the last one stopped."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    counts = np.bincount(k, minlength=len(first))
    places = np.empty(len(keys), dtype=np.int64)
    places[order] = first[k] + np.arange(len(k)) - _starts(counts)[k]
    first += counts
    return places


def _runs(places: np.ndarray, keys: np.ndarray | None = None) -> Iterator[np.ndarray]:
    """The chunk's rows in runs of consecutive places (and one key), each run in place order."""
    order = np.argsort(places, kind="stable")
    cut = np.diff(places[order]) != 1
    if keys is not None:
        cut |= np.diff(keys[order]) != 0
    for run in np.split(order, np.flatnonzero(cut) + 1):
        if len(run):
            yield run


def _assign(quantizer, source) -> np.ndarray:
    """The nearest centroid (largest inner product) of every vector, a chunk at a time."""
    out = np.empty(source.n, dtype=np.int64)
    for start, a in source.chunks():
        _, idx = quantizer.search(np.ascontiguousarray(a), 1)
        out[start:start + len(a)] = idx[:, 0]
    return out


def ivf_centroids(source, nlist: int, *, seed: int = 0) -> np.ndarray:
    """``nlist`` unit centroids for an IVF index over ``source`` (``ArrayVectors`` or
    ``VectorFile``) by two-level spherical k-means: sqrt(nlist) coarse groups, trained on a
    seeded sample of at most 256 vectors per group (FAISS's own cap), every vector assigned to
    one, then each group's share of the lists trained on the group's vectors (a one-level
    k-means of n/40 lists over all n vectors would take minutes at 250,000). The centroids are
    unit vectors, so that a vector goes to the list of the most similar centroid. ``source`` is
    read a chunk at a time: what is held is the sample, one group's vectors and an integer per
    vector."""
    import faiss

    n, d = source.n, source.d
    opts = dict(niter=10, spherical=True, min_points_per_centroid=1, max_points_per_centroid=256)
    coarse = max(1, min(int(round(math.sqrt(nlist))), nlist))
    m = min(n, coarse * 256)
    rows = np.arange(n) if m == n else np.sort(np.random.default_rng(seed).choice(n, m, replace=False))
    sample = np.concatenate([a[rows[(rows >= s) & (rows < s + len(a))] - s] for s, a in source.chunks()])
    km = faiss.Kmeans(d, coarse, seed=seed + 1, **opts)
    km.train(sample)
    del sample
    group = _assign(km.index, source)
    sizes = np.bincount(group, minlength=coarse)
    alloc = _share(sizes, nlist)
    members_of = source.grouped(group, sizes)
    del group
    parts = []
    for g in range(coarse):
        if alloc[g] == 0:
            continue
        members = members_of(g)
        if alloc[g] == 1:
            parts.append(members.mean(axis=0, keepdims=True))
            continue
        sub = faiss.Kmeans(d, int(alloc[g]), seed=seed + 2 + g, **opts)
        sub.train(members)
        parts.append(sub.centroids)
    centroids = np.concatenate(parts).astype(np.float32)
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(centroids)


def _empty_ivf(centroids: np.ndarray):
    """An IndexIVFFlat (inner product) whose quantizer holds ``centroids``, no vectors."""
    import faiss

    nlist, dim = centroids.shape
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    index.quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
    index.is_trained = True
    return index


# what follows the head in FAISS's serialisation of an empty IVF index: no direct map (a type
# byte and an empty array), then the lists ("ilar", nlist, code size, "sprs", no pairs)
_EMPTY_TAIL = 1 + 8 + 4 + 8 + 8 + 4 + 8


class IvfIndexWriter:
    """Writes an ``IndexIVFFlat`` (inner product, with its direct map) file byte for byte as
    ``faiss.write_index`` writes the index FAISS makes by adding the same vectors to an index
    with the same centroids, reading the vectors a chunk at a time, so that a build never holds
    them (384 MB at 181,006 concepts).

    The head (the index header and the quantizer with its centroids) is FAISS's own
    serialisation of the empty index, with the vector count filled in; then the direct map
    (list << 32 | offset, per id), the lists' sizes (all of them, or the non-empty ones when
    those are at most half) and the lists, each list's vectors then their ids, in id order.
    The layout is checked against FAISS when the writer is made (ModelError if this FAISS
    writes an IVF index otherwise)."""

    checked = False  # the layout check passed in this process

    def __init__(self, centroids: np.ndarray, *, check: bool = True):
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.nlist, self.dim = self.centroids.shape
        if check and not IvfIndexWriter.checked:
            _check_ivf_writer()
            IvfIndexWriter.checked = True

    def write(self, fh: IO[bytes], source) -> int:
        """Write the index of ``source``'s vectors to ``fh`` (seekable; from where it stands);
        return how many vectors it holds."""
        import faiss

        empty = _empty_ivf(self.centroids)
        head = bytearray(faiss.serialize_index(empty).tobytes()[:-_EMPTY_TAIL])
        head[8:16] = struct.pack("=q", source.n)  # after the fourcc and the int32 dimension
        lists = _assign(empty.quantizer, source)
        sizes = np.bincount(lists, minlength=self.nlist).astype(np.int64)
        offset = _places(lists, np.zeros(self.nlist, dtype=np.int64))  # each id's place in its list
        code = 4 * self.dim
        fh.write(bytes(head))
        # the direct map: an array holding (list << 32 | offset in the list) for every id
        fh.write(b"\x01" + struct.pack("=Q", source.n))
        fh.write(((lists << 32) | offset).astype("<i8").tobytes())
        fh.write(b"ilar" + struct.pack("=QQ", self.nlist, code))
        nonzero = np.flatnonzero(sizes)
        if len(nonzero) > self.nlist // 2:
            fh.write(b"full" + struct.pack("=Q", self.nlist) + sizes.astype("<u8").tobytes())
        else:
            pairs = np.stack([nonzero, sizes[nonzero]], axis=1).astype("<u8").reshape(-1)
            fh.write(b"sprs" + struct.pack("=Q", len(pairs)) + pairs.tobytes())
        # list l's block: its vectors, then their ids; the blocks laid end to end
        data = fh.tell()
        block = data + _starts(sizes) * (code + 8)
        for s, a in source.chunks():
            lst, within = lists[s:s + len(a)], offset[s:s + len(a)]
            for rows in _runs(within, lst):
                l, w = int(lst[rows[0]]), int(within[rows[0]])
                fh.seek(int(block[l]) + w * code)
                fh.write(memoryview(np.ascontiguousarray(a[rows])).cast("B"))
                fh.seek(int(block[l]) + int(sizes[l]) * code + w * 8)
                fh.write((rows + s).astype("<i8").tobytes())
        fh.seek(data + int(sizes.sum()) * (code + 8))
        return source.n


def _check_ivf_writer() -> None:
    """ModelError unless the writer's bytes are FAISS's for two small indexes: one with most
    lists holding vectors (the sizes written in full) and one with few (sparse)."""
    import io

    import faiss

    rng = np.random.default_rng(0)
    for nlist, n in ((3, 7), (8, 3)):
        centroids = rng.standard_normal((nlist, 4)).astype(np.float32)
        vectors = rng.standard_normal((n, 4)).astype(np.float32)
        reference = _empty_ivf(centroids)
        reference.add(vectors)
        reference.make_direct_map()
        out = io.BytesIO()
        IvfIndexWriter(centroids, check=False).write(out, ArrayVectors(vectors))
        if out.getvalue() != faiss.serialize_index(reference).tobytes():
            raise ModelError(f"FAISS {faiss.__version__} writes an IVF index in a layout this writer does not know",
                             hint="set linking.index to flat (streamed) or hnsw; tested with faiss-cpu 1.15")


def fill_index(index, vectors: np.ndarray, *, seed: int = 0):
    """``index`` holding ``vectors``, returned: an IVF index is trained (``ivf_centroids``),
    written by ``IvfIndexWriter`` and read back, so that it is the index a build writes from
    the same vectors; a flat or hnsw index is filled in place."""
    import io

    import faiss

    if hasattr(index, "nlist"):
        source = ArrayVectors(vectors)
        out = io.BytesIO()
        IvfIndexWriter(ivf_centroids(source, int(index.nlist), seed=seed)).write(out, source)
        return faiss.deserialize_index(np.frombuffer(out.getbuffer(), dtype=np.uint8))
    if len(vectors):
        index.add(vectors)
    return index


# --- exact search in an IVF index ----------------------------------------------------------

LARGE_FLAT = 100_000  # surface forms above which link build suggests the exact ivf search
BOUND_BATCH = 512  # vectors per bounded search (a float64 vector x list matrix each)
BOUND_MARGIN = 1e-6  # the bound's allowance for rounding
RANGE_MARGIN = 1e-4  # rows this far below the threshold are returned too, for an exact rescoring
# rows per step of the bounds' pass over the vectors: each step holds them, and their lists'
# centres, in float64 (8,192 rows: 2 x 25 MB; 65,536 held 500 MB at its peak)
BOUNDS_ROWS = 8192
RANGE_MIN = 0.5  # below this threshold the linker's IVF search reads every list (rows_within would return most rows)


class IvfBounds:
    """Where the vectors of each list of an IVF index lie: ``centroid[l]`` (unit, float64),
    ``radius[l]`` (every vector of list ``l`` is within that angle of it, in radians) and
    ``largest[l]`` (the largest norm; 0 for an empty list). Read from the lists themselves, so
    the bound holds whatever trained them. Keeps a reference to the index: the IVF part it
    searches (``_ivf``) belongs to it."""

    def __init__(self, index):
        import faiss

        ivf = faiss.extract_index_ivf(index)
        self._index = index
        self._ivf = ivf
        nlist = ivf.nlist
        centroids = ivf.quantizer.reconstruct_n(0, nlist).astype(np.float64)
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-300)
        self.centroid = centroids
        self.radius = np.zeros(nlist)
        self.largest = np.zeros(nlist)
        if ivf.direct_map.type == faiss.DirectMap.NoMap:
            ivf.make_direct_map()
        # each row's list from the direct map (list << 32 | offset); the rows read back in
        # chunks, so the bound costs one pass over the vectors and no copy of them all
        where = faiss.vector_to_array(ivf.direct_map.array) >> 32
        least = np.full(nlist, np.inf)
        for start in range(0, ivf.ntotal, BOUNDS_ROWS):
            stop = min(start + BOUNDS_ROWS, ivf.ntotal)
            x = ivf.reconstruct_n(start, stop - start).astype(np.float64)
            lists = where[start:stop]
            norms = np.linalg.norm(x, axis=1)
            cos = np.einsum("ij,ij->i", x, centroids[lists]) / np.maximum(norms, 1e-300)
            np.minimum.at(least, lists, cos)
            np.maximum.at(self.largest, lists, norms)
        filled = np.isfinite(least)
        self.radius[filled] = np.arccos(np.clip(least[filled], -1.0, 1.0))

    def lists_within(self, vectors: np.ndarray, threshold: float) -> np.ndarray:
        """Per vector, which lists (a boolean vector x list matrix) can hold a row whose inner
        product with it reaches ``threshold``. A row of list ``l`` is at least angle(q,
        centroid[l]) - radius[l] away from q (the triangle inequality on the sphere), so its
        inner product is at most the cosine of that times its norm. Computed in float64 and
        kept with a margin of 1e-6, far above its rounding and the float32 products' (a few
        1e-7)."""
        q = np.asarray(vectors, dtype=np.float64)
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-300)
        filled = self.largest > 0
        if threshold <= BOUND_MARGIN:
            return np.repeat(filled[None, :], len(q), axis=0)
        # in place, one vector x list matrix (BOUND_BATCH x nlist float64: 25 MB at 6,248 lists)
        best = q @ self.centroid.T
        np.clip(best, -1.0, 1.0, out=best)
        np.arccos(best, out=best)
        best -= self.radius[None, :]
        np.maximum(best, 0.0, out=best)
        np.cos(best, out=best)
        best *= np.maximum(self.largest, 1.0)[None, :]
        return (best >= threshold - BOUND_MARGIN) & filled[None, :]

    def rows_within(self, vectors: np.ndarray, threshold: float,
                    allowed_rows: np.ndarray | None = None) -> list[np.ndarray]:
        """Per vector, the rows (of ``allowed_rows`` when given) whose inner product with it
        reaches ``threshold``, with any within RANGE_MARGIN below it (for the caller's exact
        rescoring to decide): a range search that reads only the lists that can hold such a
        row (FAISS's range search over each vector's own lists). Reading list by list instead,
        one matrix product per list for all the vectors that need it, was slower in assembly's
        pool workers (a Python step per list and call: 121 s against 85 s at 181,006
        concepts)."""
        keep = None
        if allowed_rows is not None:
            keep = np.zeros(self._ivf.ntotal, dtype=bool)
            keep[np.asarray(allowed_rows, dtype=np.int64)] = True
        out: list[np.ndarray] = []
        for start in range(0, len(vectors), BOUND_BATCH):
            q = np.ascontiguousarray(vectors[start:start + BOUND_BATCH], dtype=np.float32)
            need = self.lists_within(q, threshold)
            fq, fr = self._range(q, need, threshold - RANGE_MARGIN)
            if keep is not None:
                fq, fr = fq[keep[fr]], fr[keep[fr]]
            order = np.argsort(fq, kind="stable")
            counts = np.bincount(fq, minlength=len(q))
            out.extend(np.split(fr[order], np.cumsum(counts)[:-1]))
        return out

    def _range(self, q: np.ndarray, need: np.ndarray, least: float) -> tuple[np.ndarray, np.ndarray]:
        """(vector, row) pairs with a product of at least ``least``, by FAISS's range search over
        the lists ``need`` marks for each vector (the C++ call: FAISS's Python wrapper takes no
        params and wants nprobe set on the shared index)."""
        import faiss

        counts = need.sum(axis=1)
        rows, lists = np.nonzero(need)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        assign = np.full((len(q), max(int(counts.max(initial=0)), 1)), -1, dtype=np.int64)
        assign[rows, np.arange(len(rows)) - first[rows]] = lists
        params = faiss.SearchParametersIVF(nprobe=assign.shape[1])
        res = faiss.RangeSearchResult(len(q))
        # FAISS keeps an inner product above the radius (strictly): just below ``least``
        self._ivf.range_search_preassigned_c(len(q), faiss.swig_ptr(q), float(np.nextafter(np.float32(least), -1)),
                                             faiss.swig_ptr(assign), faiss.swig_ptr(np.zeros(assign.shape, dtype=np.float32)),
                                             res, False, params)
        lims = faiss.rev_swig_ptr(res.lims, len(q) + 1).astype(np.int64)
        found_r = faiss.rev_swig_ptr(res.labels, int(lims[-1])).copy() if lims[-1] else np.zeros(0, dtype=np.int64)
        found_q = np.repeat(np.arange(len(q), dtype=np.int64), np.diff(lims))
        return found_q, found_r.astype(np.int64)


# --- the vocabulary ---------------------------------------------------------------------------


@dataclass
class VocabularyCounts:
    """What ``iter_vocabulary`` saw: distinct concept ids (known before the first concept is
    yielded), concepts and surface forms yielded, repeated ids merged, concepts without a name."""

    distinct: int = 0
    concepts: int = 0
    classes: int = 0
    instances: int = 0
    surfaces: int = 0
    merged_duplicates: int = 0
    without_surface: int = 0


def _concept_entry(c: Concept) -> tuple[dict, list[str]]:
    entry = {
        "id": c.id, "kind": c.kind, "label": c.label,
        "seed_classes": list(c.seed_classes), "instance_of": list(c.instance_of),
        "subclass_of": list(c.subclass_of),
    }
    return entry, [x for x in [c.label, *c.aliases] if x]


def _merge_concept(entry: dict, names: list[str], c: Concept) -> None:
    if c.kind == "class":
        entry["kind"] = "class"
    if not entry["label"] and c.label:
        entry["label"] = c.label
    for key in ("seed_classes", "instance_of", "subclass_of"):
        entry[key] += [q for q in getattr(c, key) if q not in entry[key]]
    names += [x for x in [c.label, *c.aliases] if x]


def _surface_rows(entry: dict, names: list[str]) -> list[dict]:
    """One row per distinct folded name, the first spelling kept (the label when there is one)."""
    seen: set[str] = set()
    rows = []
    for name in names:
        key = fold(clean(name))
        if not key or key in seen:
            continue
        seen.add(key)
        rows.append({"qid": entry["id"], "surface": name, "primary": bool(entry["label"]) and name == entry["label"]})
    return rows


def iter_vocabulary(path: Path, *, lenient: bool = False, stats: ReadStats | None = None,
                    counts: VocabularyCounts | None = None) -> Iterator[tuple[dict, list[dict]]]:
    """Stream a concepts JSONL file (Concept contract) as ``(concept record, surface rows)``.

    Concept records are compact (``id``, ``kind``, ``label``, ``seed_classes``, ``instance_of``,
    ``subclass_of``); a surface row ``{"qid", "surface", "primary"}`` stands for each distinct
    label or alias. Concepts come in the order of their first line. A concept id seen twice is
    merged (aliases and seed classes united, ``class`` wins over ``instance``) and counted.
    Surface forms of one concept that fold to the same key ("War", "war") keep one row, the
    first (the label when there is one). A concept with no label and no alias cannot be linked
    to; it is counted and left out.

    Nothing grows with the file but the set of its ids: a first pass finds the repeated ids, a
    second (only when there are any) merges those, the last yields. ``stats`` counts the last
    pass's lines; SchemaError names ``path:line`` (raised by the first pass, before anything is
    yielded, unless ``lenient``).
    """
    return _vocabulary(lambda last: read_jsonl(path, Concept, lenient=lenient, stats=stats if last else None),
                       counts if counts is not None else VocabularyCounts())


@dataclass
class Vocabulary:
    """Concepts and their surface forms, collected in memory (``collect_vocabulary``)."""

    concepts: list[dict]
    surfaces: list[dict]
    counts: VocabularyCounts


def collect_vocabulary(records: Iterable[Concept]) -> Vocabulary:
    """``iter_vocabulary``'s records and rows, of concepts already in memory, in two lists."""
    records = list(records)
    counts = VocabularyCounts()
    concepts: list[dict] = []
    surfaces: list[dict] = []
    for entry, rows in _vocabulary(lambda last: records, counts):
        concepts.append(entry)
        surfaces.extend(rows)
    return Vocabulary(concepts, surfaces, counts)


def _vocabulary(passes: Callable[[bool], Iterable[Concept]], counts: VocabularyCounts) -> Iterator[tuple[dict, list[dict]]]:
    """``iter_vocabulary`` over ``passes(last)``: the records afresh on each call (``last``
    on the pass that yields)."""
    seen: set[str] = set()
    repeated: set[str] = set()
    for c in passes(False):
        (repeated if c.id in seen else seen).add(c.id)
    counts.distinct = len(seen)
    del seen
    merged: dict[str, tuple[dict, list[str]]] = {}
    if repeated:
        for c in passes(False):
            if c.id not in repeated:
                continue
            if c.id in merged:
                _merge_concept(*merged[c.id], c)
                counts.merged_duplicates += 1
            else:
                merged[c.id] = _concept_entry(c)
    for c in passes(True):
        if c.id in repeated:
            if c.id not in merged:
                continue  # a later line of a repeated id: its concept came at the first
            entry, names = merged.pop(c.id)
        else:
            entry, names = _concept_entry(c)
        rows = _surface_rows(entry, names)
        if not rows:
            counts.without_surface += 1
            continue
        counts.concepts += 1
        counts.classes += entry["kind"] == "class"
        counts.instances += entry["kind"] == "instance"
        counts.surfaces += len(rows)
        yield entry, rows


class FlatIndexWriter:
    """Writes an ``IndexFlatIP`` file byte for byte as ``faiss.write_index`` does, a chunk of
    vectors at a time, so that a build never holds the vectors (384 MB at 181,006 concepts).

    The header is FAISS's own serialisation of an empty index of the same dimension; the two
    counts in it (vectors, then floats, which ends the header) are filled in by ``finish``. The
    layout is checked against FAISS when the writer is made (ModelError if this FAISS writes a
    flat index otherwise).
    """

    def __init__(self, fh: IO[bytes], dim: int):
        import faiss

        self.fh, self.dim, self.ntotal = fh, int(dim), 0
        self.header = faiss.serialize_index(faiss.IndexFlatIP(self.dim)).tobytes()
        probe = faiss.IndexFlatIP(self.dim)
        probe.add(np.ones((1, self.dim), dtype=np.float32))
        expected = self._patched(1) + np.ones(self.dim, dtype=np.float32).tobytes()
        if self.header[:4] != b"IxFI" or faiss.serialize_index(probe).tobytes() != expected:
            raise ModelError(f"FAISS {faiss.__version__} writes a flat index in a layout this writer does not know",
                             hint="set linking.index to hnsw or ivf (written by FAISS itself); tested with faiss-cpu 1.15")
        self.start = fh.tell()
        fh.write(self.header)

    def _patched(self, ntotal: int) -> bytes:
        h = bytearray(self.header)
        h[8:16] = struct.pack("=q", ntotal)  # after the fourcc and the int32 dimension
        h[-8:] = struct.pack("=q", ntotal * self.dim)  # the codes' length, in floats
        return bytes(h)

    def add(self, vectors: np.ndarray) -> None:
        a = np.ascontiguousarray(vectors, dtype=np.float32)
        if a.ndim != 2 or a.shape[1] != self.dim:
            raise ModelError(f"the encoder returned vectors of shape {a.shape}, expected (n, {self.dim})")
        if len(a):
            self.fh.write(memoryview(a).cast("B"))
            self.ntotal += len(a)

    def finish(self) -> None:
        end = self.fh.tell()
        self.fh.seek(self.start)
        self.fh.write(self._patched(self.ntotal))
        self.fh.seek(end)


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
    counts = manifest.get("counts") or {}
    settings = build_settings(cfg, concepts=counts.get("distinct", counts.get("concepts", 0)))
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
    settings = build_settings(cfg)  # auto: resolved by the vocabulary's size (as built, or when building)
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
            "index": (manifest.get("index") or {}).get("settings", settings), "counts": manifest.get("counts", {}),
            "notes": [], "reasons": [],
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
        vectors = self.encoder.encode(texts)
        release_free_heap()
        return vectors

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
    stats = ReadStats()
    seen = VocabularyCounts()
    vocabulary = iter_vocabulary(path, lenient=lenient, stats=stats, counts=seen)
    first = next(vocabulary, None)  # the file is read and checked once through before the model loads
    if first is None:
        raise SourceError(f"{path}: no concept with a label or alias", hint="run causalkg corpus build")
    t_read = time.perf_counter() - t0
    if settings["type"] == "auto":  # the distinct ids are counted before the first concept comes
        settings = build_settings(cfg, concepts=seen.distinct)

    # The vocabulary streams through: each concept's record and surface rows are written as
    # they are read, and the surface forms go to the encoder EMBED_CHUNK at a time (the
    # chunking, and so the vectors, as when the whole list was cut into chunks). A flat index
    # is written as the vectors come back; hnsw and ivf need them all, in one array.
    folder.mkdir(parents=True, exist_ok=True)
    # The manifest goes first and comes back last: a build killed in between leaves no
    # manifest, so the half-written folder counts as missing rather than current.
    (folder / MANIFEST_NAME).unlink(missing_ok=True)
    flat, ivf = settings["type"] == "flat", settings["type"] == "ivf"
    t1 = time.perf_counter()
    with ExitStack() as files:  # the files come into place in reverse: index, surfaces, concepts
        concepts_fh = files.enter_context(atomic_write(folder / CONCEPTS_FILE))
        surfaces_fh = files.enter_context(atomic_write(folder / SURFACES_FILE))
        index_fh = files.enter_context(atomic_write(folder / INDEX_FILE, "wb"))

        def chunks() -> Iterator[tuple[list[str], int]]:
            """(EMBED_CHUNK surface forms, the concepts written so far), the last chunk shorter."""
            texts: list[str] = []
            written = 0
            for entry, rows in itertools.chain([first], vocabulary):
                concepts_fh.write(to_json_line(entry) + "\n")
                written += 1
                for row in rows:
                    surfaces_fh.write(to_json_line(row) + "\n")
                    texts.append(row["surface"])
                    if len(texts) == EMBED_CHUNK:
                        yield texts, written
                        texts = []
            if texts:
                yield texts, written

        writer: FlatIndexWriter | None = None
        parts: list[np.ndarray] = []
        # ivf: the vectors go to a raw file beside the index as they come, and the index is made
        # from it a chunk at a time (ivf_centroids, IvfIndexWriter); removed when the build ends
        # (a killed ivf build's files go at the next build of any type)
        raw = folder / (INDEX_FILE + ".vectors")
        remove_vector_files(raw)
        raw_fh = files.enter_context(open(raw, "wb")) if ivf else None
        if ivf:
            files.callback(remove_vector_files, raw)
        dim = 0

        def put(vecs: np.ndarray, n: int) -> None:
            nonlocal writer, dim
            if len(vecs) != n:
                raise ModelError(f"the encoder returned {len(vecs)} vectors for {n} surface forms")
            dim = int(vecs.shape[1])
            if flat:
                if writer is None:
                    writer = FlatIndexWriter(index_fh, vecs.shape[1])
                writer.add(vecs)
            elif ivf:
                raw_fh.write(memoryview(np.ascontiguousarray(vecs, dtype=np.float32)).cast("B"))
            else:
                parts.append(vecs)

        ray_stats = None
        with progress(total=seen.distinct, desc="embedding the concepts' names", unit="concept",
                      mode=cfg.get("run.progress", "auto")) as bar:
            shown = 0

            def advance(written: int) -> None:
                nonlocal shown
                bar.update(written - shown)
                shown = written

            if engine_of(cfg) == "ray":
                # run.engine = "ray": the chunks go to a pool of encoder actors (one model load
                # each, a GPU each when the cluster has them); vectors come back in chunk order.
                from causalkg.core.distributed import ActorPool, RaySettings, RayStats

                ray_stats = RayStats()
                opts = encoder_options(cfg)
                pool = ActorPool(EncodeWorker, (lk["model"], opts["device"], opts["batch_size"], opts["backend"], str(opts["cache_dir"])),
                                 RaySettings.from_config(cfg), stats=ray_stats)
                try:
                    encoder = _Described(*pool.call("identity"))
                    for (texts, written), vecs in pool.map_ordered("encode", chunks(), lambda c: (c[0],),
                                                                   what=lambda c: f"a chunk of {len(c[0])} surface forms"):
                        put(vecs, len(texts))
                        advance(written)
                finally:
                    pool.close()
            else:
                encoder = create_encoder(lk["model"], **encoder_options(cfg))
                for texts, written in chunks():
                    put(encoder.encode(texts), len(texts))
                    release_free_heap()  # the encoder's freed batches, or the heap grows chunk by chunk
                    advance(written)
            advance(seen.distinct)
        t_embed = time.perf_counter() - t1

        import faiss

        t2 = time.perf_counter()
        if writer is not None:
            writer.finish()
            dim = writer.dim
        elif ivf:
            raw_fh.close()
            source = VectorFile(raw, dim)
            centroids = ivf_centroids(source, ivf_nlist(settings.get("nlist", 0), source.n))
            IvfIndexWriter(centroids).write(index_fh, source)
            source.remove()
        else:  # hnsw: the graph is built over every vector at once
            vectors = np.concatenate(parts)
            parts.clear()
            dim = int(vectors.shape[1])
            faiss_index = fill_index(make_faiss_index(settings, dim, len(vectors)), vectors)
            del vectors  # the index holds its own copy
            # written through as FAISS serialises it (serialize_index would make two more copies)
            faiss.write_index(faiss_index, faiss.PyCallbackIOWriter(index_fh.write))
            del faiss_index
        t_index = time.perf_counter() - t2
    notes: list[str] = []
    if stats.skipped:
        notes.append(stats.summary())
    if seen.merged_duplicates:
        notes.append(f"{seen.merged_duplicates} repeated concept ids merged")
    if seen.without_surface:
        notes.append(f"{seen.without_surface} concepts without label or alias left out")
    if flat and seen.surfaces > LARGE_FLAT:
        notes.append(f"{seen.surfaces:,} surface forms in a flat index: every phrase linked is compared with all "
                     "of them; linking.index = \"ivf\" gives the same candidates with less reading (docs/linking.md)")
    counts = {
        "distinct": seen.distinct,
        "concepts": seen.concepts,
        "classes": seen.classes,
        "instances": seen.instances,
        "surfaces": seen.surfaces,
        "lines": stats.lines,
        "skipped_lines": stats.skipped,
        "merged_duplicates": seen.merged_duplicates,
        "without_surface": seen.without_surface,
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


_SHARED_STRINGS = ("id", "qid", "kind")  # values repeated across records
_SHARED_LISTS = ("seed_classes", "instance_of", "subclass_of")


def compact_record(rec: Any, shared: dict[Any, Any]) -> Any:
    """``rec`` (a surface row or a concept record of an index folder) with its QIDs and kinds
    as one string object each and its QID lists as tuples shared between the records that have
    the same list (``shared`` holds them). The same values, read-only lists: a linker loads
    these once per process, and at 181,006 concepts the records held about 90 MB less (their
    lists are mostly the same one or two classes)."""
    if not isinstance(rec, dict):
        return rec
    for key in _SHARED_STRINGS:
        value = rec.get(key)
        if type(value) is str:
            rec[key] = shared.setdefault(value, value)
    for key in _SHARED_LISTS:
        value = rec.get(key)
        if type(value) is list:
            items = tuple(shared.setdefault(q, q) if type(q) is str else q for q in value)
            rec[key] = shared.setdefault(items, items)
    return rec


class SurfaceRows(Sequence):
    """The surface rows of an index (row ``i`` describes vector ``i``) as three columns: the
    QIDs, the surface forms and the primary flags. ``rows[i]`` is the row as the file has it
    (``{"qid", "surface", "primary"}``); a linker reads the columns. One dict per row held about
    180 bytes more than its strings: at the 68,391-document world's 249,954 rows, 45 MB per
    process that loads the linker."""

    __slots__ = ("qid", "surface", "primary")

    def __init__(self, rows: Iterable[dict] = ()) -> None:
        self.qid: list[str] = []
        self.surface: list[str] = []
        self.primary = bytearray()
        for row in rows:
            self.append(row)

    def append(self, row: dict) -> None:
        self.qid.append(row["qid"])
        self.surface.append(row["surface"])
        self.primary.append(1 if row.get("primary") else 0)

    def __len__(self) -> int:
        return len(self.qid)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return {"qid": self.qid[i], "surface": self.surface[i], "primary": bool(self.primary[i])}

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, (SurfaceRows, list)) and len(self) == len(other) and all(
            a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]


def read_index_files(folder: Path):
    """(faiss index, surface rows as ``SurfaceRows``, concept records) of a built index folder."""
    import faiss

    # mapped, not copied: the vectors stay in the page cache, one copy however many processes
    # (the assembly's pool workers, Ray actors on a node) load the index
    index = faiss.read_index(str(folder / INDEX_FILE), getattr(faiss, "IO_FLAG_MMAP_IFC", 0))
    shared: dict[Any, Any] = {}
    surfaces = SurfaceRows(compact_record(r, shared) for r in read_jsonl(folder / SURFACES_FILE))
    concepts = [compact_record(r, shared) for r in read_jsonl(folder / CONCEPTS_FILE)]
    if index.ntotal != len(surfaces):
        raise SourceError(
            f"{folder}: {INDEX_FILE} has {index.ntotal} vectors but {SURFACES_FILE} {len(surfaces)} rows",
            hint=f"{BUILD_HINT} --force",
        )
    return index, surfaces, concepts
