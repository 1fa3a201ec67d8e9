"""Aggregation: linked mentions -> causal edges, instance edges lifted to classes, confidence.

The second half of KG assembly (``kg/assemble.py``): the mentions are grouped by (cause QID,
effect QID) into edges, instance and mixed edges are lifted to the classes of their ends
(``lift_targets``), edges below ``kg.min_support`` sentences are dropped, and the rest are
scored (``apply_confidence``, ``kg/confidence.py``) and ranked best-supported first
(``edge_rank``, also the order of every reader of the KG).

- ``aggregate``: mentions -> ``KGEdge`` records (with ``AggregateCounts``);
- ``aggregate_on_disk``: the same, the mentions kept in a ``MentionStore`` (kg/mentionstore.py)
  and the edges returned as headers over it (``AggregatedKG``): what ``kg assemble`` runs;
- ``apply_confidence``: set each edge's confidence and drop those below ``kg.min_confidence``;
- ``lift_targets``: the classes an instance is lifted to (``kg.lift``: one of ``LIFT_MODES``);
- ``edge_rank``: the sort key of edges; ``qid_number``: the number of a QID, for sorting.

A change that gives other edges for the same mentions needs ``kg.assemble.OUTPUT_VERSION`` bumped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Callable, Iterable, Mapping, Sequence

from causalkg.core.contracts import Concept, EdgeExample, EdgeSupport, KGEdge, KGMention, Ref, ScoreSummary
from causalkg.core.errors import ConfigError
from causalkg.kg import rdf
from causalkg.kg.mentionstore import MentionStore

LIFT_MODES = ("seed_classes", "instance_of", "both", "none")


def _summary(values: Sequence[float]) -> ScoreSummary:
    return ScoreSummary(best=round(max(values), 6), mean=round(sum(values) / len(values), 6))


def lift_targets(qid: str, concepts: Mapping[str, Concept], mode: str) -> list[str]:
    """The classes an instance end is lifted to: its seed classes, its P31 classes, or both;
    only classes known to the concepts file (they need a label and a kind)."""
    c = concepts.get(qid)
    if c is None or mode == "none":
        return []
    targets: list[str] = []
    if mode in ("seed_classes", "both"):
        targets += c.seed_classes
    if mode in ("instance_of", "both"):
        targets += c.instance_of
    seen: list[str] = []
    for q in targets:
        known = concepts.get(q)
        if q != qid and q not in seen and known is not None and known.kind == "class":
            seen.append(q)
    return seen


@dataclass
class _Acc:
    cause: str
    effect: str
    n: int = 0  # own (direct) mentions; the mentions themselves are in the MentionStore
    examples: set[str] = field(default_factory=set)
    lifted_to: set[str] = field(default_factory=set)


@dataclass
class AggregateCounts:
    mentions: int = 0
    duplicate_mentions: int = 0
    below_min_support: int = 0
    lifted_edges: int = 0
    unliftable_ends: int = 0
    lifted_self_loops_dropped: int = 0
    below_min_confidence: int = 0


def aggregate(
    mentions: Iterable[KGMention],
    concepts: Mapping[str, Concept],
    *,
    lift: str = "both",
    min_support: int = 1,
    counts: AggregateCounts | None = None,
    lift_self_loops: bool = True,
) -> list[KGEdge]:
    """Aggregate linked mentions into edges by (cause QID, effect QID), lift instance and mixed
    edges to classes, and return the edges best-supported first.

    An edge's level is ``class`` (both ends classes), ``instance`` (both instances) or
    ``mixed``. An instance end is lifted to ``lift_targets`` (``lift``: seed_classes |
    instance_of | both | none); a class end stays; every resulting class -> class pair gets the
    lower edge as an example (a class self-loop, as in the Base KG, is kept). Support counts
    distinct sentences and documents over an edge's own mentions and its examples' mentions;
    scores are the best and mean extraction score, and the best and mean of the lower link score
    of each mention. Edges (direct, then lifted) below ``min_support`` sentences are dropped.

    The edges come with their mentions; ``aggregate_on_disk`` gives the same edges without
    holding the mentions in memory (what ``kg assemble`` uses).
    """
    with MentionStore() as store:
        kg = aggregate_on_disk(mentions, concepts, store, lift=lift, min_support=min_support, counts=counts,
                               lift_self_loops=lift_self_loops)
        return [kg.full(e) for e in kg.edges]


class AggregatedKG:
    """The edges of a KG as headers (every field but ``mentions``, which is empty) over the
    ``MentionStore`` that holds their mentions: the KG writers read an edge's mentions
    (``mentions``) or its sentences (``sentences``) when they need them, one edge at a time."""

    def __init__(self, edges: list[KGEdge], store: MentionStore) -> None:
        self.edges = edges
        self.store = store

    def mentions(self, e: KGEdge) -> list[KGMention]:
        return self.store.mentions(_key(e)) if e.support.direct_mentions else []

    def sentences(self, e: KGEdge) -> set[tuple[str, int, int]]:
        return self.store.sentences([_key(e)]) if e.support.direct_mentions else set()

    def full(self, e: KGEdge) -> KGEdge:
        """The edge with its mentions."""
        return e.model_copy(update={"mentions": self.mentions(e)})

    def documents(self) -> int:
        """The distinct documents behind the edges' own mentions."""
        return len({d for e in self.edges for d, _, _ in self.sentences(e)})

    def features(self, e: KGEdge, by_id: Mapping[str, KGEdge]) -> dict[str, float]:
        """The confidence features of ``e`` (``kg.confidence.features``), read from the store."""
        from causalkg.kg.confidence import features_from

        if e.support.direct_mentions:
            return features_from(e, self.store.summary([_key(e)]), 0.0)
        keys = [_split(ex.edge_id) for ex in e.examples if ex.edge_id in by_id]
        return features_from(e, self.store.summary(keys), 1.0)


