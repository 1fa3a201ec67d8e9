"""Hand judgements of KG edges against their evidence, kept as a regression fixture.

A judgement is about one *evidence item*: an edge (cause QID, effect QID) and one sentence behind
it (its own mention, or a mention of a lower edge lifted into it). It is keyed by
``(cause QID, effect QID, sentence text)`` so that it survives rebuilds: a rebuilt KG whose edge
has the same ends and sentence reuses the judgement; anything new is listed as unjudged
(``todo``) to be judged and appended.

The rubric (answer each by reading the sentence):

- ``stated``: does the sentence state a causal relation between the two spans (not only a
  co-occurrence, a sequence in time, a definition or a measurement)?
- ``asserted``: is it stated as a fact, in this direction: not negated, not hedged or
  hypothetical, not a question, not reversed?
- ``cause_ok`` / ``effect_ok``: does each span mean its linked concept (for a lifted edge: is the
  class a correct generalisation of what the span means)?
- ``plausible``: is "cause causes effect" a plausible causal relation between the two concepts,
  whatever this sentence says?

``supported`` = stated and asserted and cause_ok and effect_ok. An edge is *supported* when at
least one of its judged evidence items is supported; it is *plausible* when its judgements say
so (they agree for one edge: plausibility is about the concept pair).

File: ``tests/fixtures/judged/judgements.jsonl``, one ``Judgement`` per line (see its
SOURCE.md). ``python -m bench edges`` reports the figures of the current KG and writes the
unjudged items to ``data/kg/judge_todo.jsonl``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

Key = tuple[str, str, str]


def norm_sentence(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Judgement:
    cause: str
    effect: str
    sentence: str
    cause_label: str | None = None
    effect_label: str | None = None
    cause_text: str | None = None
    effect_text: str | None = None
    stated: bool = False
    asserted: bool = False
    cause_ok: bool = False
    effect_ok: bool = False
    plausible: bool = False
    note: str = ""
    source: str = "sentence"

    @property
    def key(self) -> Key:
        return (self.cause, self.effect, norm_sentence(self.sentence))

    @property
    def supported(self) -> bool:
        return self.stated and self.asserted and self.cause_ok and self.effect_ok


def load(path: str | Path) -> dict[Key, Judgement]:
    """The judgements of a JSONL file by key (a later line wins over an earlier one)."""
    out: dict[Key, Judgement] = {}
    p = Path(path)
    if not p.is_file():
        return out
    names = set(Judgement.__dataclass_fields__)
    # lines end at "\n" only: str.splitlines() would also cut a sentence at U+2028, U+0085 or
    # a form feed, which json.dumps(ensure_ascii=False) leaves raw
    for n, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        rec = json.loads(line)
        j = Judgement(**{k: v for k, v in rec.items() if k in names})
        out[j.key] = j
    return out


def dump(judgements: Iterable[Judgement]) -> str:
    return "".join(json.dumps(asdict(j), ensure_ascii=False) + "\n" for j in judgements)


@dataclass
class Evidence:
    """One evidence item of an edge: a sentence and the spans read from it."""

    edge_id: str
    cause: str
    effect: str
    cause_label: str | None
    effect_label: str | None
    sentence: str
    cause_text: str
    effect_text: str
    span_cause: str  # the concept the span linked to (the lower edge's end for a lifted edge)
    span_effect: str
    source: str = "sentence"

    @property
    def key(self) -> Key:
        return (self.cause, self.effect, norm_sentence(self.sentence))


def evidence(edges: Sequence[Any]) -> list[Evidence]:
    """Every evidence item of every edge (``KGEdge`` objects or dicts of them): own mentions,
    then the mentions of the lower edges lifted into it; one per distinct sentence."""
    def get(o: Any, k: str) -> Any:
        return o.get(k) if isinstance(o, Mapping) else getattr(o, k)

    by_id = {get(e, "edge_id"): e for e in edges}
    out: list[Evidence] = []
    for e in edges:
        c, ef = get(e, "cause"), get(e, "effect")
        cq, eq = get(c, "id")[0], get(ef, "id")[0]
        mentions = list(get(e, "mentions"))
        for ex in get(e, "examples") or []:
            lower = by_id.get(get(ex, "edge_id"))
            if lower is not None:
                mentions += list(get(lower, "mentions"))
        seen = set()
        for m in mentions:
            s = get(get(m, "sentence"), "text")
            if norm_sentence(s) in seen:
                continue
            seen.add(norm_sentence(s))
            mc, me = get(m, "cause"), get(m, "effect")
            out.append(Evidence(get(e, "edge_id"), cq, eq, get(c, "label"), get(ef, "label"), s,
                                get(mc, "text"), get(me, "text"), get(mc, "label") or get(mc, "qid"),
                                get(me, "label") or get(me, "qid"),
                                (get(m, "source") if not isinstance(m, Mapping) else m.get("source")) or "sentence"))
    return out


def base_kg_pairs(path: str | Path) -> set[tuple[str, str]]:
    """(cause, effect) QID pairs of a Base KG file: class consequences and instance examples."""
    pairs: set[tuple[str, str]] = set()
    for line in Path(path).read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        b = json.loads(line)
        ev = b["event"]["id"]
        for c in b.get("consequences", []):
            pairs.add((ev, c["id"]))
            for ex in c.get("examples", []):
                pairs.add((ex["cause"]["id"], ex["effect"]["id"]))
    return pairs


@dataclass
class EdgeReport:
    edges: int = 0
    judged_edges: int = 0
    supported: int = 0
    plausible: int = 0
    confirmed: int = 0  # edges whose (cause, effect) is in the Base KG
    confirmed_supported: int = 0
    unjudged: list[Evidence] = field(default_factory=list)
    per_edge: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def supported_share(self) -> float:
        return self.supported / self.judged_edges if self.judged_edges else 0.0

    @property
    def plausible_share(self) -> float:
        return self.plausible / self.judged_edges if self.judged_edges else 0.0


def report(edges: Sequence[Any], judgements: Mapping[Key, Judgement], base: set[tuple[str, str]] | None = None) -> EdgeReport:
    """Figures of a KG against the judgements. An edge counts as judged when at least one of
    its evidence items is; items without a judgement are listed in ``unjudged``."""
    r = EdgeReport()
    items = evidence(edges)
    by_edge: dict[str, list[Evidence]] = {}
    for it in items:
        by_edge.setdefault(it.edge_id, []).append(it)
    for e in edges:
        eid = e.get("edge_id") if isinstance(e, Mapping) else e.edge_id
        r.edges += 1
        its = by_edge.get(eid, [])
        js = [judgements[it.key] for it in its if it.key in judgements]
        r.unjudged += [it for it in its if it.key not in judgements]
        pair = (its[0].cause, its[0].effect) if its else None
        in_base = bool(base and pair in base)
        r.confirmed += in_base
        if not js:
            r.per_edge[eid] = {"judged": False, "confirmed": in_base}
            continue
        r.judged_edges += 1
        sup = any(j.supported for j in js)
        pl = any(j.plausible for j in js)
        r.supported += sup
        r.plausible += pl
        r.confirmed_supported += in_base and sup
        r.per_edge[eid] = {"judged": True, "supported": sup, "plausible": pl, "confirmed": in_base}
    return r


def todo_records(items: Iterable[Evidence]) -> list[dict[str, Any]]:
    """Unjudged items as judgement templates (every rubric answer null) to fill in by reading."""
    out = []
    for it in items:
        out.append({"cause": it.cause, "effect": it.effect, "cause_label": it.cause_label,
                    "effect_label": it.effect_label, "sentence": it.sentence, "cause_text": it.cause_text,
                    "effect_text": it.effect_text, "linked_as": f"{it.span_cause} -> {it.span_effect}",
                    "source": it.source, "stated": None, "asserted": None, "cause_ok": None, "effect_ok": None,
                    "plausible": None, "note": ""})
    return out
