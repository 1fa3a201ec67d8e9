"""The Base KG: the causal facts Wikidata holds about the seed event classes, in the WikiCausal
base-KG shape.

Facts come from six properties, normalised to cause -> effect: P1542 has effect, P1536
immediate cause of, P1537 contributing factor of (the subject is the cause) and P828 has cause,
P1478 has immediate cause, P1479 has contributing factor (the object is the cause).
``fetch_causal_facts`` asks for the facts whose cause is an instance of a seed class or a seed
class itself, in VALUES batches.

``build_base_kg`` turns them into one line per seed class C:

- lifted: an instance x of C (P31/P279*) causes y, and y is an instance (P31) of D, or, when y
  is itself a class, a direct subclass (P279) of D: consequence D of C with the example (x, y);
- direct: C itself causes D (a class-level statement): consequence D of C, no example.

Each example keeps the properties it was stated with (extra field ``properties``) and each
consequence the properties of its class-level statement (extra field ``direct_properties``).
``facts_count`` is the number of distinct facts behind the consequence (its examples, plus one
for a class-level statement), counted before ``max_examples`` trims the examples list.
``usage_count`` / ``page_count`` are the numbers of direct instances with an English Wikinews /
Wikipedia article when counts were computed, else null.

Flow: ``corpus.build`` calls ``fetch_causal_facts`` then ``iter_base_kg`` (``build_base_kg``
as a list) and writes each line to ``data/wikidata/base_kg.jsonl`` as it comes; ``kg`` and ``evaluation`` read that file (and the reference
``snapshots/wikicausal/base-kg-v1.jsonl``) in the same shape.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from causalkg.core.contracts import BaseKGConsequence, BaseKGEvent, BaseKGExample, BaseKGLine, Ref
from causalkg.corpus import queries as Q
from causalkg.corpus.sparql import Engine
from causalkg.corpus.wikidata import Terms, WikidataSettings, row_qid, select_batched


@dataclass(frozen=True, order=True)
class Fact:
    """One causal statement, normalised: ``cause`` -> ``effect``, stated with ``property``."""

    cause: str
    effect: str
    property: str


@dataclass
class BaseKGStats:
    facts: int = 0
    facts_by_property: Counter = field(default_factory=Counter)
    lifted_facts: int = 0  # (cause instance, effect) facts that became at least one example
    class_statements: int = 0  # facts whose cause is a seed class itself
    effects_without_class: int = 0  # facts of a seed instance whose effect has no P31/P279
    consequences: int = 0
    examples: int = 0
    examples_trimmed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "facts": self.facts,
            "facts_by_property": dict(sorted(self.facts_by_property.items())),
            "lifted_facts": self.lifted_facts,
            "class_level_statements": self.class_statements,
            "effects_without_class": self.effects_without_class,
            "consequences": self.consequences,
            "examples": self.examples,
            "examples_trimmed": self.examples_trimmed,
        }


def fetch_causal_facts(engine: Engine, causes: Iterable[str], s: WikidataSettings) -> list[Fact]:
    """Causal facts whose cause is in ``causes``, sorted; item-valued effects only."""
    rows = select_batched(
        engine, causes, s.values_batch, s.page_size,
        lambda c, limit, offset, lb, key: Q.causal_facts(
            c, limit, offset, subject_properties=s.subject_properties, object_properties=s.object_properties,
            batch=lb, key=key),
        var="cause", paging=s.paging,
    )
    facts = set()
    for row in rows:
        cause, effect = row_qid(row, "cause"), row_qid(row, "effect")
        prop = row.get("property", {}).get("value")
        if cause and effect and prop:
            facts.add(Fact(cause, effect, prop))
    return sorted(facts, key=lambda f: (Q.qid_key(f.cause), Q.qid_key(f.effect), f.property))


def effect_classes(terms: Terms | None) -> list[str]:
    """The classes a fact's effect is lifted to: its P31 classes, and its P279 superclasses
    when the effect is itself a class (e.g. "death")."""
    if terms is None:
        return []
    out = list(terms.instance_of)
    for c in terms.subclass_of:
        if c not in out:
            out.append(c)
    return out


def consequence_classes(seeds: Sequence[str], instances_by_seed: Mapping[str, Sequence[str]],
                        facts: Iterable[Fact], terms: Mapping[str, Terms]) -> set[str]:
    """The classes the Base KG will name as consequences (to fetch their labels first)."""
    members = {x for items in instances_by_seed.values() for x in items}
    seedset = set(seeds)
    out: set[str] = set()
    for f in facts:
        if f.cause in members:
            out.update(effect_classes(terms.get(f.effect)))
        if f.cause in seedset:
            out.add(f.effect)
    return out


def _labels(t: Terms | None) -> tuple[str | None, list[str]]:
    t = t or Terms()
    return t.label, t.labels()


def build_base_kg(
    seeds: Sequence[str],
    instances_by_seed: Mapping[str, Sequence[str]],
    facts: Iterable[Fact],
    terms: Mapping[str, Terms],
    *,
    counts: Mapping[str, tuple[int, int]] | None = None,
    max_examples: int = 0,
) -> tuple[list[BaseKGLine], BaseKGStats]:
    """One ``BaseKGLine`` per seed class (config order), consequences by ``facts_count``
    (then QID), examples by (cause, effect) QID. ``counts``: QID -> (Wikinews-linked,
    enwiki-linked direct instances) or None (then the count fields are null).
    ``max_examples``: keep at most this many examples per consequence (0 = all)."""
    stats = BaseKGStats()
    lines = list(iter_base_kg(seeds, instances_by_seed, facts, terms, counts=counts, max_examples=max_examples,
                              stats=stats))
    return lines, stats


def iter_base_kg(
    seeds: Sequence[str],
    instances_by_seed: Mapping[str, Sequence[str]],
    facts: Iterable[Fact],
    terms: Mapping[str, Terms],
    *,
    counts: Mapping[str, tuple[int, int]] | None = None,
    max_examples: int = 0,
    stats: BaseKGStats,
) -> Iterator[BaseKGLine]:
    """``build_base_kg``'s lines one at a time, ``stats`` counted on the way (complete once the
    last line is out): the corpus build writes each line as it is made, so only one seed class's
    examples are held as records (at 68,391 documents the 112,308 examples of all 50 lines took
    about 230 MB as records)."""
    members = {item for items in instances_by_seed.values() for item in items}
    seedset = set(seeds)
    # The facts by cause, and the class-level statements: (C, D) -> {properties}.
    by_cause: dict[str, list[Fact]] = defaultdict(list)
    direct: dict[tuple[str, str], set[str]] = defaultdict(set)
    for f in facts:
        stats.facts += 1
        stats.facts_by_property[f.property] += 1
        if f.cause in seedset:
            stats.class_statements += 1
            direct[(f.cause, f.effect)].add(f.property)
        if f.cause in members:
            if not effect_classes(terms.get(f.effect)):
                stats.effects_without_class += 1
                continue
            stats.lifted_facts += 1
            by_cause[f.cause].append(f)

    def count(qid: str) -> tuple[int | None, int | None]:
        if counts is None:
            return None, None
        return counts.get(qid, (0, 0))

    for c in seeds:
        # This seed class's examples only: D -> {(x, y): {properties}} (all 50 lines' examples
        # at once were the largest structure of the Wikidata stage at 68,391 documents).
        examples: dict[str, dict[tuple[str, str], set[str]]] = defaultdict(lambda: defaultdict(set))
        for x in instances_by_seed.get(c, ()):
            for f in by_cause.get(x, ()):
                for d in effect_classes(terms.get(f.effect)):
                    examples[d][(f.cause, f.effect)].add(f.property)
        label, labels = _labels(terms.get(c))
        usage, pages = count(c)
        consequences = []
        ds = set(examples) | {d for (cc, d) in direct if cc == c}
        for d in ds:
            ex = examples.get(d, {})
            ordered = sorted(ex.items(), key=lambda kv: (Q.qid_key(kv[0][0]), Q.qid_key(kv[0][1])))
            kept = ordered[:max_examples] if max_examples > 0 else ordered
            stats.examples_trimmed += len(ordered) - len(kept)
            d_label, d_labels = _labels(terms.get(d))
            d_usage, d_pages = count(d)
            consequences.append(BaseKGConsequence(
                id=d, label=d_label, labels=d_labels, usage_count=d_usage, page_count=d_pages,
                facts_count=len(ordered) + (1 if (c, d) in direct else 0),
                examples=[
                    BaseKGExample(
                        cause=Ref(label=(terms.get(x) or Terms()).label, id=x),
                        effect=Ref(label=(terms.get(y) or Terms()).label, id=y),
                        properties=sorted(props, key=lambda p: int(p[1:])),
                    )
                    for (x, y), props in kept
                ],
                direct_properties=sorted(direct.get((c, d), set()), key=lambda p: int(p[1:])),
            ))
        consequences.sort(key=lambda k: (-(k.facts_count or 0), Q.qid_key(k.id)))
        stats.consequences += len(consequences)
        stats.examples += sum(len(k.examples) for k in consequences)
        yield BaseKGLine(
            event=BaseKGEvent(id=c, label=label, labels=labels, page_count=pages, usage_count=usage),
            consequences=consequences,
        )


def class_pairs(lines: Iterable[BaseKGLine | Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(event class, consequence class) pairs of Base KG lines (models or parsed JSON)."""
    out = set()
    for line in lines:
        d = line.model_dump() if hasattr(line, "model_dump") else line
        for c in d["consequences"]:
            out.add((d["event"]["id"], c["id"]))
    return out


def instance_pairs(lines: Iterable[BaseKGLine | Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(cause, effect) pairs of the examples of Base KG lines."""
    out = set()
    for line in lines:
        d = line.model_dump() if hasattr(line, "model_dump") else line
        for c in d["consequences"]:
            for ex in c.get("examples") or []:
                out.add((ex["cause"]["id"], ex["effect"]["id"]))
    return out
