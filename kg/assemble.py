"""Assembly: extracted phrase pairs -> linked mentions -> causal edges -> the KG files.

Flow: ``kg extract`` writes ``data/kg/extractions.jsonl``; ``assemble`` links every cause and
effect phrase with ``linking.linker.Linker`` (one call per shard of extractions), keeps a pair
when both ends link above the threshold, aggregates the mentions by (cause QID, effect QID) into
edges, lifts instance edges to classes, and writes into ``data/kg/``:

- ``causal_kg_pairs.jsonl``: one ``KGEdge`` per line (the flat WikiCausal pair shape plus level,
  support, scores, examples and every mention as provenance);
- ``causal_kg.jsonl``: the nested WikiCausal Base KG shape (``event`` / ``consequences`` /
  ``examples``), one line per cause class, read as is by WikiCausal's ``recall.py`` and
  ``precision.py`` (classes, instances and both);
- ``causal_kg.ttl``, ``nt/causal_kg-NNNNN.nt`` (RDF, see ``kg/rdf.py``), ``causal_kg.graphml``;
- ``manifest.json`` (written last): config, inputs' checksums, the linker, counts, outputs.

Linking is checkpointed per shard in ``data/kg/linked/``: a killed run restarted links only the
shards that were not finished, and gives the same outputs. When the inputs and the settings are
unchanged (manifest fingerprint), ``assemble`` does nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import islice, product
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from causalkg.config import Config
from causalkg.contracts import (
    Assertion,
    BaseKGLine,
    Candidate,
    Concept,
    EdgeExample,
    EdgeSupport,
    Extraction,
    KGEdge,
    KGMention,
    LinkedSpan,
    Ref,
    ScoreSummary,
    is_qid,
)
from causalkg import faults, generations
from causalkg.errors import ConfigError, SchemaError, SourceError
from causalkg.jsonl import ReadStats, atomic_write, iter_json_lines, read_jsonl, to_json_line
from causalkg.manifest import build_manifest, file_sha256, fingerprint, read_manifest, write_manifest
from causalkg.progress import progress
from causalkg.shards import Shards
from causalkg.layout import NESTED_FILE, PAIRS_FILE, default_paths, kg_dir
from causalkg.kg import rdf

log = logging.getLogger(__name__)

LIFT_MODES = ("seed_classes", "instance_of", "both", "none")
TURTLE_FILE = "causal_kg.ttl"
NT_DIR = "nt"
GRAPHML_FILE = "causal_kg.graphml"
LINKED_DIR = "linked"
MANIFEST_FILE = "manifest.json"
# The documented paths of data/kg/: stable links into the current generation (causalkg.generations).
OUTPUT_NAMES = (PAIRS_FILE, NESTED_FILE, TURTLE_FILE, NT_DIR, GRAPHML_FILE, MANIFEST_FILE)
FORMAT_VERSION = "1"  # bump when the linked checkpoints change for the same inputs (relinks everything)
OUTPUT_VERSION = "2"  # bump when the KG files change for the same mentions (rewrites them, no relinking)

Hook = Callable[[str, Mapping[str, Any]], None]


# --- inputs ----------------------------------------------------------------------------------


def load_concepts(path: str | Path, *, lenient: bool = False) -> dict[str, Concept]:
    """The concepts file as ``{qid: Concept}``. Raises SourceError when it is missing."""
    p = Path(path)
    if not p.is_file():
        raise SourceError(f"concepts file not found: {p}", hint="run causalkg corpus build, or pass --concepts FILE")
    return {c.id: c for c in read_jsonl(p, Concept, lenient=lenient)}


@dataclass(frozen=True)
class DocInfo:
    """What provenance needs of a corpus document."""

    title: str | None = None
    url: str | None = None
    revision_id: int | None = None
    concept: str | None = None
    categories: tuple[str, ...] = ()


def load_documents(path: str | Path | None, doc_ids: set[str] | None = None) -> dict[str, DocInfo]:
    """Title, URL, revision and document concept of corpus documents (only ``doc_ids`` when
    given), read without validating the (large) text fields. A missing corpus gives ``{}``."""
    if path is None or not Path(path).is_file():
        return {}
    out: dict[str, DocInfo] = {}
    for lineno, rec in iter_json_lines(path):
        if not isinstance(rec, dict) or "id" not in rec:
            raise SchemaError(f"{path}:{lineno}: a corpus document needs an id")
        key = str(rec["id"])
        if doc_ids is not None and key not in doc_ids:
            continue
        dc = rec.get("document_concept") or {}
        concept = dc.get("id") if isinstance(dc, dict) else None
        rev = rec.get("revision_id")
        out[key] = DocInfo(rec.get("title"), rec.get("url"), int(rev) if rev is not None else None,
                           concept if is_qid(concept) else None, tuple(rec.get("categories") or ()))
    return out


def _doc_concept(x: Extraction, doc: DocInfo | None) -> str | None:
    extra = getattr(x, "document_concept", None)
    if isinstance(extra, dict):
        extra = extra.get("id")
    if is_qid(extra):
        return extra
    return doc.concept if doc else None


# --- linking ---------------------------------------------------------------------------------


@dataclass
class LinkCounts:
    """What linking did with the extractions."""

    extractions: int = 0
    linked: int = 0
    cause_unlinked: int = 0
    effect_unlinked: int = 0
    both_unlinked: int = 0
    self_loops_dropped: int = 0
    self_loops_kept: int = 0
    # kg.drop: pairs the sentence does not assert (kg/polarity.py), counted by their first flag
    unasserted_dropped: int = 0
    negated: int = 0
    hedged: int = 0
    question: int = 0
    estimate: int = 0
    reversed: int = 0
    temporal: int = 0
    # the sense check of the linker's answers (linking/sense.py)
    senses_rejected: int = 0
    page_event_links: int = 0  # "the attacks" on the page "September 11 attacks" -> the page's event
    # structured sources (kg/extractors/structured.py): pairs read, pairs linked at both ends
    structured_pairs: int = 0
    structured_linked: int = 0

    def add(self, other: "LinkCounts | Mapping[str, int]") -> None:
        items = other.__dict__ if isinstance(other, LinkCounts) else other
        for k, v in items.items():
            setattr(self, k, getattr(self, k) + int(v))


def link_pairs(
    extractions: Sequence[Extraction],
    cause_candidates: Sequence[Sequence[Candidate]],
    effect_candidates: Sequence[Sequence[Candidate]],
    docs: Mapping[str, DocInfo],
    *,
    allow_self_loops: bool = False,
    assertions: Sequence[Assertion | None] | None = None,
    counts: LinkCounts | None = None,
) -> tuple[list[KGMention], LinkCounts]:
    """Turn extractions and their ends' candidates (best first, all above the threshold) into
    mentions. A pair is kept when both ends have a candidate; a pair whose two ends link to the
    same concept is dropped unless ``allow_self_loops``. ``assertions`` (one per extraction, or
    None) are stored on the mentions."""
    if not (len(extractions) == len(cause_candidates) == len(effect_candidates)):
        raise ConfigError("link_pairs: one candidate list per extraction end is needed")
    counts = counts if counts is not None else LinkCounts()
    counts.extractions += len(extractions)
    out: list[KGMention] = []
    assertions = list(assertions) if assertions is not None else [None] * len(extractions)
    for x, cc, ec, asr in zip(extractions, cause_candidates, effect_candidates, assertions):
        if not cc or not ec:
            if not cc and not ec:
                counts.both_unlinked += 1
            elif not cc:
                counts.cause_unlinked += 1
            else:
                counts.effect_unlinked += 1
            continue
        c, e = cc[0], ec[0]
        if c.qid == e.qid:
            if not allow_self_loops:
                counts.self_loops_dropped += 1
                continue
            counts.self_loops_kept += 1
        doc = docs.get(x.doc_id)
        extra = x.model_extra or {}
        rev = extra.get("revision_id", doc.revision_id if doc else None)
        out.append(KGMention(
            mention_id=rdf.mention_id_for(x.doc_id, x.sentence.start, (x.cause.start, x.cause.end),
                                          (x.effect.start, x.effect.end), x.extractor),
            doc_id=x.doc_id,
            title=extra.get("title") or (doc.title if doc else None),
            url=extra.get("url") or (doc.url if doc else None),
            revision_id=int(rev) if rev is not None else None,
            document_concept=_doc_concept(x, doc),
            sentence=x.sentence,
            cause=_linked(x.cause, c),
            effect=_linked(x.effect, e),
            direction=x.direction,
            score=x.score,
            extractor=x.extractor,
            model=x.model,
            question=x.question,
            cause_candidates=list(cc),
            effect_candidates=list(ec),
            source=_source_of(x),
            assertion=asr,
        ))
        counts.linked += 1
    return out, counts


STRUCTURED_SOURCES = ("wikipedia_infobox", "wikipedia_list")


def _source_of(x: Extraction) -> str:
    src = (x.model_extra or {}).get("source")
    return src if src in STRUCTURED_SOURCES else "sentence"


def assess_extractions(
    extractions: Sequence[Extraction], drop: Sequence[str], counts: LinkCounts,
) -> tuple[list[Extraction], list[Assertion | None]]:
    """Read each prose pair in its sentence (``kg.polarity.assess``); count every flag, and
    leave out the pairs with a flag in ``drop``. Structured-source pairs are not assessed."""
    from causalkg.kg.polarity import assess_in_document

    kept: list[Extraction] = []
    found: list[Assertion | None] = []
    for x in extractions:
        if _source_of(x) != "sentence":
            kept.append(x)
            found.append(None)
            continue
        a = assess_in_document(x.sentence.text, x.sentence.start, (x.cause.start, x.cause.end),
                               (x.effect.start, x.effect.end))
        for flag in a.flags():
            setattr(counts, flag, getattr(counts, flag) + 1)
        if a.dropped_by(drop):
            counts.unasserted_dropped += 1
            continue
        kept.append(x)
        found.append(Assertion(**a.as_dict()))
    return kept, found


def _linked(span: Any, cand: Candidate) -> LinkedSpan:
    return LinkedSpan(text=span.text, start=span.start, end=span.end, qid=cand.qid, label=cand.label,
                      kind=cand.kind, link_score=cand.score, match=cand.match)


def link_shard(
    extractions: Sequence[Extraction],
    linker: Any,
    docs: Mapping[str, DocInfo],
    *,
    k: int,
    use_context: bool = True,
    allow_self_loops: bool = False,
    drop: Sequence[str] | None = None,
    sense: Any = None,
) -> tuple[list[KGMention], LinkCounts]:
    """Link the cause and effect phrases of one shard in a single linker call, then build the
    mentions (see :func:`link_pairs`). With ``drop`` (a list of ``kg.polarity`` flags, may be
    empty) every prose pair is assessed first and those the sentence does not assert are left
    out; with ``sense`` (a ``linking.sense.SenseCheck``) candidates that do not mean what the
    phrase means are removed before the best one is taken."""
    counts = LinkCounts()
    if not extractions:
        return [], counts
    assertions = None
    if drop is not None:
        n0 = len(extractions)
        extractions, assertions = assess_extractions(extractions, drop, counts)
        counts.extractions += n0 - len(extractions)
        if not extractions:
            return [], counts
    phrases = [x.cause.text for x in extractions] + [x.effect.text for x in extractions]
    contexts = None
    if use_context:
        from causalkg.linking.linker import LinkContext

        ctx = [LinkContext(sentence=x.sentence.text, document_concept=_doc_concept(x, docs.get(x.doc_id)))
               for x in extractions]
        contexts = ctx + ctx
    results = linker.link(phrases, k=k, contexts=contexts)
    if sense is not None:
        sentences = [x.sentence.text for x in extractions] * 2
        checked = sense.filter(phrases, results, sentences)
        counts.senses_rejected += sum(len(a) - len(b) for a, b in zip(results, checked))
        results = page_event_links(phrases, checked, [x.doc_id for x in extractions] * 2, docs, linker, sense, counts)
    n = len(extractions)
    return link_pairs(extractions, results[:n], results[n:], docs, allow_self_loops=allow_self_loops,
                      assertions=assertions, counts=counts)


def _page_event(doc: DocInfo, linker: Any, sense: Any, cache: dict) -> Candidate | None:
    """The concept of a page's event: its title linked (any answer that passes the sense
    check), else the first category head with an exact class match (structured.event_phrases)."""
    from causalkg.kg.extractors.structured import event_phrases

    key = (doc.title, doc.categories)
    if key in cache:
        return cache[key]
    phrases = event_phrases({"title": doc.title, "categories": list(doc.categories)})
    found: Candidate | None = None
    if phrases:
        res = linker.link(phrases, k=3)
        if sense is not None:
            res = sense.filter(phrases, res, [None] * len(phrases))
        for i, cands in enumerate(res):
            usable = cands if i == 0 else [c for c in cands if c.match == "exact" and c.kind == "class"]
            if usable:
                found = usable[0]
                break
    cache[key] = found
    return found


def page_event_links(
    phrases: Sequence[str], results: list[list[Candidate]], doc_ids: Sequence[str], docs: Mapping[str, DocInfo],
    linker: Any, sense: Any, counts: LinkCounts,
) -> list[list[Candidate]]:
    """A phrase that names the page's own event by its head noun alone ("the attacks" on the
    page "September 11 attacks", "the war" on "Spanish–American War") links to the page event
    (``_page_event``), not to whatever the bare word is most similar to."""
    from causalkg.linking.sense import parse, stem

    from causalkg.kg.extractors.structured import event_phrases

    wanted: list[int] = []
    for i, (ph, d) in enumerate(zip(phrases, doc_ids)):
        doc = docs.get(d)
        if doc is None or not doc.title:
            continue
        p = parse(ph)
        words = doc.title.replace("\u2013", " ").split()
        if p.head is None or p.modifiers or p.n_words > 2 or not words or stem(words[-1].lower()) != p.head:
            continue
        wanted.append(i)
    out = list(results)
    if not wanted:
        return out
    # every page event of the shard in one linker call
    keys = sorted({(docs[doc_ids[i]].title, docs[doc_ids[i]].categories) for i in wanted})
    flat = [(key, j, ph) for key in keys for j, ph in enumerate(event_phrases({"title": key[0], "categories": list(key[1])}))]
    res = linker.link([ph for _, _, ph in flat], k=3) if flat else []
    if sense is not None and flat:
        res = sense.filter([ph for _, _, ph in flat], res, [None] * len(flat))
    event: dict = {}
    for (key, j, _), cands in zip(flat, res):
        if key in event:
            continue
        usable = cands if j == 0 else [c for c in cands if c.match == "exact" and c.kind == "class"]
        if usable:
            event[key] = usable[0]
    for i in wanted:
        doc = docs[doc_ids[i]]
        ev = event.get((doc.title, doc.categories))
        if ev is not None:
            out[i] = [ev.model_copy(update={"page_event": True})] + [c for c in results[i] if c.qid != ev.qid]
            counts.page_event_links += 1
    return out


def link_structured(
    records: Iterable[Mapping[str, Any]],
    linker: Any,
    docs: Mapping[str, DocInfo],
    *,
    sources: Sequence[str],
    k: int,
    sense: Any = None,
    allow_self_loops: bool = False,
    min_link: float = 0.8,
) -> tuple[list[KGMention], LinkCounts]:
    """Pairs of the structured sources (``kg.extractors.structured``: infobox fields, list
    items under Causes/Aftermath-style headings) of corpus ``records``, linked.

    The page's event end is linked from ``event_phrases``: the title with every linker answer
    (then the sense check), else the first category head with an *exact* class match. The
    item end needs an exact match or a nearest neighbour at or above ``min_link``, and passes
    the sense check like a sentence's phrase."""
    from causalkg.contracts import SCHEMA_VERSION
    from causalkg.kg.extractors.structured import structured_pairs

    counts = LinkCounts()
    xs: list[Extraction] = []
    event_of: dict[str, tuple[str, tuple[str, ...]]] = {}
    for rec in records:
        pairs = [p for p in structured_pairs(rec) if p["source"] in sources]
        if not pairs:
            continue
        event_of[str(rec.get("id"))] = (str(rec.get("title") or ""), tuple(rec.get("categories") or ()))
        xs += [Extraction.model_validate({"schema_version": SCHEMA_VERSION, **p}) for p in pairs]
    if not xs:
        return [], counts
    # the page events
    cache: dict = {}
    event: dict[str, Candidate] = {}
    for d, (title, cats) in event_of.items():
        ev = _page_event(DocInfo(title=title, categories=cats), linker, sense, cache)
        if ev is not None:
            event[d] = ev
    # the items
    item_ends = [x.effect if (x.model_extra or {}).get("event_end") == "cause" else x.cause for x in xs]
    # an item is linked by its first noun group ("Inadvertent explosion of core during
    # emergency shutdown ..." -> "inadvertent explosion"): infobox values are descriptions
    from causalkg.linking.sense import core

    phrases = [core(sp.text) for sp in item_ends]
    results = linker.link(phrases, k=k)
    if sense is not None:
        checked = sense.filter(phrases, results, [None] * len(phrases))
        counts.senses_rejected += sum(len(a) - len(b) for a, b in zip(results, checked))
        results = checked
    results = [[c for c in cands if c.match == "exact" or c.score >= min_link] for cands in results]
    cause_c, effect_c = [], []
    for x, end, cands in zip(xs, item_ends, results):
        ev = [event[x.doc_id]] if x.doc_id in event else []
        if end is x.effect:
            cause_c.append(ev)
            effect_c.append(cands)
        else:
            cause_c.append(cands)
            effect_c.append(ev)
    return link_pairs(xs, cause_c, effect_c, docs, allow_self_loops=allow_self_loops, counts=counts)


