"""SQC-Score, the scoring: matched facts count 1, unmatched predictions entailed above tau count
their entailment; precision, recall and SQC per unit, pooled (micro) and averaged (macro), with
what became of every prediction and gold fact and why.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.errors import ConfigError
from causalkg.evaluation.judging.sqc_facts import DUPLICATE_MODES, Fact, Unit
from causalkg.evaluation.judging.sqc_matchers import Match, UnitMatches


# --- scoring ---------------------------------------------------------------------------------


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def _harmonic(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def sqc_figures(matched: int, weight: float, n_pred: int, n_gold: int) -> dict[str, float | None]:
    """Precision = (m + Σw)/|P|, Recall = (m + Σw)/(|G| + Σw), SQC = harmonic mean; None where 0/0."""
    credit = matched + weight
    p = _ratio(credit, n_pred)
    r = _ratio(credit, n_gold + weight)
    return {"precision": p, "recall": r, "sqc": _harmonic(p, r)}


@dataclass
class SQCResult:
    units: list[dict[str, Any]]  # the per-unit report
    summary: dict[str, Any]
    out: Path | None = None
    plan: dict[str, Any] | None = None  # set by a dry run (nothing was scored)
    partial: bool = False  # some units could not be graded: written as *.partial.*, the last complete result kept

    def rows(self) -> list[dict[str, Any]]:
        return [self.summary["micro"], self.summary["macro"]]


def _dedupe(facts: list[Fact]) -> tuple[list[Fact], dict[int, int]]:
    """Unique facts and, for each repeated one, the index (in the original list) of its first copy."""
    first: dict[str, int] = {}
    unique: list[Fact] = []
    dup_of: dict[int, int] = {}
    for i, f in enumerate(facts):
        if f.key in first:
            dup_of[i] = first[f.key]
        else:
            first[f.key] = i
            unique.append(f)
    return unique, dup_of


Scores = dict[tuple[int, int], tuple[float | None, str | None]]  # (unit, fact) -> (entailment, error)
Prepared = list[tuple[Unit, Unit, dict[int, int], dict[int, int]]]  # (as read, deduplicated, dups of preds, of golds)


def _prepare(units: Sequence[Unit]) -> Prepared:
    prepared = []
    for u in units:
        preds, pdup = _dedupe(u.predicted)
        golds, gdup = _dedupe(u.gold)
        prepared.append((u, Unit(u.id, u.text, preds, golds), pdup, gdup))
    return prepared


def _complement(prepared: Prepared, matches: Sequence[UnitMatches], complementer: Any) -> tuple[Scores, Scores]:
    """Entailment scores of every gold fact (for tau) and every unmatched prediction, asked of the
    complementer in one batch. Returns (gold scores, prediction scores)."""
    gold_scores: Scores = {}
    pred_scores: Scores = {}
    asks: list[tuple[str, int, int]] = []
    for k, (_, d, _, _) in enumerate(prepared):
        if not d.text:
            continue
        asks += [("g", k, j) for j in range(len(d.gold))]  # every gold fact counts for tau
        if matches[k].error:
            continue
        matched = {m.predicted for m in matches[k].matches}
        asks += [("p", k, i) for i in range(len(d.predicted)) if i not in matched]
    if asks:
        premises = [prepared[k][1].text for _, k, _ in asks]
        hyps = [(prepared[k][1].gold if s == "g" else prepared[k][1].predicted)[i].text for s, k, i in asks]
        for (side, k, i), score in zip(asks, complementer.scores(premises, hyps)):
            (gold_scores if side == "g" else pred_scores)[(k, i)] = score
    return gold_scores, pred_scores


def _tau(complementer: Any, tau: float | None, tau_percentile: float, gold_values: list[float],
         units: Sequence[Unit]) -> tuple[float | None, str]:
    """The entailment threshold and where it came from."""
    import numpy as np

    if complementer is None:
        return None, "n/a (no complementer)"
    if tau is not None:
        if not 0.0 <= tau <= 1.0:
            raise ConfigError(f"sqc_tau must be in [0, 1] (or negative for the percentile), got {tau}")
        return float(tau), "fixed"
    if gold_values:
        return (float(np.percentile(gold_values, tau_percentile)),
                f"{tau_percentile:g}th percentile of {len(gold_values)} gold entailment scores")
    if any(u.gold for u in units):
        raise ConfigError(
            "tau cannot be set: no gold fact could be scored against a source text",
            hint="give the units' texts (--texts or \"text\"), a fixed --tau, or --complementer none",
        )
    return None, "n/a (no gold facts)"


def _predicted_item(i: int, f: Fact, match: Match | None, why: str, score: tuple[float | None, str | None],
                    *, complementer: Any, has_text: bool, tau_value: float | None) -> dict[str, Any]:
    """What became of one prediction: matched, credited by the complementer, or not (and why)."""
    item: dict[str, Any] = {"index": i, "text": f.text, "fact": f.raw}
    if match is not None:
        item.update(status="matched", gold=match.gold, score=match.score, weight=1.0, why=match.why)
        return item
    s, err = score
    item["entailment"] = s
    if complementer is None:
        item.update(status="unmatched", weight=0.0, why=why)
    elif not has_text:
        item.update(status="unscored", weight=0.0, why=f"{why}; no source text for the complementer")
    elif s is None:
        item.update(status="unscored", weight=0.0, why=f"{why}; complementer failed: {err}")
    elif tau_value is not None and s > tau_value:
        item.update(status="credited", weight=s, why=f"{why}; entailed by the text: {s:.3f} > tau {tau_value:.3f}")
    else:
        item.update(status="unsupported", weight=0.0,
                    why=f"{why}; entailment {s:.3f} <= tau {tau_value:.3f}" if tau_value is not None else why)
    return item


def _unit_report(k: int, prepared: Prepared, um: UnitMatches, gold_scores: Scores, pred_scores: Scores, *,
                 complementer: Any, tau_value: float | None, duplicates: str) -> dict[str, Any]:
    """The report of one unit whose matching succeeded: every prediction, duplicate and gold fact,
    the counts and the unit's figures."""
    orig, d, pdup, gdup = prepared[k]
    by_pred = {m.predicted: m for m in um.matches}
    by_gold = {m.gold: m for m in um.matches}
    pred_items = [_predicted_item(i, f, by_pred.get(i), um.unmatched_why.get(i, "unmatched"),
                                  pred_scores.get((k, i), (None, None)), complementer=complementer,
                                  has_text=bool(d.text), tau_value=tau_value)
                  for i, f in enumerate(d.predicted)]
    weight = 0.0
    for item in pred_items:
        if item["status"] == "credited":
            weight += item["weight"]
    unique_index = {f.key: i for i, f in enumerate(d.predicted)}
    dup_items = [{"text": orig.predicted[i].text, "status": "duplicate",
                  "duplicate_of": unique_index[orig.predicted[i].key], "weight": 0.0} for i in sorted(pdup)]
    gold_items = []
    for j, g in enumerate(d.gold):
        s, _ = gold_scores.get((k, j), (None, None))
        m = by_gold.get(j)
        gold_items.append({"index": j, "text": g.text, "fact": g.raw, "matched_by": m.predicted if m else None,
                           "entailment": s})
    n_pred = len(d.predicted) + (len(pdup) if duplicates == "count" else 0)
    figures = sqc_figures(len(um.matches), weight, n_pred, len(d.gold))
    return {
        "unit": orig.id, "predicted": pred_items, "duplicates": dup_items, "gold": gold_items,
        "duplicate_gold": len(gdup),
        "counts": {"predicted": n_pred, "gold": len(d.gold), "matched": len(um.matches),
                   "credited": sum(1 for x in pred_items if x["status"] == "credited"), "weight": weight,
                   "duplicates": len(pdup)},
        **figures,
        "answers": um.answers or None,
    }


