"""Linking the extracted pairs: cause and effect phrases -> concepts -> ``KGMention`` records.

The first half of KG assembly (``kg/assemble.py`` runs it shard by shard and checkpoints each
shard): every cause and effect phrase of a shard goes to ``linking.linker.Linker`` in one call,
and a pair whose two ends both link above the threshold becomes a mention with its provenance.

- ``link_shard``: one shard of extractions -> mentions (assess, link, sense check, page events);
- ``assess_extractions``: read each prose pair in its sentence (``kg.polarity``) and leave out the
  pairs it does not assert (``kg.drop``);
- ``verify_extractions``: the learned pair verifier's verdict on each prose pair (``kg.verifier``,
  when ``kg.verifier.enabled``): pairs it reads as not causal are left out, reversed ones flipped
  (or dropped), and the verdict rides on the mention (``KGMention.verifier``);
- ``page_event_links``: "the attacks" on the page "September 11 attacks" -> the page's event;
- ``link_pairs``: extractions and their ends' candidates -> mentions (the best candidate of each
  end; self-loops dropped unless allowed);
- ``link_structured``: the infobox and list pairs of the corpus pages (``kg.extractors.structured``);
- ``LinkCounts``: what linking did, summed over the shards into the manifest's ``link_*`` counts.

A change that gives other mentions for the same inputs needs ``kg.assemble.FORMAT_VERSION``
bumped (the checkpoints of an earlier run are then relinked).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterable, Mapping, Sequence

from causalkg.core.contracts import Assertion, Candidate, Extraction, KGMention, LinkedSpan, is_qid
from causalkg.core.errors import ConfigError
from causalkg.kg import rdf
from causalkg.kg.inputs import DocInfo


def _doc_concept(x: Extraction, doc: DocInfo | None) -> str | None:
    extra = getattr(x, "document_concept", None)
    if isinstance(extra, dict):
        extra = extra.get("id")
    if is_qid(extra):
        return extra
    return doc.concept if doc else None


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
    unstated: int = 0
    temporal: int = 0
    # the learned pair verifier (kg/verifier.py, when enabled): pairs read, and what it decided
    verifier_pairs: int = 0
    verifier_not_causal_dropped: int = 0
    verifier_reversed_flipped: int = 0
    verifier_reversed_dropped: int = 0
    verifier_reversed_kept: int = 0
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
    verdicts: Sequence[dict[str, Any] | None] | None = None,
) -> tuple[list[KGMention], LinkCounts]:
    """Turn extractions and their ends' candidates (best first, all above the threshold) into
    mentions. A pair is kept when both ends have a candidate; a pair whose two ends link to the
    same concept is dropped unless ``allow_self_loops``. ``assertions`` and ``verdicts`` (one per
    extraction, or None) are stored on the mentions."""
    if not (len(extractions) == len(cause_candidates) == len(effect_candidates)):
        raise ConfigError("link_pairs: one candidate list per extraction end is needed")
    counts = counts if counts is not None else LinkCounts()
    counts.extractions += len(extractions)
    out: list[KGMention] = []
    assertions = list(assertions) if assertions is not None else [None] * len(extractions)
    verdicts = list(verdicts) if verdicts is not None else [None] * len(extractions)
    for x, cc, ec, asr, vd in zip(extractions, cause_candidates, effect_candidates, assertions, verdicts):
        if not cc or not ec:
            _count_unlinked(cc, ec, counts)
            continue
        c, e = cc[0], ec[0]
        if c.qid == e.qid:
            if not allow_self_loops:
                counts.self_loops_dropped += 1
                continue
            counts.self_loops_kept += 1
        m = _mention(x, cc, ec, asr, docs.get(x.doc_id))
        if vd is not None:
            m.verifier = vd  # an extra field: mentions made with the verifier off are unchanged
        out.append(m)
        counts.linked += 1
    return out, counts


def _count_unlinked(cc: Sequence[Candidate], ec: Sequence[Candidate], counts: LinkCounts) -> None:
    if not cc and not ec:
        counts.both_unlinked += 1
    elif not cc:
        counts.cause_unlinked += 1
    else:
        counts.effect_unlinked += 1


def _mention(x: Extraction, cc: Sequence[Candidate], ec: Sequence[Candidate], asr: Assertion | None,
             doc: DocInfo | None) -> KGMention:
    """The mention of a pair linked at both ends (to the best candidate of each), with its
    provenance: the extraction's own title, URL and revision first, else the corpus document's."""
    extra = x.model_extra or {}
    rev = extra.get("revision_id", doc.revision_id if doc else None)
    return KGMention(
        mention_id=rdf.mention_id_for(x.doc_id, x.sentence.start, (x.cause.start, x.cause.end),
                                      (x.effect.start, x.effect.end), x.extractor),
        doc_id=x.doc_id,
        title=extra.get("title") or (doc.title if doc else None),
        url=extra.get("url") or (doc.url if doc else None),
        revision_id=int(rev) if rev is not None else None,
        document_concept=_doc_concept(x, doc),
        sentence=x.sentence,
        cause=_linked(x.cause, cc[0]),
        effect=_linked(x.effect, ec[0]),
        direction=x.direction,
        score=x.score,
        extractor=x.extractor,
        model=x.model,
        question=x.question,
        cause_candidates=list(cc),
        effect_candidates=list(ec),
        source=_source_of(x),
        assertion=asr,
    )


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


def verify_extractions(
    extractions: Sequence[Extraction], assertions: Sequence[Assertion | None] | None, verifier: Any,
    counts: LinkCounts, *, candidates: tuple[list, list] | None = None,
) -> tuple[list[Extraction], list[Assertion | None] | None, list[dict[str, Any] | None]]:
    """The verifier's verdict on each prose pair (``kg.verifier.PairVerifier.judge``), in one
    call: a pair read as ``not_causal`` is left out; one read as ``reversed`` has its cause and
    effect swapped (``verifier.reversed`` = flip; the verdict then says ``flipped``), is left out
    (drop) or kept as extracted (keep). Structured-source pairs are not read (verdict None).
    Returns the kept extractions, their assertions (None stays None) and verdicts.

    ``candidates`` (the link candidates of each pair's cause and of its effect, as
    :func:`link_pairs` takes them): only pairs linked at both ends are read, the others are kept
    unread (``link_pairs`` makes no mention of them), and the two lists are narrowed (and swapped
    for a flipped pair) in place to match what is returned. The mentions are the same as when
    every pair is read; the verifier reads only the pairs that can become one."""
    idx = [i for i, x in enumerate(extractions) if _source_of(x) == "sentence"
           and (candidates is None or (candidates[0][i] and candidates[1][i]))]
    found = verifier.judge([extractions[i].sentence.text for i in idx],
                           [(extractions[i].cause.start - extractions[i].sentence.start,
                             extractions[i].cause.end - extractions[i].sentence.start) for i in idx],
                           [(extractions[i].effect.start - extractions[i].sentence.start,
                             extractions[i].effect.end - extractions[i].sentence.start) for i in idx])
    counts.verifier_pairs += len(idx)
    verdict_of = dict(zip(idx, found))
    kept: list[Extraction] = []
    kept_asr: list[Assertion | None] = []
    kept_vd: list[dict[str, Any] | None] = []
    kept_cands: tuple[list, list] = ([], [])
    for i, x in enumerate(extractions):
        vd = verdict_of.get(i)
        flipped = False
        if vd is not None and vd["verdict"] == "not_causal":
            counts.verifier_not_causal_dropped += 1
            continue
        if vd is not None and vd["verdict"] == "reversed":
            if verifier.reversed == "drop":
                counts.verifier_reversed_dropped += 1
                continue
            if verifier.reversed == "flip":
                x = x.model_copy(update={"cause": x.effect, "effect": x.cause})
                vd = {**vd, "flipped": True}
                flipped = True
                counts.verifier_reversed_flipped += 1
            else:
                counts.verifier_reversed_kept += 1
        kept.append(x)
        kept_asr.append(assertions[i] if assertions is not None else None)
        kept_vd.append(vd)
        if candidates is not None:
            cause_c, effect_c = candidates[0][i], candidates[1][i]
            kept_cands[0].append(effect_c if flipped else cause_c)
            kept_cands[1].append(cause_c if flipped else effect_c)
    if candidates is not None:
        candidates[0][:], candidates[1][:] = kept_cands
    return kept, (kept_asr if assertions is not None else None), kept_vd


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
    verifier: Any = None,
) -> tuple[list[KGMention], LinkCounts]:
    """Link the cause and effect phrases of one shard in a single linker call, then build the
    mentions (see :func:`link_pairs`). With ``drop`` (a list of ``kg.polarity`` flags, may be
    empty) every prose pair is assessed first and those the sentence does not assert are left
    out; with ``sense`` (a ``linking.sense.SenseCheck``) candidates that do not mean what the
    phrase means are removed before the best one is taken; with ``verifier`` (a
    ``kg.verifier.PairVerifier``) the prose pairs linked at both ends are read by it
    (:func:`verify_extractions`) and its verdicts stored on the mentions."""
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
        from causalkg.linking.sense import written_group

        sentences = [x.sentence.text for x in extractions] * 2
        # span offsets are the document's; the sentence's own start puts them in its text
        written = ([written_group(x.sentence.text, x.cause.start - x.sentence.start, x.cause.end - x.sentence.start,
                                  text=x.cause.text)
                    for x in extractions]
                   + [written_group(x.sentence.text, x.effect.start - x.sentence.start, x.effect.end - x.sentence.start,
                                    text=x.effect.text)
                      for x in extractions])
        checked = sense.filter(phrases, results, sentences, written)
        counts.senses_rejected += sum(len(a) - len(b) for a, b in zip(results, checked))
        results = page_event_links(phrases, checked, [x.doc_id for x in extractions] * 2, docs, linker, sense, counts)
    n = len(extractions)
    cause_results, effect_results = list(results[:n]), list(results[n:])
    verdicts = None
    if verifier is not None:
        # read after linking, and only the pairs linked at both ends: the same mentions as
        # reading every pair first, for a fraction of the verifier's work
        extractions, assertions, verdicts = verify_extractions(extractions, assertions, verifier, counts,
                                                               candidates=(cause_results, effect_results))
        counts.extractions += n - len(extractions)
    return link_pairs(extractions, cause_results, effect_results, docs, allow_self_loops=allow_self_loops,
                      assertions=assertions, counts=counts, verdicts=verdicts)


def page_event_links(
    phrases: Sequence[str], results: list[list[Candidate]], doc_ids: Sequence[str], docs: Mapping[str, DocInfo],
    linker: Any, sense: Any, counts: LinkCounts,
) -> list[list[Candidate]]:
    """A phrase that names the page's own event by its head noun alone ("the attacks" on the
    page "September 11 attacks", "the war" on "Spanish–American War") links to the page event
    (``_page_events``), not to whatever the bare word is most similar to (see ``_names_page_event``)."""
    wanted = [i for i, (ph, d) in enumerate(zip(phrases, doc_ids)) if _names_page_event(ph, docs.get(d))]
    out = list(results)
    if not wanted:
        return out
    event = _page_events(sorted({(docs[doc_ids[i]].title, docs[doc_ids[i]].categories) for i in wanted}), linker, sense)
    for i in wanted:
        doc = docs[doc_ids[i]]
        ev = event.get((doc.title, doc.categories))
        if ev is not None:
            out[i] = [ev.model_copy(update={"page_event": True})] + [c for c in results[i] if c.qid != ev.qid]
            counts.page_event_links += 1
    return out


def _names_page_event(phrase: str, doc: DocInfo | None) -> bool:
    """Whether ``phrase`` is the head noun of the page's title with no modifier (two words at
    most): "the attacks" on "September 11 attacks". A head written with a capital ("War" of
    "The ensuing Philippine-American War", cut short by the extractor) is part of another name,
    not the page's event."""
    from causalkg.linking.sense import parse, stem

    if doc is None or not doc.title:
        return False
    written = phrase.split()
    if written and written[-1][:1].isupper():
        return False
    p = parse(phrase)
    words = doc.title.replace("\u2013", " ").split()
    return not (p.head is None or p.modifiers or p.n_words > 2 or not words or stem(words[-1].lower()) != p.head)


