"""Wikidata event classes and concepts: the queries' results turned into records.

- ``WikidataSettings.from_config`` validates the ``[wikidata]`` section (every QID and PID,
  languages, site IRIs, sizes) before any query is built.
- ``discover_event_classes``: classes of items with an English Wikinews article that are
  subclasses of occurrence (how the WikiCausal corpus found its event classes), with counts.
- ``instances_of_seeds``: every instance (P31/P279*) of each seed class, paged by key
  (``corpus.paging``; ``wikidata.paging = "offset"`` for LIMIT/OFFSET).
- ``fetch_terms``: labels, aliases, descriptions, P31/P279 classes and enwiki titles, in VALUES
  batches.
- ``seed_superclasses`` and ``sitelinked_counts``: which seed classes a class falls under, and
  how many direct instances of a class have a Wikinews / Wikipedia article.
- ``event_class_records`` and ``concept_records`` (yielded): the lines of ``event_classes.jsonl`` and
  ``concepts.jsonl`` (``EventClass`` and ``Concept`` of ``causalkg.core.contracts``).

Everything takes an ``Engine`` (the live client or the snapshot engine) and runs the same
queries on either. Flow: ``corpus.build`` calls these, then ``corpus.basekg``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from causalkg.core.config import Config
from causalkg.core.contracts import Concept, EventClass
from causalkg.core.errors import ConfigError
from causalkg.corpus import queries as Q
from causalkg.corpus.paging import select_keyset
from causalkg.corpus.sparql import Engine, select_all, term_lang

COUNT_MODES = ("auto", "always", "never")
PAGING_MODES = ("keyset", "offset")


@dataclass(frozen=True)
class WikidataSettings:
    """The validated ``[wikidata]`` settings the queries are built from."""

    seeds: tuple[str, ...]
    root_class: str
    languages: tuple[str, ...]
    wikipedia_site: str
    wikinews_site: str
    page_size: int
    values_batch: int
    subject_properties: tuple[str, ...]
    object_properties: tuple[str, ...]
    max_examples: int
    counts: str
    paging: str = "keyset"

    @classmethod
    def from_config(cls, cfg: Config) -> "WikidataSettings":
        """Validate ``cfg["wikidata"]``; raises ConfigError naming the bad key and value."""
        w = cfg["wikidata"]
        seeds = w.get("seed_classes") or []
        if not isinstance(seeds, list) or not seeds:
            raise ConfigError("wikidata.seed_classes is empty", hint="list at least one event class QID")
        checked = [Q.check_qid(s, f"wikidata.seed_classes[{i}]") for i, s in enumerate(seeds)]
        dupes = sorted({s for s in checked if checked.count(s) > 1})
        if dupes:
            raise ConfigError(f"wikidata.seed_classes lists {', '.join(dupes)} more than once")
        langs = w.get("languages") or []
        if not langs:
            raise ConfigError("wikidata.languages is empty", hint='e.g. languages = ["en"]')
        subj = tuple(Q.check_pid(p, f"wikidata.cause_subject_properties[{i}]")
                     for i, p in enumerate(w.get("cause_subject_properties", list(Q.CAUSE_IS_SUBJECT))))
        obj = tuple(Q.check_pid(p, f"wikidata.cause_object_properties[{i}]")
                    for i, p in enumerate(w.get("cause_object_properties", list(Q.CAUSE_IS_OBJECT))))
        if not subj and not obj:
            raise ConfigError("no causal properties configured",
                              hint="set wikidata.cause_subject_properties or wikidata.cause_object_properties")
        for key in ("page_size", "values_batch"):
            if int(w[key]) < 1:
                raise ConfigError(f"wikidata.{key} must be at least 1, got {w[key]!r}")
        counts = str(w.get("counts", "auto"))
        if counts not in COUNT_MODES:
            raise ConfigError(f"wikidata.counts must be one of {', '.join(COUNT_MODES)}, got {counts!r}")
        paging = str(w.get("paging", "keyset"))
        if paging not in PAGING_MODES:
            raise ConfigError(f"wikidata.paging must be one of {', '.join(PAGING_MODES)}, got {paging!r}")
        max_examples = int(w.get("max_examples", 0))
        if max_examples < 0:
            raise ConfigError(f"wikidata.max_examples must be 0 (all) or more, got {max_examples}")
        return cls(
            seeds=tuple(checked),
            root_class=Q.check_qid(w["root_class"], "wikidata.root_class"),
            languages=tuple(Q.check_language(x, f"wikidata.languages[{i}]") for i, x in enumerate(langs)),
            wikipedia_site=Q.check_site(w.get("wikipedia_site", "https://en.wikipedia.org/"), "wikidata.wikipedia_site"),
            wikinews_site=Q.check_site(w.get("wikinews_site", "https://en.wikinews.org/"), "wikidata.wikinews_site"),
            page_size=int(w["page_size"]),
            values_batch=int(w["values_batch"]),
            subject_properties=subj,
            object_properties=obj,
            max_examples=max_examples,
            counts=counts,
            paging=paging,
        )


@dataclass(slots=True)
class Terms:
    """What Wikidata says about one item, in the configured languages (slots: the Wikidata
    stage holds one per concept, 181,006 at 68,391 documents)."""

    label: str | None = None
    aliases: list[str] = field(default_factory=list)
    description: str | None = None
    instance_of: list[str] = field(default_factory=list)  # P31
    subclass_of: list[str] = field(default_factory=list)  # P279
    enwiki_title: str | None = None

    def labels(self) -> list[str]:
        """The label first, then the aliases: the WikiCausal ``labels`` list."""
        out: list[str] = []
        for text in ([self.label] if self.label else []) + self.aliases:
            if text not in out:
                out.append(text)
        return out


def select_paged(engine: Engine, build, page_size: int, *, var: str, unique: bool = False,
                 paging: str = "keyset") -> list[dict[str, Any]]:
    """All rows of ``build(limit, offset, key)``: paged by key on ``var`` (``corpus.paging``) or,
    with ``paging="offset"``, by LIMIT/OFFSET. Both give the same rows in the same order."""
    if paging == "offset":
        return select_all(engine, lambda limit, offset: build(limit, offset, None), page_size)
    return select_keyset(engine, build, var, page_size, unique=unique)


def select_batched(engine: Engine, qids: Iterable[str], size: int, page_size: int, build, *,
                   var: str = "item", unique: bool = False, paging: str = "keyset") -> Iterator[dict[str, Any]]:
    """The rows of ``build(batch, limit, offset, label, key)`` over VALUES batches of ``qids``,
    each paged (by key on ``var`` unless ``paging="offset"``), yielded one batch's rows at a
    time: the caller folds them as they come, so no list of every row of every batch is held
    (at 68,391 items the terms query alone returns about a million rows)."""
    chunks = Q.batches(qids, size)
    for i, chunk in enumerate(chunks, 1):
        label = f"batch {i}/{len(chunks)}" if len(chunks) > 1 else ""
        yield from select_paged(engine, lambda limit, offset, key, c=chunk, lb=label: build(c, limit, offset, lb, key),
                                page_size, var=var, unique=unique, paging=paging)


def row_qid(row: Mapping[str, Any], var: str) -> str | None:
    term = row.get(var)
    if isinstance(term, dict) and term.get("type") == "uri":
        return Q.qid_of(term["value"])
    return None


def discover_event_classes(engine: Engine, s: WikidataSettings) -> dict[str, int]:
    """Event classes found through English Wikinews: class QID -> number of its direct
    instances that have a Wikinews article. Empty when the source has no Wikinews sitelinks."""
    rows = select_paged(engine, lambda limit, offset, key: Q.discover_event_classes(
        s.root_class, s.wikinews_site, limit, offset, key=key), s.page_size, var="class", unique=True, paging=s.paging)
    found: dict[str, int] = {}
    for row in rows:
        qid = row_qid(row, "class")
        if qid:
            found[qid] = int(row["instances"]["value"])
    return found


def instances_of_seeds(engine: Engine, s: WikidataSettings) -> dict[str, list[str]]:
    """Seed class -> its instances (P31/P279*), sorted by QID number."""
    out: dict[str, list[str]] = {}
    for seed in s.seeds:
        rows = select_paged(engine, lambda limit, offset, key, c=seed: Q.instances_of(c, limit, offset, key=key),
                            s.page_size, var="item", unique=True, paging=s.paging)
        out[seed] = sorted({q for q in (row_qid(r, "item") for r in rows) if q}, key=Q.qid_key)
    return out


def fetch_terms(engine: Engine, qids: Iterable[str], s: WikidataSettings) -> dict[str, Terms]:
    """Labels, aliases, description, P31, P279 and enwiki title of each QID (in VALUES batches).
    Every QID asked for gets a Terms, empty when the source knows nothing of it."""
    wanted = sorted(set(qids), key=Q.qid_key)
    terms = {q: Terms() for q in wanted}
    if not wanted:
        return terms
    rank = {lang: i for i, lang in enumerate(s.languages)}
    best_label: dict[str, int] = {}
    best_desc: dict[str, int] = {}
    aliases: dict[str, list[tuple[int, str]]] = {}
    rows = select_batched(engine, wanted, s.values_batch, s.page_size,
                          lambda c, limit, offset, lb, key: Q.entity_terms(c, s.languages, s.wikipedia_site, limit, offset,
                                                                           batch=lb, key=key),
                          var="item", paging=s.paging)
    for row in rows:
        item = row_qid(row, "item")
        if item is None or item not in terms:
            continue
        t = terms[item]
        fieldname = row["field"]["value"]
        value = row["value"]["value"]
        r = rank.get(term_lang(row, "value") or "", len(rank))
        if fieldname == "label":
            if r < best_label.get(item, len(rank) + 1):
                best_label[item] = r
                t.label = value
        elif fieldname == "description":
            if r < best_desc.get(item, len(rank) + 1):
                best_desc[item] = r
                t.description = value
        elif fieldname == "alias":
            aliases.setdefault(item, []).append((r, value))
        elif fieldname in ("P31", "P279"):
            cls = row_qid(row, "value")
            target = t.instance_of if fieldname == "P31" else t.subclass_of
            if cls and cls not in target:
                target.append(cls)
        elif fieldname == "sitelink":
            t.enwiki_title = value
    for item, found in aliases.items():
        seen: list[str] = []
        for _, text in sorted(found):
            if text not in seen and text != terms[item].label:
                seen.append(text)
        terms[item].aliases = seen
    for t in terms.values():
        t.instance_of.sort(key=Q.qid_key)
        t.subclass_of.sort(key=Q.qid_key)
    return terms


def seed_superclasses(engine: Engine, classes: Iterable[str], s: WikidataSettings) -> dict[str, set[str]]:
    """Class -> the seed classes it is a proper subclass (P279+) of."""
    out: dict[str, set[str]] = {}
    rows = select_batched(engine, classes, s.values_batch, s.page_size,
                          lambda c, limit, offset, lb, key: Q.seed_superclasses(c, list(s.seeds), limit, offset,
                                                                                batch=lb, key=key),
                          var="class", paging=s.paging)
    for row in rows:
        cls, seed = row_qid(row, "class"), row_qid(row, "seed")
        if cls and seed:
            out.setdefault(cls, set()).add(seed)
    return out


def sitelinked_counts(engine: Engine, classes: Iterable[str], site: str, s: WikidataSettings) -> dict[str, int]:
    """Class -> how many of its direct instances (P31) have an article on ``site``; every class
    asked for is in the answer (0 when none)."""
    wanted = sorted(set(classes), key=Q.qid_key)
    out = {c: 0 for c in wanted}
    rows = select_batched(engine, wanted, s.values_batch, s.page_size,
                          lambda c, limit, offset, lb, key: Q.sitelinked_instance_counts(c, site, limit, offset,
                                                                                        batch=lb, key=key),
                          var="class", unique=True, paging=s.paging)
    for row in rows:
        cls = row_qid(row, "class")
        if cls in out:
            out[cls] = int(row["count"]["value"])
    return out


# --- records ---------------------------------------------------------------------------------


def event_class_records(
    seeds: Sequence[str],
    discovered: Mapping[str, int],
    terms: Mapping[str, Terms],
    counts: Mapping[str, tuple[int, int]] | None,
    count_note: str | None,
) -> list[EventClass]:
    """Seed classes (config order) then discovered ones (most Wikinews instances first).
    ``counts``: QID -> (Wikinews-linked, enwiki-linked direct instances), or None when they
    were not computed (``count_note`` says why)."""
    order = list(seeds) + sorted((q for q in discovered if q not in set(seeds)),
                                 key=lambda q: (-discovered[q], Q.qid_key(q)))
    out = []
    seedset = set(seeds)
    for qid in order:
        t = terms.get(qid) or Terms()
        wikinews, enwiki = (counts.get(qid, (0, 0)) if counts is not None else (None, None))
        out.append(EventClass(
            id=qid, label=t.label, seed=qid in seedset, discovered=qid in discovered,
            wikinews_instances=wikinews, enwiki_instances=enwiki,
            count_notes=None if counts is not None else count_note,
        ))
    return out


def concept_records(
    seeds: Sequence[str],
    classes: Iterable[str],
    instances_by_seed: Mapping[str, Sequence[str]],
    extra_instances: Iterable[str],
    terms: Mapping[str, Terms],
    superclasses: Mapping[str, set[str]],
) -> Iterator[Concept]:
    """The linking vocabulary, sorted by QID number, yielded one record at a time (the corpus
    build writes them as they come: at 181,006 concepts a list would hold about half a GB).

    Classes: the seed classes and the Base KG's classes (``kind="class"``), with the seed
    classes they are (for a seed: itself) or are subclasses of. Instances: every instance of a
    seed class, plus the Base KG's example instances (``extra_instances``: the effects, which
    need not be instances of a seed class), with the seed classes they are instances of.
    """
    class_set = set(classes) | set(seeds)
    member_of: dict[str, set[str]] = {}
    for seed, items in instances_by_seed.items():
        for item in items:
            member_of.setdefault(item, set()).add(seed)
    instance_set = (set(member_of) | set(extra_instances)) - class_set
    seedset = set(seeds)
    for qid in sorted(class_set | instance_set, key=Q.qid_key):
        t = terms.get(qid) or Terms()
        # A class can also be an instance of a seed class (Wikidata mixes the two levels):
        # it falls under both.
        under = set(member_of.get(qid, set()))
        if qid in class_set:
            under |= set(superclasses.get(qid, set())) | ({qid} if qid in seedset else set())
            kind = "class"
        else:
            kind = "instance"
        yield Concept(
            id=qid, kind=kind, label=t.label, aliases=list(t.aliases), description=t.description,
            instance_of=list(t.instance_of), subclass_of=list(t.subclass_of),
            seed_classes=sorted(under, key=Q.qid_key), enwiki_title=t.enwiki_title,
        )