def _pooled(reports: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Micro (pooled counts) and macro (mean over units) figures of the scored units."""
    scored = [r for r in reports if "error" not in r]
    tot = {k: sum(r["counts"][k] for r in scored) for k in ("predicted", "gold", "matched", "credited", "weight", "duplicates")}
    micro = {"scope": "micro", "units": len(scored), **tot, **sqc_figures(tot["matched"], tot["weight"], tot["predicted"], tot["gold"])}
    macro: dict[str, Any] = {"scope": "macro", "units": len(scored), **{k: None for k in tot}}
    for name in ("precision", "recall", "sqc"):
        vals = [r[name] for r in scored if r[name] is not None]
        macro[name] = statistics.fmean(vals) if vals else None
        macro[f"{name}_units"] = len(vals)
    return micro, macro


def score_units(
    units: Sequence[Unit],
    matcher: Any,
    complementer: Any | None,
    *,
    tau_percentile: float = 60.0,
    tau: float | None = None,
    duplicates: str = "drop",
) -> SQCResult:
    """Grade every unit (see the module docstring) and pool the figures. ``complementer`` None
    means no complementing (Σw = 0). ``tau`` fixes the threshold; otherwise it is the
    ``tau_percentile``-th percentile of the gold facts' entailment scores (ConfigError when no
    gold fact has a source text to be scored against)."""
    if duplicates not in DUPLICATE_MODES:
        raise ConfigError(f"sqc_duplicates must be one of {', '.join(DUPLICATE_MODES)}, got {duplicates!r}")
    if not 0.0 <= tau_percentile <= 100.0:
        raise ConfigError(f"sqc_tau_percentile must be in [0, 100], got {tau_percentile}")
    prepared = _prepare(units)
    matches = matcher.match_units([d for _, d, _, _ in prepared])
    gold_scores, pred_scores = _complement(prepared, matches, complementer) if complementer is not None else ({}, {})
    gold_values = [s for s, _ in gold_scores.values() if s is not None]
    tau_value, tau_source = _tau(complementer, tau, tau_percentile, gold_values, units)

    reports: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    for k, (orig, _, _, _) in enumerate(prepared):
        um = matches[k]
        if um.error:
            failures.append({"unit": orig.id, "error": um.error})
            reports.append({"unit": orig.id, "error": um.error, "answers": um.answers})
            continue
        reports.append(_unit_report(k, prepared, um, gold_scores, pred_scores, complementer=complementer,
                                    tau_value=tau_value, duplicates=duplicates))
    micro, macro = _pooled(reports)
    summary = {
        "micro": micro, "macro": macro, "tau": tau_value, "tau_source": tau_source, "tau_percentile": tau_percentile,
        "gold_entailment": ({"n": len(gold_values), "min": min(gold_values), "median": statistics.median(gold_values),
                             "max": max(gold_values)} if gold_values else None),
        "matcher": matcher.spec, "complementer": complementer.spec if complementer is not None else "none",
        "duplicates": duplicates, "failed_units": failures,
    }
    return SQCResult(reports, summary)
