"""The linker: cause and effect phrases -> ranked Wikidata concept candidates.

Flow: ``build_index`` (``linking.index``) persists the vocabulary in ``data/linking/``;
``Linker.load(cfg)`` reads it back; the kg stage calls ``linker.link(phrases, ...)`` once per
batch of phrases.

For each phrase (``linking.normalize``): normalise it; look its keys up among the surface forms
(exact match, tried in order: as written, without leading determiners and quantifiers, singular);
then take nearest neighbours of the normalised phrase's embedding in the FAISS index. Exact
candidates come first (score 1.0, a label before an alias), then nearest neighbours by cosine
similarity, one candidate per concept (its best surface form). Nearest neighbours whose
similarity is below the threshold are dropped; a nearest neighbour that is an *instance* (a
named, individual event: "Rwandan genocide", "2004 Cologne bombing") needs at least
``linking.instance_threshold`` as well, because a sentence encoder scores two different named
events of one kind as close ("Armenian Genocide" -> Rwandan genocide 0.72, "7 July 2005 London
bombings" -> 2004 Cologne bombing 0.64): below it the phrase is left to the classes.

Scores: 1.0 for an exact match, the cosine similarity for a nearest neighbour. Context: when a
``LinkContext`` names the document concept (the QID of the article the sentence comes from), a
candidate that is that concept or one of its seed classes gets ``linking.context_bonus`` added
to its score (the candidate then carries ``bonus`` and its raw ``similarity``). The bonus
reorders candidates of the same match kind; a nearest neighbour's score is capped at 1.0, so it
never passes an exact match and scores never rise along the list. The threshold applies to
the similarity before the bonus, so context never lets in a candidate the threshold keeps out;
the preferred concepts are scored even when they rank below the top k. The sentence is carried
but not used for scoring.
"""

from __future__ import annotations

import logging
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterable, Sequence

import numpy as np

from causalkg.core.config import Config
from causalkg.core.contracts import Candidate, Concept, is_qid
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.manifest import read_manifest
from causalkg.core.models import stage_device
from causalkg.linking.index import (
    BUILD_HINT,
    RANGE_MIN,
    IvfBounds,
    SurfaceRows,
    build_settings,
    collect_vocabulary,
    concepts_changed,
    fill_index,
    index_dir,
    make_faiss_index,
    read_index_files,
    recorded_concepts_path,
    staleness,
)
from causalkg.linking.normalize import Normalised, normalise, surface_keys

log = logging.getLogger(__name__)

KINDS = ("class", "instance")
# rows whose vectors one step of ``_similarities`` reads back: a phrase can reach tens of thousands
# of rows (at 181,006 concepts one shard's phrases reached ~50,000), whose vectors in float64 with
# their products held 400 MB at once; 4,096 rows hold 31 MB
SIMILARITY_ROWS = 4_096


@dataclass(frozen=True)
class LinkContext:
    """Where a phrase was found: its sentence and the QID of the document's concept (either may be None)."""

    sentence: str | None = None
    document_concept: str | None = None


def _kinds(kinds: Collection[str] | str | None) -> frozenset[str] | None:
    if kinds is None:
        return None
    chosen = frozenset([kinds] if isinstance(kinds, str) else kinds)
    bad = sorted(chosen - set(KINDS))
    if bad or not chosen:
        raise ConfigError(f"kinds must be a set of {', '.join(KINDS)}, got {sorted(chosen)}")
    return None if chosen == frozenset(KINDS) else chosen