def _page_events(keys: Sequence[tuple[str | None, tuple[str, ...]]], linker: Any,
                 sense: Any) -> dict[tuple, Candidate]:
    """The event of every page (title, categories) in ``keys``, in one linker call: its title
    linked (any answer that passes the sense check), else the first category head with an exact
    class match (``structured.event_phrases``); a page with none is left out."""
    from causalkg.kg.extractors.structured import event_phrases

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
    return event


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
    pages: int | None = None,
) -> tuple[list[KGMention], LinkCounts]:
    """Pairs of the structured sources (``kg.extractors.structured``: infobox fields, list
    items under Causes/Aftermath-style headings) of corpus ``records``, linked.

    The page's event end is linked from ``event_phrases``: the title with every linker answer
    (then the sense check), else the first category head with an *exact* class match. The
    item end needs an exact match or a nearest neighbour at or above ``min_link``, and passes
    the sense check like a sentence's phrase.

    The records are read ``pages`` at a time (default ``STRUCTURED_PAGES``), each group linked
    whole: only the linked mentions are kept across groups, not every pair with its candidates
    (the 68,391 corpus's 113,202 pairs took about 1 GB more at once). A pair's mention does not depend on
    the others, so the result is the same for any ``pages``."""
    pages = STRUCTURED_PAGES if pages is None else pages
    if pages < 1:
        raise ConfigError(f"link_structured: pages must be at least 1, got {pages}")
    counts, out = LinkCounts(), []
    it = iter(records)
    while group := list(islice(it, pages)):
        out += _link_structured_group(group, linker, docs, sources=sources, k=k, sense=sense,
                                      allow_self_loops=allow_self_loops, min_link=min_link, counts=counts)
    return out, counts


