"""Edge confidence: the probability that an edge is supported by its evidence.

A small logistic model over what the assembly knows of an edge, fitted on the hand-judged
edges of the snapshot KG (``tests/fixtures/judged/``; ``python -m bench edges --fit`` refits
it and prints the new ``WEIGHTS``):

- ``score``: the best extraction score of the edge's mentions (1.0 for a structured source);
- ``link``: the best, over its mentions, of the lower of the two link scores (1.0 for an exact
  match of both ends, the cosine similarity otherwise);
- ``exact``: 1 when some mention links both ends by exact match of a label or alias;
- ``support``: log(1 + distinct sentences);
- ``structured``: 1 when some mention comes from an infobox field or a Causes/Aftermath list;
- ``temporal``: the share of mentions whose only cue is a sequence in time (kg/polarity.py);
- ``lifted``: 1 for a class edge that only exists as a lift of lower edges (no own mention);
- ``cue``: 1 when some mention has a causal cue between its spans, or a cause marker before the
  cause (``kg.polarity.cue_between``; a structured mention counts).

``confidence = sigmoid(w . features + bias)``. ``kg.min_confidence`` drops the edges below
it when the KG is written; the README and docs/kg.md show the precision / size curve.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from causalkg.kg.mentionstore import MentionSummary

FEATURES = ("score", "link", "exact", "support", "structured", "temporal", "lifted", "cue")

# Fitted by `python bench/bench_edges.py --fit` on the 67 judged edges of the baseline and
# current snapshot KGs (link, exact, structured, lifted, cue; score, support and temporal are the
# priors below), then checked on the held-out dev split's judged edges, which the fit does not
# see (docs/quality.md); refit after re-judging. L2-regularised logistic regression,
# standardisation folded into the weights.
WEIGHTS: dict[str, float] = {
    "bias": -7.4236, "score": 1.0, "link": 5.6961, "exact": 0.6653, "support": 0.5,
    "structured": 0.887, "temporal": -0.5, "lifted": 0.6492, "cue": 2.0261,
}


def features(edge: Any, by_id: Mapping[str, Any] | None = None) -> dict[str, float]:
    """The features of one ``KGEdge``. A lifted class edge without its own mentions takes its
    examples' mentions (``by_id``: every edge by ``edge_id``)."""
    mentions = list(edge.mentions)
    lifted = 0.0
    if not mentions and by_id is not None:
        lifted = 1.0
        for ex in edge.examples:
            lower = by_id.get(ex.edge_id)
            if lower is not None:
                mentions += list(lower.mentions)
    s = MentionSummary()
    for m in mentions:
        s.add(MentionSummary.of(m))
    return features_from(edge, s, lifted)


def features_from(edge: Any, s: MentionSummary, lifted: float) -> dict[str, float]:
    """The features of ``edge`` from a summary of the mentions that stand for it (its own, or
    for a lifted edge its examples')."""
    if not s.n:
        return {"score": float(edge.score.best), "link": float(edge.link_score.best), "exact": 0.0,
                "support": math.log1p(edge.support.sentences), "structured": 0.0, "temporal": 0.0,
                "lifted": lifted, "cue": 0.0}
    return {"score": float(s.score), "link": float(min(s.link, 1.0)), "exact": float(s.exact),
            "support": math.log1p(edge.support.sentences), "structured": float(s.structured),
            "temporal": s.temporal / s.n, "lifted": lifted, "cue": float(s.cue)}


def confidence(feats: Mapping[str, float], weights: Mapping[str, float] | None = None) -> float:
    w = WEIGHTS if weights is None else weights
    z = w.get("bias", 0.0) + sum(w.get(f, 0.0) * float(feats.get(f, 0.0)) for f in FEATURES)
    return 1.0 / (1.0 + math.exp(-z))


def score_edges(edges: Sequence[Any], weights: Mapping[str, float] | None = None, *,
                features_of: Callable[[Any, Mapping[str, Any]], dict[str, float]] | None = None) -> list[float]:
    """Confidence of every edge (in order), and set ``edge.confidence``. ``features_of(edge,
    by_id)`` replaces ``features`` for edges that do not carry their mentions."""
    by_id = {e.edge_id: e for e in edges}
    feats = features_of or features
    out = []
    for e in edges:
        c = round(confidence(feats(e, by_id), weights), 4)
        e.confidence = c
        out.append(c)
    return out


# Weights set as priors, not fitted: the judged sample does not vary these yet (every judged
# edge came from one extractor with a constant score; no judged mention is merely temporal;
# support hardly differs between supported and unsupported edges). They act as fixed offsets.
PRIORS: dict[str, float] = {"score": 1.0, "support": 0.5, "temporal": -0.5}
FITTED = ("link", "exact", "structured", "lifted", "cue")


def fit(rows: Sequence[Mapping[str, float]], labels: Sequence[int], *, l2: float = 5.0,
        steps: int = 3000, lr: float = 0.1, fitted: Sequence[str] = FITTED,
        priors: Mapping[str, float] = PRIORS) -> dict[str, float]:
    """Fit the weights of ``fitted`` features by L2-regularised logistic regression (full-batch
    gradient descent on standardised features; deterministic), with the ``priors`` as fixed
    offsets. Returns every weight on the raw features, bias included."""
    X = np.array([[float(r[f]) for f in fitted] for r in rows], dtype=np.float64)
    y = np.array(labels, dtype=np.float64)
    off = np.array([sum(w * float(r.get(f, 0.0)) for f, w in priors.items()) for r in rows], dtype=np.float64)
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    sd[sd == 0] = 1.0
    Z = (X - mu) / sd
    w = np.zeros(Z.shape[1])
    b = math.log((y.mean() + 1e-6) / (1 - y.mean() + 1e-6))
    n = len(y)
    b -= float(off.mean())
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(Z @ w + b + off)))
        g = Z.T @ (p - y) / n + l2 * w / n
        w -= lr * g
        b -= lr * float(np.mean(p - y))
    raw = w / sd
    out = {"bias": round(float(b - np.sum(raw * mu)), 4), **{f: round(float(v), 4) for f, v in zip(fitted, raw)}}
    out.update({f: float(v) for f, v in priors.items()})
    return {k: out[k] for k in ("bias", *FEATURES) if k in out}


def calibration(probs: Sequence[float], labels: Sequence[int], bins: int = 5) -> list[tuple[float, float, float, int]]:
    """(low, high, mean predicted, observed rate, count) per equal-width bin of confidence."""
    out = []
    for i in range(bins):
        lo, hi = i / bins, (i + 1) / bins
        idx = [j for j, p in enumerate(probs) if lo <= p < hi or (i == bins - 1 and p == 1.0)]
        if idx:
            out.append((lo, hi, float(np.mean([probs[j] for j in idx])), float(np.mean([labels[j] for j in idx])), len(idx)))
    return out
