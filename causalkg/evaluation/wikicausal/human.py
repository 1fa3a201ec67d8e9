"""Precision of a causal KG from people's judgements (made in ``causalkg serve``), and their
agreement with an LLM judge.

Stage 4 (evaluation); ``causalkg eval precision --human FILE`` wraps ``human_precision``.
The file is the JSONL the web UI appends to (``causalkg.core.contracts.Judgement``): one line per
verdict (correct / wrong / unsure) on an edge (cause QID, effect QID) as one sentence states it.

How the lines become a figure:

- a judge may change their mind: per (edge, sentence, judge) the last line counts (a last line
  ``withdrawn``, written by the web page's undo, means no verdict);
- an edge's verdict per judge: correct when that judge's verdicts on its sentences say correct
  more often than wrong, wrong when the reverse, else (a tie, or only "unsure") undecided;
- an edge's verdict: the same majority over its judges; undecided edges are counted, not scored;
- precision = correct edges / decided edges, with the 95% Wilson interval
  (``evaluation.wikicausal.precision.wilson_interval``). When the judged edges are a uniform random sample
  of the KG (the review queue of ``causalkg serve`` hands edges out in a seeded uniform random
  order, so any prefix of it is one), this estimates the precision of the whole KG;
- agreement between people: Cohen's kappa of every two judges over the edges both decided;
- agreement with an LLM judge (``--llm FILE``: the ``judgements.jsonl`` that
  ``causalkg eval precision --judge ...`` writes, whose ``cause_ids``/``effect_ids`` name the
  QIDs of each judged label pair): Cohen's kappa (``evaluation.graph.agreement.cohen_kappa``) between
  the decided human verdicts and the LLM's yes/no over the edges both judged.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from causalkg.core.contracts import Judgement
from causalkg.core.errors import SourceError
from causalkg.core.jsonl import TORN_SUFFIX, ReadStats, iter_json_lines, read_jsonl
from causalkg.core.tables import render_table
from causalkg.evaluation.graph.agreement import cohen_kappa
from causalkg.evaluation.wikicausal.precision import wilson_interval


def sentence_key(text: str) -> str:
    """A sentence as a key: whitespace runs are one space, ends trimmed."""
    return " ".join(text.split())


def latest(judgements: Iterable[Judgement]) -> list[Judgement]:
    """The last verdict per (cause, effect, sentence, judge), in file order; a key whose last
    line is ``withdrawn`` (the web page's undo of a first verdict) has no verdict."""
    last: dict[tuple[str, str, str, str], Judgement] = {}
    for j in judgements:
        key = (j.cause, j.effect, sentence_key(j.sentence), j.judge)
        last.pop(key, None)
        last[key] = j
    return [j for j in last.values() if j.verdict != "withdrawn"]


def _majority(verdicts: Sequence[str]) -> str | None:
    yes = sum(1 for v in verdicts if v == "correct")
    no = sum(1 for v in verdicts if v == "wrong")
    if yes > no:
        return "correct"
    if no > yes:
        return "wrong"
    return None


def edge_verdicts(judgements: Iterable[Judgement]) -> dict[tuple[str, str], str | None]:
    """(cause, effect) -> correct | wrong | None (undecided), as the module docstring says."""
    per_judge: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for j in latest(judgements):
        per_judge[(j.cause, j.effect)][j.judge].append(j.verdict)
    return {pair: _majority([v for v in (_majority(vs) for vs in judges.values()) if v is not None])
            for pair, judges in per_judge.items()}


def judge_verdicts(judgements: Iterable[Judgement]) -> dict[str, dict[tuple[str, str], str]]:
    """judge -> (cause, effect) -> that judge's decided verdict (correct or wrong)."""
    per_judge: dict[str, dict[tuple[str, str], list[str]]] = defaultdict(lambda: defaultdict(list))
    for j in latest(judgements):
        per_judge[j.judge][(j.cause, j.effect)].append(j.verdict)
    out: dict[str, dict[tuple[str, str], str]] = {}
    for judge, pairs in per_judge.items():
        out[judge] = {pair: v for pair, vs in pairs.items() if (v := _majority(vs)) is not None}
    return out


def between_judges(judgements: Iterable[Judgement]) -> list[dict[str, Any]]:
    """Cohen's kappa of every two judges over the edges both decided (pairs with none are left out)."""
    verdicts = judge_verdicts(judgements)
    rows = []
    names = sorted(verdicts)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(verdicts[a]) & set(verdicts[b]))
            if not common:
                continue
            x = [verdicts[a][p] for p in common]
            y = [verdicts[b][p] for p in common]
            rows.append({"judges": [a, b], "common": len(common), "agree": sum(1 for u, v in zip(x, y) if u == v),
                         "kappa": cohen_kappa(x, y)})
    return rows