# corpus records per group of link_structured: a group's pairs (about 1.7 per event page),
# their candidates and the linker's working memory are held together
STRUCTURED_PAGES = 2_000


def _link_structured_group(records: Sequence[Mapping[str, Any]], linker: Any, docs: Mapping[str, DocInfo], *,
                           sources: Sequence[str], k: int, sense: Any, allow_self_loops: bool, min_link: float,
                           counts: LinkCounts) -> list[KGMention]:
    """The linked mentions of one group of records' structured pairs (``link_structured``),
    counted into ``counts``."""
    xs, event_of = _structured_extractions(records, sources)
    if not xs:
        return []
    # the page events, in one linker call (a call per page embedded its title alone)
    events = _page_events(sorted(set(event_of.values())), linker, sense)
    event = {d: events[key] for d, key in event_of.items() if key in events}
    # the items
    item_ends = [x.effect if (x.model_extra or {}).get("event_end") == "cause" else x.cause for x in xs]
    results = _link_items(item_ends, linker, sense, k=k, min_link=min_link, counts=counts)
    cause_c, effect_c = [], []
    for x, end, cands in zip(xs, item_ends, results):
        ev = [event[x.doc_id]] if x.doc_id in event else []
        if end is x.effect:
            cause_c.append(ev)
            effect_c.append(cands)
        else:
            cause_c.append(cands)
            effect_c.append(ev)
    return link_pairs(xs, cause_c, effect_c, docs, allow_self_loops=allow_self_loops, counts=counts)[0]