def aggregate_on_disk(
    mentions: Iterable[KGMention],
    concepts: Mapping[str, Concept],
    store: MentionStore,
    *,
    lift: str = "both",
    min_support: int = 1,
    counts: AggregateCounts | None = None,
    lift_self_loops: bool = True,
) -> AggregatedKG:
    """``aggregate``, with the mentions streamed into ``store`` (an empty ``MentionStore``)
    and the edges returned as headers over it: memory holds the edges and their ends, never
    the mentions (the stream may be every linked mention of the corpus)."""
    if lift not in LIFT_MODES:
        raise ConfigError(f"kg.lift must be one of {', '.join(LIFT_MODES)}, got {lift!r}")
    counts = counts if counts is not None else AggregateCounts()
    nodes = _Nodes()
    direct = _group(mentions, concepts, nodes, counts, store)
    # Direct edges below min_support are dropped before lifting: their sentences do not count.
    for key in [k for k, a in direct.items() if len(_support(a, store)) < min_support]:
        counts.below_min_support += 1
        del direct[key]
    edges = _lift(direct, concepts, nodes, lift=lift, lift_self_loops=lift_self_loops, counts=counts)
    _drop_weak_lifted(edges, direct, min_support, counts, store)
    out = [_edge(cq, eq, acc, nodes, store) for (cq, eq), acc in edges.items()]
    out.sort(key=edge_rank)
    return AggregatedKG(out, store)


@dataclass
class _Nodes:
    """The kind and the label of every concept an edge ends at: from the concepts file, else
    the linker's answer; the first value met is kept."""

    kind: dict[str, str] = field(default_factory=dict)
    label: dict[str, str | None] = field(default_factory=dict)


def _group(mentions: Iterable[KGMention], concepts: Mapping[str, Concept], nodes: _Nodes,
           counts: AggregateCounts, store: MentionStore) -> dict[tuple[str, str], _Acc]:
    """The direct edges: the mentions by (cause QID, effect QID) into ``store``, a repeated
    mention once."""
    for m in mentions:
        counts.mentions += 1
        if not store.add(m):
            counts.duplicate_mentions += 1
            continue
        for end in (m.cause, m.effect):
            c = concepts.get(end.qid)
            nodes.kind.setdefault(end.qid, c.kind if c is not None else end.kind)
            nodes.label.setdefault(end.qid, (c.label if c is not None else None) or end.label)
    store.commit()
    return {key: _Acc(*key, n=n) for key, n in store.edge_keys()}


def _support(acc: _Acc, store: MentionStore) -> set[tuple[str, int, int]]:
    """The distinct sentences behind an edge: its own mentions' and its examples'."""
    return store.sentences([(acc.cause, acc.effect), *(_split(ex) for ex in acc.examples)])


def _lift(direct: dict[tuple[str, str], _Acc], concepts: Mapping[str, Concept], nodes: _Nodes, *, lift: str,
          lift_self_loops: bool, counts: AggregateCounts) -> dict[tuple[str, str], _Acc]:
    """The direct edges and the class edges their instance ends lift to (each lower edge an
    example of every class edge it lifts into)."""
    kind_of = nodes.kind
    edges: dict[tuple[str, str], _Acc] = dict(direct)
    for (cq, eq), acc in sorted(direct.items()):
        if kind_of[cq] == "class" and kind_of[eq] == "class":
            continue
        causes = [cq] if kind_of[cq] == "class" else lift_targets(cq, concepts, lift)
        effects = [eq] if kind_of[eq] == "class" else lift_targets(eq, concepts, lift)
        if not causes or not effects:
            counts.unliftable_ends += 1
        for c, e in product(causes, effects):
            if c == e and not lift_self_loops:
                # "destruction" -> "damage" lifted to property damage -> property damage says nothing
                counts.lifted_self_loops_dropped += 1
                continue
            up = edges.get((c, e))
            if up is None:
                up = edges[(c, e)] = _Acc(c, e)
                counts.lifted_edges += 1
                for q in (c, e):
                    kind_of.setdefault(q, "class")
                    nodes.label.setdefault(q, concepts[q].label if q in concepts else None)
            up.examples.add(rdf.edge_id_for(cq, eq))
            acc.lifted_to.add(rdf.edge_id_for(c, e))
    return edges


