"""Textual similarities between node labels, for the soft edge measures and their meta-evaluation.

Each measure turns two lists of strings (candidates, references) into a score matrix. They are
chosen by name from ``SIMILARITIES`` (a ``causalkg.registry.Registry`` with lazy imports, so
choosing ``rouge1`` never loads torch), with an optional argument after a colon:

=================  =========================================================================
``exact``          1 when the labels are equal after case folding and whitespace collapsing
``verbatim``       1 when the strings are identical (the soft-measures study's "verbatim")
``bleu``           word-level sentence BLEU on lower-cased tokens, n-gram order up to the
                   shorter length (at most 4), smoothing method 1
``ref-bleu``       the study's BLEU: ``sentence_bleu(reference.split(), candidate)`` with the
                   strings as they are, i.e. character n-grams of the candidate against each
                   reference *word*; 0 for an empty candidate
``rouge1``         ``rouge_score`` ROUGE-1 F-measure with the Porter stemmer (both modes)
``meteor``         NLTK METEOR on lower-cased tokens, one reference (needs WordNet)
``ref-meteor``     the study's METEOR as old NLTK computed it:
                   ``meteor_score([w.lower().split() for w in reference.split()],
                   candidate.lower().split())``; 0 for an empty candidate
``embedding[:M]``  cosine of ``linking.encoder.Encoder`` vectors (default: offline MiniLM)
``bleurt:CKPT``    BLEURT with a checkpoint folder, when the ``bleurt`` package is installed
=================  =========================================================================

``reference_name`` maps a measure to the variant the ``reference`` mode uses (bleu -> ref-bleu,
meteor -> ref-meteor, exact -> verbatim). Pairwise measures cache their scores per instance, so a
label pair is scored once per run. Part of the evaluation stage.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from causalkg.core.errors import ConfigError, ModelError
from causalkg.registry import Spec, parse_spec, registry, split_version

SIMILARITIES = registry("similarity")  # causalkg.registry.CATALOG: versioned names, aliases

# What the reference mode uses in place of each measure (the study's implementations).
_REFERENCE_VARIANT = {"bleu": "ref-bleu", "meteor": "ref-meteor", "exact": "verbatim"}
# Canonical names (aliases fold into them), for config keys and output tables.
_CANONICAL = {"rouge": "rouge1", "cosine": "embedding"}


def canonical_name(name: str) -> str:
    spec = parse_spec(name)
    base = split_version(spec.backend)[0]
    return _CANONICAL.get(base, base)


def reference_name(name: str) -> str:
    """The measure spec the ``reference`` mode uses for ``name`` (argument kept)."""
    spec = parse_spec(name)
    base = split_version(spec.backend)[0]
    canon = _CANONICAL.get(base, base)
    return str(Spec(_REFERENCE_VARIANT.get(canon, canon), spec.arg))


class Similarity:
    """Base class: ``matrix(candidates, references)`` -> float array of shape (len(c), len(r)).

    Subclasses implement ``pair`` (one score) or override ``matrix`` (batched). Scores of pairs
    are cached per instance.
    """

    name = "similarity"
    quiet = False  # True: silence the library's warnings (NLTK's BLEU warns on zero n-gram counts)

    def __init__(self, arg: str = "", **_: Any):
        self.arg = arg
        self._cache: dict[tuple[str, str], float] = {}

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.arg}" if self.arg else self.name

    def pair(self, candidate: str, reference: str) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _score(self, candidate: str, reference: str) -> float:
        key = (candidate, reference)
        hit = self._cache.get(key)
        if hit is None:
            hit = float(self.pair(candidate, reference))
            self._cache[key] = hit
        return hit

    def score(self, candidate: str, reference: str) -> float:
        """One pair's score (cached)."""
        if not self.quiet:
            return self._score(candidate, reference)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._score(candidate, reference)

    def matrix(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(candidates), len(references)), dtype=np.float64)
        # One warnings context for the whole matrix: entering one per pair costs more than BLEU.
        with warnings.catch_warnings():
            if self.quiet:
                warnings.simplefilter("ignore")
            for i, c in enumerate(candidates):
                for j, r in enumerate(references):
                    out[i, j] = self._score(c, r)
        return out

    def prepare(self, labels: Sequence[str]) -> None:
        """Called once with every label of a run, for measures that batch (embeddings)."""


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


class ExactSimilarity(Similarity):
    name = "exact"

    def pair(self, candidate: str, reference: str) -> float:
        return 1.0 if _norm(candidate) == _norm(reference) else 0.0


class VerbatimSimilarity(Similarity):
    name = "verbatim"

    def pair(self, candidate: str, reference: str) -> float:
        return 1.0 if candidate == reference else 0.0


class BleuSimilarity(Similarity):
    """Word BLEU for short labels: 4-gram BLEU is 0 for most two-word labels, so the order is
    capped at the shorter token count, and method-1 smoothing keeps partial overlaps non-zero."""

    name = "bleu"
    quiet = True

    def __init__(self, arg: str = "", **kw: Any):
        super().__init__(arg, **kw)
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        self._bleu = sentence_bleu
        self._smooth = SmoothingFunction().method1

    def pair(self, candidate: str, reference: str) -> float:
        c, r = candidate.lower().split(), reference.lower().split()
        if not c or not r:
            return 0.0
        n = min(4, len(c), len(r))
        return self._bleu([r], c, weights=tuple([1.0 / n] * n), smoothing_function=self._smooth)