# --- aggregation -----------------------------------------------------------------------------


def _summary(values: Sequence[float]) -> ScoreSummary:
    return ScoreSummary(best=round(max(values), 6), mean=round(sum(values) / len(values), 6))


def _mention_key(m: KGMention) -> tuple:
    return (m.doc_id, m.sentence.start, m.cause.start, m.cause.end, m.effect.start, m.effect.end, m.mention_id)


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
    mentions: dict[str, KGMention] = field(default_factory=dict)
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
    """
    if lift not in LIFT_MODES:
        raise ConfigError(f"kg.lift must be one of {', '.join(LIFT_MODES)}, got {lift!r}")
    counts = counts if counts is not None else AggregateCounts()
    kind_of: dict[str, str] = {}
    label_of: dict[str, str | None] = {}
    direct: dict[tuple[str, str], _Acc] = {}
    for m in mentions:
        counts.mentions += 1
        key = (m.cause.qid, m.effect.qid)
        acc = direct.get(key)
        if acc is None:
            acc = direct[key] = _Acc(*key)
        if m.mention_id in acc.mentions:
            counts.duplicate_mentions += 1
            continue
        acc.mentions[m.mention_id] = m
        for end in (m.cause, m.effect):
            c = concepts.get(end.qid)
            kind_of.setdefault(end.qid, c.kind if c is not None else end.kind)
            label_of.setdefault(end.qid, (c.label if c is not None else None) or end.label)

    def support_of(acc: _Acc, edges: Mapping[tuple[str, str], _Acc]) -> set[tuple[str, int, int]]:
        sents = {(m.doc_id, m.sentence.start, m.sentence.end) for m in acc.mentions.values()}
        for ex in acc.examples:
            sents |= {(m.doc_id, m.sentence.start, m.sentence.end) for m in edges[_split(ex)].mentions.values()}
        return sents

    # Direct edges below min_support are dropped before lifting: their sentences do not count.
    for key in [k for k, a in direct.items() if len(support_of(a, direct)) < min_support]:
        counts.below_min_support += 1
        del direct[key]

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
                    label_of.setdefault(q, concepts[q].label if q in concepts else None)
            up.examples.add(rdf.edge_id_for(cq, eq))
            acc.lifted_to.add(rdf.edge_id_for(c, e))

    for key in [k for k, a in edges.items() if k not in direct and len(support_of(a, edges)) < min_support]:
        counts.below_min_support += 1
        counts.lifted_edges -= 1
        for ex in edges[key].examples:
            edges[_split(ex)].lifted_to.discard(rdf.edge_id_for(*key))
        del edges[key]

    out: list[KGEdge] = []
    for (cq, eq), acc in edges.items():
        own = sorted(acc.mentions.values(), key=_mention_key)
        every = list(own)
        for ex in sorted(acc.examples):
            every += edges[_split(ex)].mentions.values()
        sents = {(m.doc_id, m.sentence.start, m.sentence.end) for m in every}
        docs = {m.doc_id for m in every}
        examples = [
            EdgeExample(cause=Ref(id=_split(ex)[0], label=label_of.get(_split(ex)[0])),
                        effect=Ref(id=_split(ex)[1], label=label_of.get(_split(ex)[1])), edge_id=ex)
            for ex in sorted(acc.examples, key=lambda x: (_qnum(_split(x)[0]), _qnum(_split(x)[1])))
        ]
        ck, ek = kind_of[cq], kind_of[eq]
        out.append(KGEdge(
            cause={"label": label_of.get(cq), "id": [cq]},
            effect={"label": label_of.get(eq), "id": [eq]},
            edge_id=rdf.edge_id_for(cq, eq),
            level="class" if ck == ek == "class" else "instance" if ck == ek == "instance" else "mixed",
            cause_kind=ck,
            effect_kind=ek,
            support=EdgeSupport(sentences=len(sents), documents=len(docs), mentions=len(every),
                                direct_mentions=len(own), examples=len(examples)),
            score=_summary([m.score for m in every]),
            link_score=_summary([min(m.cause.link_score, m.effect.link_score) for m in every]),
            examples=examples,
            lifted_to=sorted(acc.lifted_to),
            mentions=own,
        ))
    out.sort(key=edge_rank)
    return out


def apply_confidence(edges: list[KGEdge], min_confidence: float, counts: AggregateCounts | None = None) -> list[KGEdge]:
    """Set every edge's ``confidence`` (kg/confidence.py) and drop those below
    ``min_confidence``: a dropped lower edge leaves the ``examples`` of the class edges it was
    lifted into, and a lifted class edge left with no example and no mention goes too."""
    from causalkg.kg.confidence import score_edges

    score_edges(edges)
    if min_confidence <= 0:
        return edges
    gone = {e.edge_id for e in edges if (e.confidence or 0.0) < min_confidence}
    kept = []
    for e in edges:
        if e.edge_id in gone:
            continue
        if e.examples:
            e.examples = [x for x in e.examples if x.edge_id not in gone]
            if not e.examples and not e.mentions:
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
            _qnum(e.cause.id[0]), _qnum(e.effect.id[0]))


def _split(edge_id: str) -> tuple[str, str]:
    c, _, e = edge_id.partition("_")
    return c, e


def _qnum(qid: str) -> int:
    return int(qid[1:])


# --- the nested (Base KG) shape --------------------------------------------------------------


def _edge_extras(e: KGEdge) -> dict[str, Any]:
    return {
        "edge_id": e.edge_id,
        "level": e.level,
        "support": e.support.model_dump(),
        "score": e.score.model_dump(),
        "link_score": e.link_score.model_dump(),
        "mentions": [json.loads(to_json_line(m)) for m in e.mentions],
    }


def nested_lines(edges: Sequence[KGEdge], concepts: Mapping[str, Concept]) -> list[dict[str, Any]]:
    """The class edges in the WikiCausal Base KG shape: one line per cause class, its effect
    classes as ``consequences``, and the instance (and mixed) edges lifted into each as
    ``examples``; our scores and provenance ride along in extra fields. Lines are ordered by
    support (distinct sentences behind the line), consequences best-supported first.

    An instance or mixed edge lifted into several class edges is an example of each (the
    reference scripts collect pairs into sets, so it counts once); one with no class to lift
    to is not in this file (see :func:`unlisted_edges`)."""
    by_id = {e.edge_id: e for e in edges}
    groups: dict[str, list[KGEdge]] = defaultdict(list)
    for e in edges:
        if e.level == "class":
            groups[e.cause.id[0]].append(e)

    def labels(qid: str, label: str | None) -> list[str]:
        c = concepts.get(qid)
        out = [label] if label else []
        for a in (c.aliases if c else []):
            if a not in out:
                out.append(a)
        return out

    lines: list[tuple[tuple, dict[str, Any]]] = []
    for cause, group in groups.items():
        group.sort(key=edge_rank)
        label = group[0].cause.label
        consequences = []
        for e in group:
            examples = []
            for ex in e.examples:
                lower = by_id.get(ex.edge_id)
                item = {"cause": {"label": ex.cause.label, "id": ex.cause.id},
                        "effect": {"label": ex.effect.label, "id": ex.effect.id}}
                if lower is not None:
                    item.update(_edge_extras(lower))
                examples.append(item)
            consequences.append({
                "id": e.effect.id[0],
                "label": e.effect.label,
                "labels": labels(e.effect.id[0], e.effect.label),
                "examples": examples,
                **_edge_extras(e),
            })
        # Distinct over the whole line: one sentence behind several consequences counts once.
        every = [m for e in group for m in e.mentions]
        every += [m for e in group for ex in e.examples if ex.edge_id in by_id for m in by_id[ex.edge_id].mentions]
        line = {
            "event": {"id": cause, "label": label, "labels": labels(cause, label)},
            "consequences": consequences,
            "support": {"sentences": len({(m.doc_id, m.sentence.start, m.sentence.end) for m in every}),
                        "documents": len({m.doc_id for m in every}),
                        "edges": len(group)},
        }
        BaseKGLine.model_validate(line)
        lines.append(((-line["support"]["sentences"], _qnum(cause)), line))
    lines.sort(key=lambda x: x[0])
    return [line for _, line in lines]


def unlisted_edges(edges: Sequence[KGEdge]) -> list[KGEdge]:
    """The instance and mixed edges that ``causal_kg.jsonl`` cannot hold: the nested shape
    lists a lower edge only as an example of a class edge, and these were lifted to none (an
    end with no known class, or ``kg.lift = none``). They are in the flat file and the RDF."""
    return [e for e in edges if e.level != "class" and not e.lifted_to]


# --- GraphML ---------------------------------------------------------------------------------


def write_graphml(edges: Sequence[KGEdge], path: str | Path) -> None:
    """The edges as a directed graph for graph tools (Gephi, Cytoscape, networkx)."""
    import networkx as nx

    g = nx.DiGraph()
    for e in sorted(edges, key=lambda x: x.edge_id):
        for ref, kind in ((e.cause, e.cause_kind), (e.effect, e.effect_kind)):
            q = ref.id[0]
            if q not in g:
                g.add_node(q, label=ref.label or "", kind=kind)
        g.add_edge(e.cause.id[0], e.effect.id[0], edge_id=e.edge_id, level=e.level,
                   support_sentences=e.support.sentences, support_documents=e.support.documents,
                   mentions=e.support.mentions, examples=e.support.examples,
                   best_score=e.score.best, mean_score=e.score.mean)
    with atomic_write(path, "wb") as fh:
        nx.write_graphml(g, fh, encoding="utf-8", prettyprint=True)


# --- the whole step --------------------------------------------------------------------------


@dataclass
class AssembleResult:
    """What ``assemble`` did: ``skipped`` when outputs were current; counts; the output folder."""

    out: Path
    skipped: bool
    counts: dict[str, Any]
    outputs: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    top: list[KGEdge] = field(default_factory=list)
    plan: dict[str, Any] | None = None  # set by a dry run


def _options(cfg: Config) -> dict[str, Any]:
    kg = cfg["kg"]
    lift = kg["lift"]
    if lift not in LIFT_MODES:
        raise ConfigError(f"kg.lift must be one of {', '.join(LIFT_MODES)}, got {lift!r}")
    if int(kg["shard_size"]) < 1:
        raise ConfigError(f"kg.shard_size must be at least 1, got {kg['shard_size']}")
    if int(kg["min_support"]) < 1:
        raise ConfigError(f"kg.min_support must be at least 1, got {kg['min_support']}")
    from causalkg.kg.polarity import FLAGS

    drop = list(kg.get("drop", []))
    bad = [f for f in drop if f not in FLAGS]
    if bad:
        raise ConfigError(f"kg.drop takes {', '.join(FLAGS)}; got {', '.join(map(repr, bad))}")
    return {
        "shard_size": int(kg["shard_size"]),
        "use_context": bool(kg["use_context"]),
        "allow_self_loops": bool(kg["allow_self_loops"]),
        "lift": lift,
        "min_support": int(kg["min_support"]),
        "assess": bool(kg.get("assess", True)),
        "drop": drop,
        "sense_check": bool(kg.get("sense_check", True)),
        "lift_self_loops": bool(kg.get("lift_self_loops", False)),
        "structured": list(kg.get("structured", [])),
        "structured_min_link": float(kg.get("structured_min_link", 0.8)),
        "min_confidence": float(kg.get("min_confidence", 0.0)),
        "wikidata_effect": bool(kg["wikidata_effect"]),
        "nt_chunk_triples": int(kg["nt_chunk_triples"]),
        "k": int(cfg["linking"]["top_k"]),
        "threshold": float(cfg["linking"]["threshold"]),
        "linking_model": cfg["linking"]["model"],
        # every [linking] setting: the query-time ones (instance_threshold, context_bonus, ...)
        # change which concept a phrase links to, so they must invalidate the linked shards
        "linking": dict(cfg["linking"]),
        "lang": (cfg["wikidata"]["languages"] or ["en"])[0],
        "url_base": cfg["wikipedia"]["url_base"],
    }


def _sha(path: Path | None) -> str | None:
    return file_sha256(path) if path is not None and path.is_file() else None


def _iter_shards(path: Path, size: int, *, lenient: bool, stats: ReadStats) -> Iterator[list[Extraction]]:
    it = read_jsonl(path, Extraction, lenient=lenient, stats=stats)
    while True:
        shard = list(islice(it, size))
        if not shard:
            return
        yield shard


def _outputs_current(out: Path, manifest: dict | None, fp: str) -> bool:
    if not manifest or manifest.get("fingerprint") != fp:
        return False
    try:
        generations.verify(out, what="KG files")
    except generations.MixedSetError:
        return False
    return True


@contextlib.contextmanager
def reading_kg(folder: str | Path) -> Iterator[tuple[Path, dict]]:
    """``(folder to read, manifest)`` of the KG in ``folder``: its current generation (held
    against pruning while the block runs), or the folder itself when it was written without
    generations. Every file the manifest lists is checked against its checksum first, so a
    reader never uses a mix of two builds. Raises SourceError when there is no assembled KG,
    ``generations.MixedSetError`` when the files do not belong together."""
    folder = Path(folder)
    with generations.reading(folder) as view:
        manifest = read_manifest(view)
        if manifest is None or manifest.get("stage") != "kg.assemble":
            raise SourceError(f"no assembled KG in {folder}", hint="run causalkg kg assemble")
        generations.verify(view, what="KG files")
        yield view, manifest


def assemble(
    cfg: Config,
    *,
    extractions: str | Path | None = None,
    linked: str | Path | None = None,
    corpus: str | Path | None = None,
    concepts: str | Path | None = None,
    out: str | Path | None = None,
    force: bool = False,
    lenient: bool = False,
    linker: Any = None,
    hook: Hook | None = None,
    dry_run: bool = False,
) -> AssembleResult:
    """Build the causal KG in ``out`` (default ``<paths.data>/kg``).

    Inputs: ``extractions`` (default ``extract.output``, ``data/kg/extractions.jsonl``), linked here with
    ``linker`` (default ``Linker.load(cfg)``), or ``linked``: a JSONL of ``KGMention`` records
    already linked elsewhere (then no linker is used). ``corpus`` gives titles, URLs and
    revisions for provenance (optional); ``concepts`` labels, kinds and the classes to lift to.
    ``force`` rebuilds even when the outputs are current; ``lenient`` skips bad input lines
    (counted in the manifest). ``hook(event, info)`` is called after each linked shard
    (``"shard"``) and each written output (``"output"``). ``dry_run`` checks the inputs and
    settings and returns the plan (``result.plan``) without linking or writing anything.

    Returns an AssembleResult. Raises SourceError when an input is missing (with the command
    that makes it), SchemaError on a bad line, ConfigError on bad settings.
    """
    t0 = time.perf_counter()
    opts = _options(cfg)
    paths = default_paths(cfg)
    out_dir = Path(out) if out is not None else kg_dir(cfg)
    concepts_path = Path(concepts) if concepts is not None else paths["concepts"]
    corpus_path = Path(corpus) if corpus is not None else paths["corpus"]
    if linked is not None:
        source = Path(linked)
        if not source.is_file():
            raise SourceError(f"linked mentions file not found: {source}")
    else:
        source = Path(extractions) if extractions is not None else paths["extractions"]
        if not source.is_file():
            raise SourceError(f"extractions file not found: {source}", hint="run causalkg kg extract first")
    if not concepts_path.is_file():
        raise SourceError(f"concepts file not found: {concepts_path}",
                          hint="run causalkg corpus build, or pass --concepts FILE")
    # A linker loaded from the persisted index (Linker.load, or None: loaded when needed) is
    # identified by the index's manifest; one built in memory by its model and threshold.
    persisted = linker is None or getattr(linker, "folder", None) is not None
    linking_manifest = paths["linking_manifest"] if linked is None and persisted else None
    in_memory = None if persisted or linked is not None else (
        getattr(linker, "model_id", None), getattr(linker, "threshold", None),
        getattr(linker, "model_fingerprint", None), getattr(linker, "search_settings", None))

    link_fp = fingerprint(
        FORMAT_VERSION, "linked" if linked is not None else "extractions", _sha(source),
        _sha(corpus_path), _sha(linking_manifest), in_memory,
        {k: opts[k] for k in ("shard_size", "use_context", "allow_self_loops", "k", "threshold", "linking_model",
                              "linking", "assess", "drop", "sense_check", "structured", "structured_min_link")},
    )
    full_fp = fingerprint(link_fp, OUTPUT_VERSION, _sha(concepts_path), opts)
    with generations.reading(out_dir) as view:
        manifest = read_manifest(view)
        current = _outputs_current(view, manifest, full_fp)
    if dry_run:
        done = Shards.count_done(out_dir / LINKED_DIR, link_fp, prefix="shard-")
        plan = {
            "out": str(out_dir),
            "source": {"path": str(source), "kind": "linked mentions" if linked is not None else "extractions"},
            "corpus": {"path": str(corpus_path), "exists": corpus_path.is_file()},
            "concepts": {"path": str(concepts_path), "exists": True},
            "linker": ("none (mentions already linked)" if linked is not None
                       else "given" if linker is not None else f"Linker.load: {paths['linking_manifest'].parent}"),
            "linking_index_exists": paths["linking_manifest"].is_file(),
            "options": opts,
            "up_to_date": current and not force,
            "shards_done": done,
        }
        return AssembleResult(out_dir, True, {}, {}, plan=plan)
    if not force and current:
        # debug, not info: the CLI prints the outcome itself (one line per fact).
        log.debug("the KG in %s is up to date (inputs and settings unchanged); use --force to rebuild", out_dir)
        return AssembleResult(out_dir, True, dict(manifest.get("counts", {})), dict(manifest.get("outputs", {})))
    with generations.writer_lock(out_dir, "kg assemble"):
        return _assemble_locked(cfg, opts, out_dir, source, linked, corpus_path, concepts_path, linking_manifest,
                                link_fp, full_fp, linker=linker, lenient=lenient, hook=hook, t0=t0)


def _assemble_locked(cfg: Config, opts: dict[str, Any], out_dir: Path, source: Path, linked: Any, corpus_path: Path,
                     concepts_path: Path, linking_manifest: Path | None, link_fp: str, full_fp: str, *,
                     linker: Any, lenient: bool, hook: Hook | None, t0: float) -> AssembleResult:
    concept_table = load_concepts(concepts_path, lenient=lenient)
    notes: list[str] = []
    stats = ReadStats()
    counts = LinkCounts()
    timings: dict[str, float] = {}
    models: dict[str, Any] = {}
    if linked is not None:
        mentions: Iterable[KGMention] = list(read_jsonl(source, KGMention, lenient=lenient, stats=stats))
        counts.extractions = counts.linked = stats.records
        notes.append(f"mentions read already linked from {source}; no linker was run")
    else:
        t1 = time.perf_counter()
        mentions, counts, linker_info = _link_all(cfg, opts, source, corpus_path, out_dir, link_fp,
                                                  linker=linker, lenient=lenient, stats=stats, hook=hook)
        models["linker"] = linker_info
        timings["link"] = time.perf_counter() - t1
        if not corpus_path.is_file():
            notes.append(f"no corpus at {corpus_path}: titles, URLs and revisions come only from the extractions")
    if stats.skipped:
        notes.append(f"{stats.skipped} bad input lines skipped (--lenient): " + "; ".join(stats.errors[:3]))

    t2 = time.perf_counter()
    agg = AggregateCounts()
    edges = aggregate(mentions, concept_table, lift=opts["lift"], min_support=opts["min_support"], counts=agg,
                      lift_self_loops=opts["lift_self_loops"])
    edges = apply_confidence(edges, opts["min_confidence"], agg)
    timings["aggregate"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    gen = generations.begin(out_dir)
    outputs, checksums, rdf_counts = write_outputs(edges, concept_table, gen.path, opts,
                                                   verify=bool(cfg["kg"]["verify_rdf"]), hook=hook)
    timings["write"] = time.perf_counter() - t3
    timings["total"] = time.perf_counter() - t0

    levels = Counter(e.level for e in edges)
    nodes = {e.cause.id[0] for e in edges} | {e.effect.id[0] for e in edges}
    all_counts: dict[str, Any] = {
        "input_lines": stats.lines,
        "input_records": stats.records,
        "input_skipped": stats.skipped,
        **{f"link_{k}": v for k, v in counts.__dict__.items()},
        **{f"aggregate_{k}": v for k, v in agg.__dict__.items()},
        "edges": len(edges),
        "edges_class": levels.get("class", 0),
        "edges_instance": levels.get("instance", 0),
        "edges_mixed": levels.get("mixed", 0),
        "nodes": len(nodes),
        "mentions": sum(len(e.mentions) for e in edges),
        "documents": len({m.doc_id for e in edges for m in e.mentions}),
        "nested_lines": rdf_counts["nested_lines"],
        "nested_unlisted_edges": rdf_counts["nested_unlisted_edges"],
        "triples": rdf_counts["triples"],
    }
    if rdf_counts["nested_unlisted_edges"]:
        notes.append(f"{rdf_counts['nested_unlisted_edges']} instance/mixed edges have no class to lift to "
                     f"(kg.lift = {opts['lift']}): they are in {PAIRS_FILE} and the RDF, not in {NESTED_FILE}")
    inputs = {"concepts": concepts_path, "source": source}
    if corpus_path.is_file() and linked is None:
        inputs["corpus"] = corpus_path
    if linking_manifest is not None and linking_manifest.is_file():
        inputs["linking_manifest"] = linking_manifest
    man = build_manifest("kg.assemble", cfg, inputs=inputs, outputs=outputs, counts=all_counts,
                         timings=timings, models=models, notes=notes,
                         extra={"fingerprint": full_fp, "generation": gen.id, "checksums": checksums,
                                "options": opts, "graph": cfg["kg"]["graph"]})
    write_manifest(gen.path, man)
    faults.point("assemble.before-publish")
    generations.publish(gen, OUTPUT_NAMES, keep=int(cfg["kg"].get("keep_generations", 2)))
    return AssembleResult(out_dir, False, all_counts, outputs, notes, edges[: int(cfg["kg"]["top"])])


def _link_all(
    cfg: Config, opts: dict[str, Any], source: Path, corpus_path: Path, out_dir: Path, link_fp: str, *,
    linker: Any, lenient: bool, stats: ReadStats, hook: Hook | None,
) -> tuple[list[KGMention], LinkCounts, dict[str, Any]]:
    """Link the extractions shard by shard, reusing shards finished by an earlier run with the
    same fingerprint (``linked/``, a ``causalkg.shards`` folder: ``shard-NNNNN.jsonl`` of linked
    mentions and its ``.done.json``). Returns all mentions, the counts, linker info."""
    shards = Shards(out_dir / LINKED_DIR, link_fp)

    docs: dict[str, DocInfo] | None = None
    sense = None
    counts = LinkCounts()
    mentions: list[KGMention] = []
    info: dict[str, Any] = {}
    total = None
    bar = progress(desc="linking shards", unit="shard", total=total, mode=cfg["run"]["progress"])
    try:
        for i, shard in enumerate(_iter_shards(source, opts["shard_size"], lenient=lenient, stats=stats)):
            key = f"shard-{i:05d}"
            path = shards.path(key)
            done = shards.done(key, {"size": len(shard)})
            if done is not None and path.is_file():
                counts.add(done["counts"])
                mentions += [KGMention.model_validate(m) for _, m in iter_json_lines(path)]
                info = done.get("linker", info)
                bar.update(1)
                continue
            if linker is None:
                from causalkg.linking.linker import Linker

                linker = Linker.load(cfg)
            if docs is None:
                docs = load_documents(corpus_path, _doc_ids(source, lenient))
            if sense is None and opts["sense_check"]:
                from causalkg.linking.sense import SenseCheck

                sense = SenseCheck.from_config(cfg, linker)
            found, c = link_shard(shard, linker, docs, k=opts["k"], use_context=opts["use_context"],
                                  allow_self_loops=opts["allow_self_loops"],
                                  drop=opts["drop"] if opts["assess"] else None, sense=sense)
            info = {"model": getattr(linker, "model_id", None), "threshold": getattr(linker, "threshold", None),
                    "model_fingerprint": getattr(linker, "model_fingerprint", None)}
            with atomic_write(path, allow_empty=True) as fh:  # a shard may link nothing
                fh.writelines(to_json_line(m) + "\n" for m in found)
            shards.finish(key, {"shard": i, "size": len(shard), "counts": c.__dict__, "linker": info})
            counts.add(c)
            mentions += found
            bar.update(1)
            faults.point("assemble.shard-linked")
            if hook is not None:
                hook("shard", {"index": i, "path": str(path), "mentions": len(found)})
    finally:
        bar.close()
    if opts["structured"] and corpus_path.is_file():
        path = shards.path("structured")
        done = shards.done("structured")
        if done is not None and path.is_file():
            found = [KGMention.model_validate(m) for _, m in iter_json_lines(path)]
            c = LinkCounts(**done["counts"])
        else:
            if linker is None:
                from causalkg.linking.linker import Linker

                linker = Linker.load(cfg)
            if sense is None and opts["sense_check"]:
                from causalkg.linking.sense import SenseCheck

                sense = SenseCheck.from_config(cfg, linker)
            records = (rec for _, rec in iter_json_lines(corpus_path, lenient=lenient) if isinstance(rec, dict))
            found, c = link_structured(records, linker, docs or {}, sources=opts["structured"], k=opts["k"],
                                       sense=sense, allow_self_loops=opts["allow_self_loops"],
                                       min_link=opts["structured_min_link"])
            with atomic_write(path, allow_empty=True) as fh:  # the pages may hold no structured pair
                fh.writelines(to_json_line(m) + "\n" for m in found)
            shards.finish("structured", {"shard": "structured", "counts": c.__dict__})
        counts.structured_pairs += c.extractions
        counts.structured_linked += c.linked
        mentions += found
    return mentions, counts, info


def _doc_ids(source: Path, lenient: bool) -> set[str]:
    ids: set[str] = set()
    for _, rec in iter_json_lines(source, lenient=lenient):
        if isinstance(rec, dict) and "doc_id" in rec:
            ids.add(str(rec["doc_id"]))
    return ids


def write_outputs(
    edges: Sequence[KGEdge],
    concepts: Mapping[str, Concept],
    out_dir: Path,
    opts: Mapping[str, Any],
    *,
    verify: bool = True,
    hook: Hook | None = None,
) -> tuple[dict[str, Any], dict[str, str], dict[str, int]]:
    """Write every KG file into ``out_dir`` atomically. Returns (outputs description,
    checksums by relative path, counts)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    # Temporary files a killed run left behind (atomic_write names them ".<target>.*.tmp").
    for stale in [*out_dir.glob(".causal_kg*.tmp"), *(out_dir / NT_DIR).glob(".causal_kg*.tmp")]:
        stale.unlink(missing_ok=True)
    written: list[Path] = []

    def done(name: str, path: Path) -> None:
        written.append(path)
        faults.point("assemble.output-written")
        if hook is not None:
            hook("output", {"name": name, "path": str(path)})

    pairs = out_dir / PAIRS_FILE
    with atomic_write(pairs) as fh:
        for e in edges:
            fh.write(to_json_line(e) + "\n")
    done("pairs", pairs)

    nested = nested_lines(edges, concepts)
    nested_path = out_dir / NESTED_FILE
    with atomic_write(nested_path) as fh:
        for line in nested:
            fh.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    done("nested", nested_path)

    options = rdf.RdfOptions(lang=opts["lang"], revision_base=rdf.revision_base_for(opts["url_base"]),
                             wikidata_effect=opts["wikidata_effect"])
    files = rdf.write_rdf(rdf.kg_blocks(edges, concepts, options), turtle=out_dir / TURTLE_FILE,
                          nt_dir=out_dir / NT_DIR, chunk_triples=opts["nt_chunk_triples"])
    if verify:
        rdf.verify_rdf(files)
    done("turtle", out_dir / TURTLE_FILE)
    for p in files.ntriples:
        written.append(p)
    if hook is not None:
        hook("output", {"name": "ntriples", "paths": [str(p) for p in files.ntriples]})

    graphml = out_dir / GRAPHML_FILE
    write_graphml(edges, graphml)
    done("graphml", graphml)

    checksums = {str(p.relative_to(out_dir)): file_sha256(p) for p in written}
    outputs = {
        "pairs": PAIRS_FILE,
        "nested": NESTED_FILE,
        "turtle": TURTLE_FILE,
        "ntriples": [str(p.relative_to(out_dir)) for p in files.ntriples],
        "graphml": GRAPHML_FILE,
    }
    return outputs, checksums, {"triples": files.triples, "nested_lines": len(nested),
                                "nested_unlisted_edges": len(unlisted_edges(edges))}


def read_edges(path: str | Path, *, lenient: bool = False) -> Iterator[KGEdge]:
    """Stream the edges of a ``causal_kg_pairs.jsonl``. Raises SourceError when it is missing."""
    p = Path(path)
    if not p.is_file():
        raise SourceError(f"no KG at {p}", hint="run causalkg kg assemble")
    return read_jsonl(p, KGEdge, lenient=lenient)