def _drop_weak_lifted(edges: dict[tuple[str, str], _Acc], direct: Mapping[tuple[str, str], _Acc], min_support: int,
                      counts: AggregateCounts, store: MentionStore) -> None:
    """Drop the lifted edges below ``min_support`` sentences (and their ids from the lower
    edges' ``lifted_to``)."""
    for key in [k for k, a in edges.items() if k not in direct and len(_support(a, store)) < min_support]:
        counts.below_min_support += 1
        counts.lifted_edges -= 1
        for ex in edges[key].examples:
            edges[_split(ex)].lifted_to.discard(rdf.edge_id_for(*key))
        del edges[key]


def _edge(cq: str, eq: str, acc: _Acc, nodes: _Nodes, store: MentionStore) -> KGEdge:
    """The ``KGEdge`` of one accumulated edge, without its mentions (``AggregatedKG.full``
    adds them): support and scores over its own mentions and its examples' mentions, the
    examples in QID order."""
    label_of = nodes.label
    own = store.scores((cq, eq), own=True) if acc.n else []
    every = list(own)
    for ex in sorted(acc.examples):
        every += store.scores(_split(ex), own=False)
    sents = {(doc, ss, se) for _, _, doc, ss, se in every}
    docs = {doc for _, _, doc, _, _ in every}
    examples = [
        EdgeExample(cause=Ref(id=_split(ex)[0], label=label_of.get(_split(ex)[0])),
                    effect=Ref(id=_split(ex)[1], label=label_of.get(_split(ex)[1])), edge_id=ex)
        for ex in sorted(acc.examples, key=lambda x: (qid_number(_split(x)[0]), qid_number(_split(x)[1])))
    ]
    ck, ek = nodes.kind[cq], nodes.kind[eq]
    return KGEdge(
        cause={"label": label_of.get(cq), "id": [cq]},
        effect={"label": label_of.get(eq), "id": [eq]},
        edge_id=rdf.edge_id_for(cq, eq),
        level="class" if ck == ek == "class" else "instance" if ck == ek == "instance" else "mixed",
        cause_kind=ck,
        effect_kind=ek,
        support=EdgeSupport(sentences=len(sents), documents=len(docs), mentions=len(every),
                            direct_mentions=len(own), examples=len(examples)),
        score=_summary([score for score, _, _, _, _ in every]),
        link_score=_summary([link for _, link, _, _, _ in every]),
        examples=examples,
        lifted_to=sorted(acc.lifted_to),
        mentions=[],
    )


def apply_confidence(edges: list[KGEdge], min_confidence: float, counts: AggregateCounts | None = None, *,
                     features_of: Callable[[KGEdge, Mapping[str, KGEdge]], dict[str, float]] | None = None,
                     ) -> list[KGEdge]:
    """Set every edge's ``confidence`` (kg/confidence.py) and drop those below
    ``min_confidence``: a dropped lower edge leaves the ``examples`` of the class edges it was
    lifted into, and a lifted class edge left with no example and no mention goes too.
    ``features_of(edge, by_id)``: the features of edges that do not carry their mentions
    (``AggregatedKG.features``)."""
    from causalkg.kg.confidence import score_edges

    score_edges(edges, features_of=features_of)
    if min_confidence <= 0:
        return edges
    gone = {e.edge_id for e in edges if (e.confidence or 0.0) < min_confidence}
    kept = []
    for e in edges:
        if e.edge_id in gone:
            continue
        if e.examples:
            e.examples = [x for x in e.examples if x.edge_id not in gone]
            if not e.examples and not e.support.direct_mentions:
                gone.add(e.edge_id)
                continue
        e.lifted_to = [x for x in e.lifted_to if x not in gone]
        kept.append(e)
    for e in kept:
        e.lifted_to = [x for x in e.lifted_to if x not in gone]
    if counts is not None:
        counts.below_min_confidence += len(edges) - len(kept)
    return kept


def edge_rank(e: KGEdge) -> tuple:
    """Best-supported first: distinct sentences, documents, best score; then the QIDs."""
    return (-e.support.sentences, -e.support.documents, -e.score.best,
            qid_number(e.cause.id[0]), qid_number(e.effect.id[0]))


def _key(e: KGEdge) -> tuple[str, str]:
    return e.cause.id[0], e.effect.id[0]


def _split(edge_id: str) -> tuple[str, str]:
    c, _, e = edge_id.partition("_")
    return c, e


def qid_number(qid: str) -> int:
    return int(qid[1:])