def _structured_extractions(
    records: Iterable[Mapping[str, Any]], sources: Sequence[str],
) -> tuple[list[Extraction], dict[str, tuple[str, tuple[str, ...]]]]:
    """The structured pairs of ``sources`` in the corpus records, as extractions, and the
    (title, categories) of every page that has one, by document id."""
    from causalkg.core.contracts import SCHEMA_VERSION
    from causalkg.kg.extractors.structured import structured_pairs

    xs: list[Extraction] = []
    event_of: dict[str, tuple[str, tuple[str, ...]]] = {}
    for rec in records:
        pairs = [p for p in structured_pairs(rec) if p["source"] in sources]
        if not pairs:
            continue
        event_of[str(rec.get("id"))] = (str(rec.get("title") or ""), tuple(rec.get("categories") or ()))
        xs += [Extraction.model_validate({"schema_version": SCHEMA_VERSION, **p}) for p in pairs]
    return xs, event_of


def _link_items(item_ends: Sequence[Any], linker: Any, sense: Any, *, k: int, min_link: float,
                counts: LinkCounts) -> list[list[Candidate]]:
    """The candidates of the item ends of structured pairs, in one linker call: an exact match
    or one at or above ``min_link``, that passes the sense check."""
    # an item is linked by its first noun group ("Inadvertent explosion of core during
    # emergency shutdown ..." -> "inadvertent explosion"): infobox values are descriptions
    from causalkg.linking.sense import core

    phrases = [core(sp.text) for sp in item_ends]
    results = linker.link(phrases, k=k)
    if sense is not None:
        checked = sense.filter(phrases, results, [None] * len(phrases))
        counts.senses_rejected += sum(len(a) - len(b) for a, b in zip(results, checked))
        results = checked
    return [[c for c in cands if c.match == "exact" or c.score >= min_link] for cands in results]