class ReferenceBleuSimilarity(Similarity):
    """Exactly the soft-measures study's call: the candidate string (not its tokens) is the
    hypothesis, so NLTK counts character n-grams of it against each reference word."""

    name = "ref-bleu"
    quiet = True

    def __init__(self, arg: str = "", **kw: Any):
        super().__init__(arg, **kw)
        from nltk.translate.bleu_score import sentence_bleu

        self._bleu = sentence_bleu

    def pair(self, candidate: str, reference: str) -> float:
        if len(candidate.split()) == 0:
            return 0.0
        refs = reference.split()
        if not refs:  # the study's code raises here; an empty gold label scores 0
            return 0.0
        return self._bleu(refs, candidate)


class Rouge1Similarity(Similarity):
    name = "rouge1"

    def __init__(self, arg: str = "", **kw: Any):
        super().__init__(arg, **kw)
        from rouge_score import rouge_scorer

        self._scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)

    def pair(self, candidate: str, reference: str) -> float:
        return self._scorer.score(reference, candidate)["rouge1"].fmeasure


class MeteorSimilarity(Similarity):
    name = "meteor"

    def __init__(self, arg: str = "", *, wordnet_dir: str | os.PathLike | None = None, **kw: Any):
        super().__init__(arg, **kw)
        from nltk.translate.meteor_score import meteor_score

        from causalkg.evaluation.graph.wordnet import load_wordnet

        self._meteor = meteor_score
        self._wordnet = load_wordnet(wordnet_dir or None)

    def pair(self, candidate: str, reference: str) -> float:
        c, r = candidate.lower().split(), reference.lower().split()
        if not c or not r:
            return 0.0
        return self._meteor([r], c, wordnet=self._wordnet)


class ReferenceMeteorSimilarity(MeteorSimilarity):
    """Old NLTK's ``meteor_score(reference.split(), candidate)``: each reference *word* is a
    separate one-token reference, and the best of them counts."""

    name = "ref-meteor"

    def pair(self, candidate: str, reference: str) -> float:
        if len(candidate.split()) == 0:
            return 0.0
        refs = [w.lower().split() for w in reference.split()]
        if not refs:
            return 0.0
        return self._meteor(refs, candidate.lower().split(), wordnet=self._wordnet)


class EmbeddingSimilarity(Similarity):
    """Cosine of sentence embeddings (``linking.encoder.Encoder``: normalised vectors, so the dot
    product is the cosine). Every label is embedded once; ``prepare`` batches a run's labels."""

    name = "embedding"

    def __init__(self, arg: str = "", *, device: str = "auto", batch_size: int = 256, **kw: Any):
        super().__init__(arg or "all-MiniLM-L6-v2", **kw)
        from causalkg.linking.encoder import create_encoder

        self.encoder = create_encoder(self.arg, device=device, batch_size=batch_size)
        self._vectors: dict[str, np.ndarray] = {}

    def prepare(self, labels: Sequence[str]) -> None:
        todo = sorted({t for t in labels if t not in self._vectors})
        if todo:
            vecs = self.encoder.encode(todo)
            for t, v in zip(todo, vecs):
                self._vectors[t] = v

    def matrix(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        if not candidates or not references:
            return np.zeros((len(candidates), len(references)))
        self.prepare(list(candidates) + list(references))
        a = np.stack([self._vectors[c] for c in candidates])
        b = np.stack([self._vectors[r] for r in references])
        return np.clip(a @ b.T, -1.0, 1.0).astype(np.float64)

    def pair(self, candidate: str, reference: str) -> float:
        return float(self.matrix([candidate], [reference])[0, 0])


class BleurtSimilarity(Similarity):
    """BLEURT (Sellam et al. 2020) through Google's ``bleurt`` package and a checkpoint folder
    (the study used ``bleurt-base-128``). Neither ships with causalkg: install
    ``pip install git+https://github.com/google-research/bleurt.git`` and download a checkpoint."""

    name = "bleurt"

    def __init__(self, arg: str = "", **kw: Any):
        super().__init__(arg, **kw)
        if not arg:
            raise ConfigError("bleurt needs a checkpoint folder", hint="use --measure bleurt:/path/to/bleurt-base-128")
        if not os.path.isdir(arg):
            raise ModelError(f"BLEURT checkpoint folder not found: {arg}", hint="download one, e.g. bleurt-base-128")
        try:
            from bleurt import score as bleurt_score  # type: ignore[import-not-found]
        except ImportError as exc:
            raise ModelError(
                "BLEURT is not installed",
                hint="pip install git+https://github.com/google-research/bleurt.git (TensorFlow), then bleurt:CHECKPOINT",
            ) from exc
        self._scorer = bleurt_score.BleurtScorer(checkpoint=arg)

    def matrix(self, candidates: Sequence[str], references: Sequence[str]) -> np.ndarray:
        pairs = [(c, r) for c in candidates for r in references if (c, r) not in self._cache]
        if pairs:
            scores = self._scorer.score(candidates=[c for c, _ in pairs], references=[r for _, r in pairs])
            for key, s in zip(pairs, scores):
                self._cache[key] = float(s)
        return super().matrix(candidates, references)

    def pair(self, candidate: str, reference: str) -> float:
        return float(self._scorer.score(candidates=[candidate], references=[reference])[0])


def get_similarity(name: str, **options: Any) -> Similarity:
    """Create a measure from its spec (``rouge1``, ``embedding:all-MiniLM-L6-v2``, ``bleurt:DIR``).

    ``options`` (``wordnet_dir``, ``device``, ``batch_size``) go to the measures that take them.
    Raises ConfigError for an unknown name, ModelError when a measure's model or data is missing.
    """
    spec = parse_spec(name)
    factory: Callable[..., Similarity] = SIMILARITIES.get(spec.backend)
    return factory(spec.arg, **options)


__all__ = ["SIMILARITIES", "Similarity", "get_similarity", "reference_name", "canonical_name"]
