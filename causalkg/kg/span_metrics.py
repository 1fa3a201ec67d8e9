"""Scores for answer spans and cause-effect pairs, for model selection and the benchmark.

- ``squad2_scores``: SQuAD 2.0 exact match and token F1 over questions, no-answer included, and
  ``best_null_threshold`` (the SQuAD 2.0 threshold search) for the QA trainer.
- ``pair_scores``: cause and effect span precision, recall and F1 of extracted pairs against
  gold pairs, sentence by sentence, both *exact* (the normalised spans are equal) and
  *token-overlap* (SQuAD-style token precision/recall of matched spans). Predicted and gold
  pairs of a sentence are matched one to one, greedily by the overlap of cause plus effect.

Normalisation is SQuAD's: lower case, no punctuation, no articles, single spaces.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"“", "”", "‘", "’", "–", "—"}


def normalize(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_prf(pred: str, gold: str) -> tuple[float, float, float]:
    """Token precision, recall and F1 of normalised ``pred`` against ``gold``."""
    p, g = normalize(pred).split(), normalize(gold).split()
    if not p or not g:
        same = float(p == g)
        return same, same, same
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    prec, rec = common / len(p), common / len(g)
    return prec, rec, 2 * prec * rec / (prec + rec)


def exact(pred: str, gold: str) -> bool:
    return normalize(pred) == normalize(gold)


def squad2_scores(preds: Mapping[str, str], golds: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """EM and F1 (percent) over question ids; ``golds[id]`` lists acceptable answers, empty for
    no-answer; ``preds[id]`` is "" for no-answer. Also HasAns F1 and NoAns accuracy."""
    em = f1 = has_f1 = 0.0
    n_has = n_no = no_ok = 0
    for qid, answers in golds.items():
        pred = preds.get(qid, "")
        if not answers:
            n_no += 1
            ok = float(pred == "")
            no_ok += int(ok)
            em += ok
            f1 += ok
            continue
        n_has += 1
        e = max(float(exact(pred, a)) for a in answers) if pred else 0.0
        f = max(token_prf(pred, a)[2] for a in answers) if pred else 0.0
        em += e
        f1 += f
        has_f1 += f
    n = max(1, len(golds))
    return {
        "exact": 100 * em / n,
        "f1": 100 * f1 / n,
        "has_ans_f1": 100 * has_f1 / max(1, n_has),
        "no_ans_acc": 100 * no_ok / max(1, n_no),
        "questions": float(len(golds)),
    }


def best_null_threshold(
    best_text: Mapping[str, str], null_diff: Mapping[str, float], golds: Mapping[str, Sequence[str]]
) -> tuple[float, float]:
    """The ``null_diff`` threshold that maximises F1 (answer when ``null_diff > t``), and that F1.

    ``best_text``: each question's best non-null span. As SQuAD 2.0's ``find_best_thresh``.
    """
    ids = [q for q in golds if q in best_text]
    if not ids:
        return 0.0, 0.0
    # Score of answering (vs abstaining) for each question.
    gain = {}
    for q in ids:
        answers = golds[q]
        f_answer = max((token_prf(best_text[q], a)[2] for a in answers), default=0.0) if best_text[q] else 0.0
        f_abstain = 1.0 if not answers else 0.0
        gain[q] = f_answer - f_abstain
    base = sum(1.0 for q in ids if not golds[q])  # everyone abstains
    best_t, best_score, score = float("inf"), base, base
    for q in sorted(ids, key=lambda x: -null_diff[x]):
        score += gain[q]
        if score > best_score:
            best_score, best_t = score, null_diff[q]
    # Answer when null_diff > t: put t just under the last included question's diff.
    threshold = best_t - 1e-6 if best_t != float("inf") else max(null_diff[q] for q in ids) + 1e-6
    return float(threshold), 100 * best_score / len(ids)


@dataclass
class PRF:
    tp: float = 0.0
    n_pred: int = 0
    n_gold: int = 0

    @property
    def precision(self) -> float:
        return self.tp / self.n_pred if self.n_pred else 0.0

    @property
    def recall(self) -> float:
        return self.tp / self.n_gold if self.n_gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class PairScores:
    """Accumulated pair scores; ``table_row`` gives percentages."""

    cause_exact: PRF = field(default_factory=PRF)
    effect_exact: PRF = field(default_factory=PRF)
    cause_overlap: PRF = field(default_factory=PRF)
    effect_overlap: PRF = field(default_factory=PRF)
    # Token-overlap recall and precision are sums of per-span token recall / precision.
    _cause_rec: float = 0.0
    _effect_rec: float = 0.0

    def add(self, predicted: Sequence[tuple[str, str]], gold: Sequence[tuple[str, str]]) -> None:
        """One sentence: its predicted and gold (cause, effect) texts."""
        for prf in (self.cause_exact, self.effect_exact, self.cause_overlap, self.effect_overlap):
            prf.n_pred += len(predicted)
            prf.n_gold += len(gold)
        scored = []
        for i, (pc, pe) in enumerate(predicted):
            for j, (gc, ge) in enumerate(gold):
                scored.append((token_prf(pc, gc)[2] + token_prf(pe, ge)[2], i, j))
        used_p: set[int] = set()
        used_g: set[int] = set()
        for total, i, j in sorted(scored, key=lambda x: (-x[0], x[1], x[2])):
            if i in used_p or j in used_g or total <= 0:
                continue
            used_p.add(i)
            used_g.add(j)
            (pc, pe), (gc, ge) = predicted[i], gold[j]
            self.cause_exact.tp += exact(pc, gc)
            self.effect_exact.tp += exact(pe, ge)
            cp, cr, _ = token_prf(pc, gc)
            ep, er, _ = token_prf(pe, ge)
            self.cause_overlap.tp += cp
            self.effect_overlap.tp += ep
            self._cause_rec += cr
            self._effect_rec += er

    def _overlap(self, prf: PRF, rec_sum: float) -> tuple[float, float, float]:
        p = prf.tp / prf.n_pred if prf.n_pred else 0.0
        r = rec_sum / prf.n_gold if prf.n_gold else 0.0
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)

    def table_row(self) -> dict[str, Any]:
        cp, cr, cf = self._overlap(self.cause_overlap, self._cause_rec)
        ep, er, ef = self._overlap(self.effect_overlap, self._effect_rec)
        ce, ee = self.cause_exact, self.effect_exact
        return {
            "pred": self.cause_exact.n_pred,
            "gold": self.cause_exact.n_gold,
            "cause P/R/F1 exact": f"{100*ce.precision:.1f}/{100*ce.recall:.1f}/{100*ce.f1:.1f}",
            "effect P/R/F1 exact": f"{100*ee.precision:.1f}/{100*ee.recall:.1f}/{100*ee.f1:.1f}",
            "cause P/R/F1 overlap": f"{100*cp:.1f}/{100*cr:.1f}/{100*cf:.1f}",
            "effect P/R/F1 overlap": f"{100*ep:.1f}/{100*er:.1f}/{100*ef:.1f}",
            "macro F1 exact": round(50 * (ce.f1 + ee.f1), 1),
            "macro F1 overlap": round(50 * (cf + ef), 1),
        }


def pair_scores(sentences: Iterable[tuple[Sequence[tuple[str, str]], Sequence[tuple[str, str]]]]) -> PairScores:
    """Scores over ``(predicted pairs, gold pairs)`` per sentence."""
    s = PairScores()
    for predicted, gold in sentences:
        s.add(predicted, gold)
    return s


def _stop_tokens() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def content_tokens(text: str) -> set[str]:
    """The normalised tokens of a span that are not English stop words (the whole token set
    when the span has nothing else)."""
    toks = normalize(text).split()
    stop = _stop_tokens()
    content = {t for t in toks if t not in stop}
    return content or set(toks)


@dataclass
class PairMatch:
    """End-to-end pair precision / recall / F1: a predicted (cause, effect) pair matches a gold
    pair when its cause shares a content token with the gold cause and its effect with the gold
    effect (token overlap; normalised as SQuAD, stop words aside). Pairs of a sentence are
    matched one to one, greedily by the summed token F1 of cause and effect. ``strict`` also
    counts matches whose cause and effect token F1 both reach 0.5."""

    tp: int = 0
    strict_tp: int = 0
    n_pred: int = 0
    n_gold: int = 0

    def add(self, predicted: Sequence[tuple[str, str]], gold: Sequence[tuple[str, str]]) -> None:
        self.n_pred += len(predicted)
        self.n_gold += len(gold)
        pt = [(content_tokens(c), content_tokens(e)) for c, e in predicted]
        gt = [(content_tokens(c), content_tokens(e)) for c, e in gold]
        scored = []
        for i, (pc, pe) in enumerate(pt):
            for j, (gc, ge) in enumerate(gt):
                if pc & gc and pe & ge:
                    fc = token_prf(predicted[i][0], gold[j][0])[2]
                    fe = token_prf(predicted[i][1], gold[j][1])[2]
                    scored.append((fc + fe, min(fc, fe), i, j))
        used_p: set[int] = set()
        used_g: set[int] = set()
        for total, low, i, j in sorted(scored, key=lambda x: (-x[0], x[2], x[3])):
            if i in used_p or j in used_g:
                continue
            used_p.add(i)
            used_g.add(j)
            self.tp += 1
            self.strict_tp += int(low >= 0.5)

    @staticmethod
    def _prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
        p = tp / n_pred if n_pred else 0.0
        r = tp / n_gold if n_gold else 0.0
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)

    def as_dict(self) -> dict[str, float]:
        p, r, f = self._prf(self.tp, self.n_pred, self.n_gold)
        sp, sr, sf = self._prf(self.strict_tp, self.n_pred, self.n_gold)
        return {"precision": p, "recall": r, "f1": f, "strict_precision": sp, "strict_recall": sr, "strict_f1": sf,
                "pred": float(self.n_pred), "gold": float(self.n_gold), "matched": float(self.tp)}