def read_llm_verdicts(paths: Sequence[str | os.PathLike]) -> dict[tuple[str, str], bool]:
    """(cause QID, effect QID) -> the LLM judge's verdict, from ``eval precision`` judgements
    files (a label pair with several QIDs gives each of its QID pairs its verdict; pairs the
    judge failed on are left out)."""
    out: dict[tuple[str, str], bool] = {}
    for path in paths:
        if not Path(path).is_file():
            raise SourceError(f"no LLM judgements at {path}",
                              hint="run causalkg eval precision --kg data/kg/causal_kg.jsonl --judge ...")
        for _, rec in iter_json_lines(path):
            if not isinstance(rec, dict) or rec.get("verdict") is None:
                continue
            for c in rec.get("cause_ids") or []:
                for e in rec.get("effect_ids") or []:
                    out[(c, e)] = bool(rec["verdict"])
    return out


@dataclass
class HumanPrecision:
    """What ``human_precision`` measured (``render`` for people, ``to_json`` for machines)."""

    path: str
    lines: int
    judges: list[str]
    edges: int  # edges with any judgement
    correct: int
    wrong: int
    undecided: int
    precision: float
    ci_low: float
    ci_high: float
    sentences: dict[str, int] = field(default_factory=dict)  # latest verdicts by kind
    llm: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    between: list[dict[str, Any]] = field(default_factory=list)  # kappa of every two judges

    def rows(self) -> list[dict[str, Any]]:
        row = {"judgements": self.path, "judges": len(self.judges), "edges": self.edges, "decided": self.correct + self.wrong,
               "correct": self.correct, "wrong": self.wrong, "undecided": self.undecided,
               "precision": self.precision, "ci_low": self.ci_low, "ci_high": self.ci_high}
        if self.llm is not None:
            row.update({"llm_common": self.llm["common"], "llm_agree": self.llm["agree"], "kappa": self.llm["kappa"]})
        return [row]

    def render(self, fmt: str = "md") -> str:
        if fmt == "json":
            return json.dumps(self.to_json(), ensure_ascii=False, indent=2)
        rows = [{k: (round(v, 4) if isinstance(v, float) and not math.isnan(v) else v) for k, v in r.items()}
                for r in self.rows()]
        table = render_table(rows, list(rows[0]), {"text": "text", "md": "md", "csv": "csv"}[fmt])
        if self.between and fmt != "csv":
            pairs = [{"judges": " / ".join(b["judges"]), "common": b["common"], "agree": b["agree"],
                      "kappa": round(b["kappa"], 4)} for b in self.between]
            table += "\n\nBetween judges (Cohen's kappa over the edges both decided):\n\n"
            table += render_table(pairs, ["judges", "common", "agree", "kappa"], "md" if fmt == "md" else "text")
        return table

    def to_json(self) -> dict[str, Any]:
        return {**self.rows()[0], "lines": self.lines, "judge_names": self.judges, "sentences": self.sentences,
                "llm": self.llm, "between_judges": self.between, "notes": self.notes}


def human_precision(path: str | os.PathLike, *, llm: Sequence[str | os.PathLike] = (),
                    lenient: bool = False) -> HumanPrecision:
    """Precision with a 95% Wilson interval from a judgements file, and Cohen's kappa with the
    LLM judge's verdicts in ``llm`` (files) over the edges both judged. Raises SourceError when
    the file is missing, SchemaError (``path:line``) on a bad line unless ``lenient``."""
    p = Path(path)
    if not p.is_file():
        raise SourceError(f"no judgements file at {p}",
                          hint="judge edges in causalkg serve (they go to data/judgements/judgements.jsonl)")
    stats = ReadStats()
    judgements = list(read_jsonl(p, Judgement, lenient=lenient, stats=stats, skip_torn=True))
    verdicts = edge_verdicts(judgements)
    correct = sum(1 for v in verdicts.values() if v == "correct")
    wrong = sum(1 for v in verdicts.values() if v == "wrong")
    lo, hi = wilson_interval(correct, correct + wrong)
    kinds: dict[str, int] = defaultdict(int)
    for j in latest(judgements):
        kinds[j.verdict] += 1
    notes = []
    if stats.skipped:
        notes.append(stats.summary())
    if stats.torn:  # a judgement cut short by a crash or a full disk, never recorded whole
        notes.append(f"{p}: its last line was torn (no newline: a write cut short) and was skipped; "
                     "the next judgement recorded moves it aside to " + p.name + TORN_SUFFIX)
    result = HumanPrecision(str(p), len(judgements), sorted({j.judge for j in judgements}), len(verdicts),
                            correct, wrong, len(verdicts) - correct - wrong,
                            correct / (correct + wrong) if correct + wrong else 0.0, lo, hi, dict(kinds), notes=notes,
                            between=between_judges(judgements))
    if llm:
        machine = read_llm_verdicts(llm)
        common = sorted(pair for pair, v in verdicts.items() if v is not None and pair in machine)
        a = ["yes" if verdicts[pair] == "correct" else "no" for pair in common]
        b = ["yes" if machine[pair] else "no" for pair in common]
        result.llm = {"files": [str(x) for x in llm], "common": len(common),
                      "agree": sum(1 for x, y in zip(a, b) if x == y),
                      "kappa": cohen_kappa(a, b) if common else float("nan")}
        if not common:
            notes.append("no edge was judged both by people and by the LLM judge: no kappa")
    return result