class Linker:
    """Links phrases to concept candidates over one FAISS index. Build with ``Linker.load(cfg)``
    (the persisted index) or ``Linker.from_concepts(concepts, cfg)`` (in memory).

    ``model_id`` (the configured model name), ``threshold`` and ``instance_threshold`` are for
    provenance (``search_settings`` lists everything that changes answers at query time)."""

    def __init__(
        self,
        *,
        index: Any,
        surfaces: Sequence[dict],
        concepts: list[dict],
        cfg: Config,
        model_fingerprint: str | None = None,
        encoder: Any = None,
        folder: Path | None = None,
        settings: dict[str, Any] | None = None,
    ):
        lk = cfg["linking"]
        self.index = index
        # the rows as columns (SurfaceRows): a linker at 250,000 rows holds no dict per row
        self.surfaces = surfaces if isinstance(surfaces, SurfaceRows) else SurfaceRows(surfaces)
        self.concepts: dict[str, dict] = {c["id"]: c for c in concepts}
        self.model_id: str = lk["model"]
        self.model_fingerprint = model_fingerprint
        self.threshold: float = float(lk["threshold"])
        self.instance_threshold: float = float(lk.get("instance_threshold", self.threshold))
        self.top_k: int = int(lk["top_k"])
        self.context_bonus: float = float(lk["context_bonus"])
        self.device: str = stage_device(cfg, "linking.device")
        self.batch_size: int = int(lk["batch_size"])
        self.backend: str = str(lk.get("backend", "torch"))
        self.onnx_cache = cfg.path("paths.cache") / "onnx"
        # what was built (an index loaded from its folder); else the settings for these concepts
        self.settings = settings or build_settings(cfg, concepts=len(self.concepts))
        self.hnsw_ef_search = int(lk["hnsw_ef_search"])
        self.ivf_nprobe = int(lk["ivf_nprobe"])
        self.folder = folder
        self._encoder = encoder
        self.row_qid = np.array(self.surfaces.qid, dtype=object)
        self._ranking: tuple[dict[str, int], np.ndarray, np.ndarray] | None = None  # _row_ranking()
        self._rows_of: dict[str, list[int]] = defaultdict(list)
        for row, qid in enumerate(self.surfaces.qid):
            self._rows_of[qid].append(row)
        # Exact-match tables: a surface's own folded form, and (second) the form without a
        # leading article. A phrase key is looked up in the first table, then the second.
        self._exact: tuple[dict[str, list[int]], dict[str, list[int]]] = (defaultdict(list), defaultdict(list))
        for row, surface in enumerate(self.surfaces.surface):
            keys = surface_keys(surface)
            if keys:
                self._exact[0][keys[0]].append(row)
            for key in keys[1:]:
                self._exact[1][key].append(row)
        self._children: dict[str, list[str]] | None = None
        self._under_cache: dict[tuple[str, ...], frozenset[str]] = {}
        self._rows_cache: dict[frozenset[str], np.ndarray] = {}
        self._bounds: IvfBounds | None = None  # an exact IVF search's list bounds, on first use

    # --- construction --------------------------------------------------------------------------

    @classmethod
    def load(cls, cfg: Config, *, concepts_path: str | os.PathLike | None = None, check: bool = True) -> "Linker":
        """Load the persisted index from ``<paths.data>/linking``.

        Raises SourceError (hint: run causalkg link build) when the index is missing, or stale:
        built with another model or model content, other index settings, or from a concepts file
        that has changed since (``concepts_path``, default the file it was built from; when that
        file is gone the vocabulary cannot be checked and a warning is logged). ``check=False``
        skips the checks (for inspecting an old index).
        """
        folder = index_dir(cfg)
        manifest = read_manifest(folder)
        if manifest is None:
            raise SourceError(f"no concept index in {folder}", hint=BUILD_HINT)
        if check:
            reasons = staleness(cfg, manifest, folder)
            recorded = recorded_concepts_path(manifest, cfg)
            path = Path(concepts_path) if concepts_path is not None else recorded
            if not reasons:
                if path is not None and path.is_file():
                    if concepts_changed(manifest, path):
                        reasons.append(f"{path} changed since the index was built")
                else:
                    log.warning("cannot check the concept index against its vocabulary: %s is gone", path)
            if reasons:
                raise SourceError(f"the concept index in {folder} is stale: {'; '.join(reasons)}", hint=BUILD_HINT)
        index, surfaces, concepts = read_index_files(folder)
        fingerprint = (manifest.get("index") or {}).get("model_fingerprint")
        return cls(index=index, surfaces=surfaces, concepts=concepts, cfg=cfg,
                   model_fingerprint=fingerprint, folder=folder,
                   settings=(manifest.get("index") or {}).get("settings"))

    @classmethod
    def from_concepts(cls, concepts: Iterable[Concept | dict], cfg: Config, *, encoder: Any = None) -> "Linker":
        """An in-memory linker over ``concepts`` (Concept models or dicts), built with the
        configured model and index settings; nothing is written. For tests and benchmarks."""
        from causalkg.linking.encoder import create_encoder, encoder_options

        records = [c if isinstance(c, Concept) else Concept.model_validate(c) for c in concepts]
        vocab = collect_vocabulary(records)
        lk = cfg["linking"]
        enc = encoder or create_encoder(lk["model"], **encoder_options(cfg))
        vectors = enc.encode([s["surface"] for s in vocab.surfaces])
        index = make_faiss_index(build_settings(cfg, concepts=len(vocab.concepts)), enc.dim, len(vectors))
        index = fill_index(index, vectors)
        return cls(index=index, surfaces=vocab.surfaces, concepts=vocab.concepts, cfg=cfg,
                   model_fingerprint=enc.fingerprint, encoder=enc)

    @property
    def search_settings(self) -> dict[str, Any]:
        """The query-time settings that change answers (for fingerprints and provenance)."""
        return {"threshold": self.threshold, "instance_threshold": self.instance_threshold,
                "top_k": self.top_k, "context_bonus": self.context_bonus,
                "hnsw_ef_search": self.hnsw_ef_search, "ivf_nprobe": self.ivf_nprobe}

    @property
    def encoder(self):
        """The sentence encoder, loaded on first use (an all-exact batch with k=1 needs none)."""
        if self._encoder is None:
            from causalkg.linking.encoder import create_encoder

            self._encoder = create_encoder(self.model_id, device=self.device, batch_size=self.batch_size,
                                           backend=self.backend, cache_dir=self.onnx_cache)
        return self._encoder

    def __len__(self) -> int:
        return len(self.surfaces)

    # --- restrictions ----------------------------------------------------------------------

    def descendants(self, qids: Sequence[str]) -> frozenset[str]:
        """Concepts under any of ``qids``: the QIDs themselves, concepts listing one of them as a
        seed class, and everything below those through ``subclass_of`` / ``instance_of`` within
        the vocabulary."""
        key = tuple(sorted(set(qids)))
        if key in self._under_cache:
            return self._under_cache[key]
        for q in key:
            if not is_qid(q):
                raise ConfigError(f"under: {q!r} is not a Wikidata QID (Q followed by digits)")
        if self._children is None:
            children: dict[str, list[str]] = defaultdict(list)
            for c in self.concepts.values():
                for parent in {*c.get("subclass_of", []), *c.get("instance_of", []), *c.get("seed_classes", [])}:
                    if parent != c["id"]:
                        children[parent].append(c["id"])
            self._children = children
        seen = set(key)
        stack = list(key)
        while stack:
            for child in self._children.get(stack.pop(), ()):
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        result = frozenset(q for q in seen if q in self.concepts)
        self._under_cache[key] = result
        return result

    def allowed_concepts(self, kinds: Collection[str] | str | None = None,
                         under: Sequence[str] | None = None) -> frozenset[str] | None:
        """The concepts a restriction leaves (None: no restriction)."""
        chosen = _kinds(kinds)
        if chosen is None and not under:
            return None
        pool: Iterable[str] = self.descendants(under) if under else self.concepts
        return frozenset(q for q in pool if chosen is None or self.concepts[q]["kind"] in chosen)

    def _allowed_rows(self, allowed: frozenset[str]) -> np.ndarray:
        """Index rows of the allowed concepts (cached: a batch job asks the same restriction often)."""
        rows = self._rows_cache.get(allowed)
        if rows is None:
            rows = np.array(sorted(r for q in allowed for r in self._rows_of.get(q, ())), dtype=np.int64)
            if len(self._rows_cache) >= 16:
                self._rows_cache.clear()
            self._rows_cache[allowed] = rows
        return rows

    def _search_params(self, allowed_rows: np.ndarray | None):
        import faiss

        sel = faiss.IDSelectorBatch(allowed_rows) if allowed_rows is not None else None
        kind = self.settings["type"]
        if kind == "hnsw":
            params = faiss.SearchParametersHNSW(efSearch=self.hnsw_ef_search)
        elif kind == "ivf":
            # nprobe 0 (exact) below RANGE_MIN: every list (above it _nearest reads rows_within)
            params = faiss.SearchParametersIVF(nprobe=self.ivf_nprobe or faiss.extract_index_ivf(self.index).nlist)
        else:
            params = faiss.SearchParameters() if sel is not None else None
        if sel is not None:
            params.sel = sel
        return params, sel

    # --- linking ---------------------------------------------------------------------------

    def exact(self, norm: Normalised, allowed: frozenset[str] | None = None) -> list[tuple[str, int, bool]]:
        """Exact surface-form matches of a normalised phrase: ``(qid, row, is_label)``, label
        matches first, for the first of the phrase's keys that matches anything allowed."""
        for key in norm.keys:
            for table in self._exact:
                rows = table.get(key)
                if not rows:
                    continue
                best: dict[str, tuple[int, bool]] = {}
                for row in rows:
                    qid = self.surfaces.qid[row]
                    if allowed is not None and qid not in allowed:
                        continue
                    if not _acronym_written(self.surfaces.surface[row], norm.original):
                        continue
                    primary = bool(self.surfaces.primary[row])
                    if qid not in best or (primary and not best[qid][1]):
                        best[qid] = (row, primary)
                if best:
                    ordered = sorted(best.items(), key=lambda kv: (not kv[1][1], _qid_key(kv[0]), kv[1][0]))
                    return [(qid, row, primary) for qid, (row, primary) in ordered]
        return []

    def link(
        self,
        phrases: Sequence[str],
        k: int | None = None,
        contexts: Sequence[LinkContext | None] | None = None,
        kinds: Collection[str] | str | None = None,
        under: Sequence[str] | None = None,
        *,
        threshold: float | None = None,
        instance_threshold: float | None = None,
    ) -> list[list[Candidate]]:
        """Candidates for each phrase, best first: at most ``k`` (default ``linking.top_k``),
        none whose similarity is below ``threshold`` (default ``linking.threshold``), and no
        nearest-neighbour instance below ``instance_threshold`` (default
        ``linking.instance_threshold``; exact matches of an instance's label or alias are kept).

        ``contexts``: one LinkContext (or None) per phrase. ``kinds``: {"class"} or
        {"instance"} to keep one kind. ``under``: keep concepts under these QIDs (see
        ``descendants``). All phrases that need nearest neighbours are embedded in one batched
        encoder call. An empty, whitespace-only or punctuation-only phrase gets no candidates.
        Raises ConfigError on a bad argument (a string instead of a list, k < 1, a context list
        of the wrong length, an invalid QID).
        """
        if isinstance(phrases, str):
            raise ConfigError("link() takes a list of phrases, not one string", hint="wrap it: link([phrase])")
        phrases = list(phrases)
        k = self.top_k if k is None else int(k)
        if k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        threshold = self.threshold if threshold is None else float(threshold)
        instance_threshold = self.instance_threshold if instance_threshold is None else float(instance_threshold)
        if contexts is not None:
            contexts = list(contexts)
            if len(contexts) != len(phrases):
                raise ConfigError(f"{len(contexts)} contexts for {len(phrases)} phrases: give one per phrase (or None)")
        for i, p in enumerate(phrases):
            if not isinstance(p, str):
                raise ConfigError(f"phrase {i + 1} is {type(p).__name__}, not a string")
        allowed = self.allowed_concepts(kinds, under)
        norms = [normalise(p) for p in phrases]
        preferred = [self._preferred(contexts[i] if contexts else None) for i in range(len(phrases))]

        exact = [self.exact(n, allowed) if not n.empty else [] for n in norms]
        need = [i for i, n in enumerate(norms) if not n.empty and len(exact[i]) < k]
        nearest = self._nearest([norms[i].text for i in need], k, threshold, allowed,
                                exclude=[{q for q, _, _ in exact[i]} for i in need],
                                preferred=[preferred[i] for i in need],
                                instance_threshold=instance_threshold)
        near_by_phrase = dict(zip(need, nearest))

        results: list[list[Candidate]] = []
        for i, n in enumerate(norms):
            cands: list[tuple[tuple, Candidate]] = []
            for qid, row, primary in exact[i]:
                bonus = self.context_bonus if qid in preferred[i] else 0.0
                cands.append(((0, -(1.0 + bonus), 0.0, not primary, _qid_key(qid), row),
                              self._candidate(qid, row, 1.0, 1.0 + bonus, bonus, "exact")))
            for qid, row, sim in near_by_phrase.get(i, []):
                bonus = self.context_bonus if qid in preferred[i] else 0.0
                # capped at 1.0 so that scores fall along the list: no nearest neighbour
                # outscores an exact match, whatever its bonus
                score = min(sim + bonus, 1.0)
                cands.append(((1, -round(score, 9), -sim, False, _qid_key(qid), row),
                              self._candidate(qid, row, sim, score, bonus, "nearest")))
            cands.sort(key=lambda x: x[0])
            results.append([c for _, c in cands[:k]])
        return results

    def _preferred(self, context: LinkContext | None) -> frozenset[str]:
        if context is None or not context.document_concept:
            return frozenset()
        doc = context.document_concept
        if not is_qid(doc):
            raise ConfigError(f"LinkContext.document_concept {doc!r} is not a Wikidata QID")
        concept = self.concepts.get(doc)
        return frozenset([doc, *(concept.get("seed_classes", []) if concept else [])])

    def _candidate(self, qid: str, row: int, sim: float, score: float, bonus: float, match: str) -> Candidate:
        concept = self.concepts[qid]
        surface = self.surfaces.surface[row]
        extra = {"bonus": round(bonus, 6), "similarity": round(float(sim), 6)} if bonus else {}
        return Candidate(qid=qid, label=concept.get("label") or surface, surface=surface,
                         score=round(float(score), 6), kind=concept["kind"], match=match, **extra)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the linker's model in one batched call (normalised float32).
        A text repeated in the batch is embedded once."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.encoder.dim), dtype=np.float32)
        unique: dict[str, int] = {}
        inverse = np.fromiter((unique.setdefault(t, len(unique)) for t in texts), dtype=np.int64, count=len(texts))
        return np.ascontiguousarray(self.encoder.encode(list(unique))[inverse])

    def _nearest(self, texts: list[str], k: int, threshold: float, allowed: frozenset[str] | None,
                 exclude: list[set[str]], preferred: list[frozenset[str]] | None = None,
                 instance_threshold: float | None = None,
                 ) -> list[list[tuple[str, int, float]]]:
        """Per text: up to ``k - len(exclude)`` (qid, row, similarity) nearest concepts at or
        above ``threshold`` (instances: also at or above ``instance_threshold``), one per
        concept, best first; plus the text's ``preferred`` concepts (context) that reach the
        threshold wherever they rank, so that the bonus can lift them."""
        inst_min = threshold if instance_threshold is None else max(threshold, instance_threshold)
        if not texts:
            return []
        allowed_rows = self._allowed_rows(allowed) if allowed is not None else None
        if allowed_rows is not None and len(allowed_rows) == 0:
            return [[] for _ in texts]
        available = len(allowed_rows) if allowed_rows is not None else self.index.ntotal
        if available == 0:
            return [[] for _ in texts]
        vectors = self.embed(texts)
        out: list[list[tuple[str, int, float]]] = [[] for _ in texts]
        if self.settings["type"] == "ivf" and self.ivf_nprobe == 0 and threshold >= RANGE_MIN:
            # exact IVF: every row at or above the threshold, from the lists that can hold one
            if self._bounds is None:
                self._bounds = IvfBounds(self.index)
            for i, rows in enumerate(self._bounds.rows_within(vectors, threshold, allowed_rows)):
                out[i], _ = self._top(vectors[i], rows, threshold, inst_min, exclude[i], k - len(exclude[i]))
        else:
            self._search_widening(vectors, out, k, threshold, inst_min, exclude, allowed_rows, available)
        if preferred:
            for i, prefs in enumerate(preferred):
                present = {q for q, _, _ in out[i]} | exclude[i]
                extra = [q for q in prefs if q not in present and q in self._rows_of
                         and (allowed is None or q in allowed)]
                out[i] += self._similarity_to(vectors[i], extra, threshold, inst_min)
        return out

    def _search_widening(self, vectors: np.ndarray, out: list, k: int, threshold: float, inst_min: float,
                         exclude: list[set[str]], allowed_rows: np.ndarray | None, available: int) -> None:
        """``_nearest`` by the index's top rows: several surface forms of one concept can fill the
        first hits, so ask for more rows than concepts, and ask again (wider) for the vectors
        that came back short."""
        params, _sel = self._search_params(allowed_rows)  # _sel: keep the selector alive during search
        pending = list(range(len(vectors)))
        width = min(available, 3 * k + 10)
        while pending:
            _, I = self.index.search(vectors[pending], width, params=params)
            again = []
            for j, i in enumerate(pending):
                want = k - len(exclude[i])
                top, below = self._top(vectors[i], I[j], threshold, inst_min, exclude[i], want)
                exhausted = below or I[j][-1] < 0 or width >= available
                if len(top) < want and not exhausted:
                    again.append(i)
                    continue
                out[i] = top
            if not again:
                break
            pending = again
            width = min(available, width * 4)

    def _row_ranking(self) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        """(QID -> its place in ``_qid_key`` order, that place per row, whether each row's concept
        is an instance), made on first use."""
        if self._ranking is None:
            qids = sorted(self.concepts, key=_qid_key)
            place = {q: i for i, q in enumerate(qids)}
            per_row = np.array([place[q] for q in self.row_qid], dtype=np.int64)
            instance = np.array([self.concepts[q]["kind"] == "instance" for q in self.row_qid], dtype=bool)
            self._ranking = (place, per_row, instance)
        return self._ranking

    def _top(self, vector: np.ndarray, rows: np.ndarray, threshold: float, inst_min: float, exclude: set[str],
             want: int) -> tuple[list[tuple[str, int, float]], bool]:
        """(the ``want`` best (qid, row, similarity) of the concepts of ``rows``, each by its best
        row, at or above the threshold, an instance also at or above ``inst_min``, none of
        ``exclude``, by exact similarity, ties by QID, then row; whether a row below the
        threshold was among them, so that no row further down the index's ranking can count).
        ``rows`` are the index's hits (-1: none); its own scores depend on how many phrases were
        searched at once (FAISS switches to a BLAS product for 20 queries or more), so the
        ranking uses ``exact_similarity``, which depends on the two vectors alone. In array
        operations: a phrase can reach thousands of rows (a name that many concepts share, as
        the generated worlds' copies do)."""
        rows = np.asarray(rows, dtype=np.int64)
        rows = rows[rows >= 0]
        if len(rows) == 0:
            return [], False
        place, per_row, instance = self._row_ranking()
        sims = self._similarities(vector, rows)
        below = bool((sims < threshold).any())
        if want <= 0:
            return [], below
        ok = (sims >= threshold) & ~(instance[rows] & (sims < inst_min))
        if exclude:
            ok &= ~np.isin(per_row[rows], [place[q] for q in exclude if q in place])
        rows, sims = rows[ok], sims[ok]
        ranks = per_row[rows]
        order = np.lexsort((rows, ranks, -sims))  # the last key first: similarity, then QID, then row
        rows, sims, ranks = rows[order], sims[order], ranks[order]
        firsts = np.sort(np.unique(ranks, return_index=True)[1])[:want]  # each concept's best row, in order
        return [(self.row_qid[rows[j]], int(rows[j]), float(sims[j])) for j in firsts], below

    def _similarities(self, vector: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``exact_similarity`` of ``vector`` with the index's ``rows``, read back
        ``SIMILARITY_ROWS`` at a time (each row's value is its own: the same in any slicing)."""
        if len(rows) <= SIMILARITY_ROWS:
            return exact_similarity(vector, self.index.reconstruct_batch(rows))
        return np.concatenate([exact_similarity(vector, self.index.reconstruct_batch(rows[s:s + SIMILARITY_ROWS]))
                               for s in range(0, len(rows), SIMILARITY_ROWS)])

    def _similarity_to(self, vector: np.ndarray, qids: list[str], threshold: float,
                       instance_threshold: float | None = None) -> list[tuple[str, int, float]]:
        """(qid, best row, similarity) of ``vector`` to each concept's surface forms, at or above
        ``threshold`` (an instance: at or above ``instance_threshold`` when given)."""
        out = []
        for qid in qids:
            rows = np.asarray(self._rows_of[qid], dtype=np.int64)
            sims = self._similarities(vector, rows)
            j = int(np.argmax(sims))
            need = threshold
            if instance_threshold is not None and self.concepts[qid]["kind"] == "instance":
                need = max(threshold, instance_threshold)
            if sims[j] >= need:
                out.append((qid, int(rows[j]), float(sims[j])))
        return out


_ACRONYM = re.compile(r"^[A-Z][A-Z0-9.&]{1,5}$")


def _acronym_written(surface: str, phrase: str) -> bool:
    """False when ``surface`` is an acronym ("GA", "IS", "US") that ``phrase`` does not spell
    as one: folded keys are lower case, so "gas" (singular "ga") would otherwise match "GA",
    an alias of international relations, and "us" would match "US"."""
    if not _ACRONYM.match(surface):
        return True
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(surface)}(?![a-z0-9])", phrase) is not None


def exact_similarity(vector: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Inner products of one vector with each row, in float64 (float32 products are exact in
    float64) and rounded to 9 decimals: the same value whatever is computed beside it, so that
    rankings and ties (two concepts with the same label) do not depend on batching."""
    v = np.asarray(vector, dtype=np.float64)
    m = np.asarray(rows, dtype=np.float64).reshape(-1, v.shape[0])
    return np.round((m * v[None, :]).sum(axis=1), 9)


def _qid_key(qid: str) -> tuple[int, str]:
    """QIDs in numeric order (Q9 before Q10): the fixed tie-break between equal scores."""
    return (int(qid[1:]), qid) if qid[1:].isdigit() else (1 << 62, qid)


def query(
    cfg: Config,
    phrases: Sequence[str],
    *,
    top_k: int | None = None,
    threshold: float | None = None,
    kind: str | None = None,
    under: Sequence[str] | None = None,
    document_concept: str | None = None,
    instance_threshold: float | None = None,
) -> list[dict[str, Any]]:
    """What ``causalkg link query`` prints: load the index and link ``phrases``.

    Returns one dict per phrase: ``{"phrase", "normalised", "candidates": [Candidate dicts],
    "note"}`` (``note`` says why a phrase got nothing, or that a long one was truncated; None
    otherwise). Raises SourceError when the index is missing or stale, ConfigError on bad
    options.
    """
    linker = Linker.load(cfg)
    if threshold is not None and not -1.0 <= float(threshold) <= 1.0:
        raise ConfigError(f"--threshold must be a cosine similarity between -1 and 1, got {threshold}")
    if instance_threshold is not None and not -1.0 <= float(instance_threshold) <= 1.01:
        raise ConfigError(f"--instance-threshold must be a cosine similarity between -1 and 1 "
                          f"(or 1.01: never link an instance by similarity), got {instance_threshold}")
    contexts = [LinkContext(document_concept=document_concept)] * len(phrases) if document_concept else None
    results = linker.link(phrases, k=top_k, contexts=contexts, kinds={kind} if kind else None,
                          under=list(under) if under else None, threshold=threshold,
                          instance_threshold=instance_threshold)
    allowed = linker.allowed_concepts({kind} if kind else None, list(under) if under else None)
    out = []
    limit = None
    for phrase, cands in zip(phrases, results):
        norm = normalise(phrase)
        note = None
        if norm.empty:
            note = "empty phrase: nothing to link" if not phrase.strip() else "no letters or digits: nothing to link"
        else:
            if len(phrase) > 1000:
                if limit is None:
                    limit = linker.encoder.max_seq_length
                note = f"{len(phrase)} characters: the model reads only the first {limit} tokens"
            if not cands and allowed is not None and not allowed:
                what = f"{kind} " if kind else ""
                where = f" under {', '.join(under)}" if under else ""
                note = f"no {what}concept in the index{where}: nothing to link to"
            elif not cands:
                none = f"no candidate at or above threshold {linker.threshold if threshold is None else threshold}"
                note = f"{note}; {none}" if note else none
        out.append({
            "phrase": phrase,
            "normalised": norm.text,
            "candidates": [c.model_dump(mode="json") for c in cands],
            "note": note,
        })
    return out
