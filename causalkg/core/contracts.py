"""The JSONL contracts between stages, written down as pydantic models.

Each model is one line of one file; ``docs/formats.md`` describes the same fields for people.
Our own records carry ``schema_version``; a reader accepts the same major version and fails
on another. The WikiCausal shapes (Base KG lines, flat cause/effect pairs) are external formats
and are modelled exactly as the reference files have them; extra fields ride along
(``extra="allow"``), so our provenance never breaks a reader that does not know it.

Character offsets are Python string indices (Unicode code points) into the ``text`` they
refer to: ``text[start:end]`` is the span.

Flow: corpus writes EventClass, Concept, BaseKGLine and CorpusDocument; linking reads Concept
and returns Candidate; kg reads CorpusDocument, writes Extraction, then KG files in the
BaseKGLine and FlatPair shapes; evaluation reads those.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, field_validator

SCHEMA_VERSION = "1"
# The KG records (KGMention, KGEdge) carry a minor version of their own: 1.1 added a mention's
# ``assertion`` (polarity, modality, direction) and ``source``, and an edge's ``confidence``.
KG_SCHEMA_VERSION = "1.1"

QID_RE = re.compile(r"^Q[1-9][0-9]*$")
PID_RE = re.compile(r"^P[1-9][0-9]*$")

QID = Annotated[str, StringConstraints(pattern=QID_RE.pattern)]
PID = Annotated[str, StringConstraints(pattern=PID_RE.pattern)]


# A document id as text: corpus page ids are integers, other text JSONL ids may be strings.
DocId = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, int) and not isinstance(v, bool) else v)]


def is_qid(value: object) -> bool:
    return isinstance(value, str) and QID_RE.match(value) is not None


class _Open(BaseModel):
    """Extra fields are kept (they ride alongside); assignment is validated."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)


class Record(_Open):
    """A record of one of our own files: it carries ``schema_version``."""

    schema_version: str = SCHEMA_VERSION

    @field_validator("schema_version")
    @classmethod
    def _same_major(cls, value: str) -> str:
        if str(value).split(".")[0] != SCHEMA_VERSION.split(".")[0]:
            raise ValueError(
                f"schema_version {value!r} is not supported by this version (expects {SCHEMA_VERSION}.x); "
                "rebuild the file with this version of causalkg"
            )
        return value


# --- corpus: Wikidata side -------------------------------------------------------------------


class EventClass(Record):
    """One line of ``data/wikidata/event_classes.jsonl``.

    Counts are None when they could not be computed (the offline snapshot has no Wikinews
    sitelinks); ``count_notes`` says why.
    """

    id: QID
    label: str | None = None
    seed: bool = False  # in the configured seed list (used to build the corpus and Base KG)
    discovered: bool = False  # found by the Wikinews discovery query
    wikinews_instances: int | None = None
    enwiki_instances: int | None = None
    count_notes: str | None = None


class Concept(Record):
    """One line of ``data/wikidata/concepts.jsonl``: the linking vocabulary.

    ``kind`` is ``class`` for an event class (a seed class or a class in the Base KG) and
    ``instance`` for an item that is an instance (P31/P279*) of a seed class, or the effect of
    a Base KG example (then ``seed_classes`` may be empty). ``seed_classes`` lists the seed
    classes the concept falls under (for a seed class, itself included).
    """

    id: QID
    kind: Literal["class", "instance"]
    label: str | None = None
    aliases: list[str] = Field(default_factory=list)
    description: str | None = None
    instance_of: list[QID] = Field(default_factory=list)  # P31
    subclass_of: list[QID] = Field(default_factory=list)  # P279
    seed_classes: list[QID] = Field(default_factory=list)
    enwiki_title: str | None = None


class Ref(_Open):
    """``{"label", "id"}`` as in the WikiCausal examples."""

    label: str | None = None
    id: QID


class BaseKGExample(_Open):
    cause: Ref
    effect: Ref


class BaseKGConsequence(_Open):
    id: QID
    label: str | None = None
    labels: list[str] = Field(default_factory=list)
    usage_count: int | None = None
    page_count: int | None = None
    facts_count: int | None = None
    examples: list[BaseKGExample] = Field(default_factory=list)


class BaseKGEvent(_Open):
    id: QID
    label: str | None = None
    labels: list[str] = Field(default_factory=list)
    page_count: int | None = None
    usage_count: int | None = None


class BaseKGLine(_Open):
    """One line of the WikiCausal Base KG shape (``base-kg-v1.jsonl``, ``base_kg.jsonl``,
    and our ``causal_kg.jsonl``): an event class and its consequences with instance examples."""

    event: BaseKGEvent
    consequences: list[BaseKGConsequence] = Field(default_factory=list)


class FlatEnd(_Open):
    label: str | None = None
    id: list[QID] = Field(min_length=1)


class FlatPair(_Open):
    """One line of the flat WikiCausal KG shape: ``{"cause": {"label", "id": [..]}, "effect": ...}``."""

    cause: FlatEnd
    effect: FlatEnd


# --- corpus: Wikipedia side ------------------------------------------------------------------


class DocumentConcept(_Open):
    """The Wikidata concept a document is about. ``resolved`` is false (and ``id`` null) when
    the page could not be matched to Wikidata: we never guess a QID."""

    id: QID | None = None
    label: str | None = None
    labels: list[str] = Field(default_factory=list)
    resolved: bool = True


class ConceptRef(_Open):
    id: QID
    label: str | None = None


class Infobox(_Open):
    name: str
    fields: dict[str, str] = Field(default_factory=dict)


class Heading(_Open):
    text: str
    level: int


class Section(_Open):
    """A span of ``text``: the lead has ``heading`` None and level 1."""

    heading: str | None = None
    level: int
    start: int
    end: int


class TimelineItem(_Open):
    date: str | None = None
    text: str


class Timeline(_Open):
    heading: str
    items: list[TimelineItem] = Field(default_factory=list)


class CorpusDocument(Record):
    """One line of ``data/corpus/corpus.jsonl``: a superset of the WikiCausal corpus record."""

    id: int
    title: str
    url: str
    document_concept: DocumentConcept
    text: str
    first_section: str = ""
    categories: list[str] = Field(default_factory=list)
    infobox: Infobox | None = None
    headings: list[Heading] = Field(default_factory=list)
    event_concepts: list[ConceptRef] = Field(default_factory=list)
    timelines: list[Timeline] = Field(default_factory=list)
    revision_id: int | None = None
    timestamp: str | None = None
    sections: list[Section] = Field(default_factory=list)


class TextRecord(_Open):
    """The least a text JSONL line must hold to be extracted from: ``{"id", "text"}``."""

    id: int | str
    text: str


# --- linking ---------------------------------------------------------------------------------


class Candidate(_Open):
    """A linker answer for one phrase, best first."""

    qid: QID
    label: str | None = None
    surface: str  # the label or alias that matched
    score: float
    kind: Literal["class", "instance"]
    match: Literal["exact", "nearest"] = "nearest"


# --- kg: extraction --------------------------------------------------------------------------


class Span(_Open):
    text: str
    start: int
    end: int


class SentenceRef(_Open):
    text: str
    start: int
    end: int
    section: str | None = None


class Extraction(Record):
    """One line of ``data/kg/extractions.jsonl``: a cause -> effect phrase pair in a sentence.

    Offsets of ``sentence``, ``cause`` and ``effect`` are into the document's ``text``.
    """

    doc_id: DocId
    sentence: SentenceRef
    cause: Span
    effect: Span
    direction: Literal["increase", "decrease", "unspecified"] | None = None
    score: float
    extractor: str
    model: str | None = None
    question: str | None = None


# --- kg: assembled edges (kg/aggregate.py) -- owned by the KG assembly; see docs/kg.md ------


class LinkedSpan(Span):
    """A cause or effect span of a mention with the concept it linked to (the best candidate)."""

    qid: QID
    label: str | None = None
    kind: Literal["class", "instance"]
    link_score: float
    match: Literal["exact", "nearest"] = "nearest"


class Assertion(_Open):
    """What the KG assembly read about a pair in its sentence (``kg/polarity.py``): whether the
    sentence states it as not happening (``negated``), as a hypothesis, expectation or
    possibility (``hedged``), asks it (``question``), measures something else (``estimate``),
    states it the other way round (``reversed``), states no relation between the two spans
    (``unstated``: navigation text, a list, a description), or only orders the two in time
    (``temporal``); ``evidence`` holds the cue words behind each flag. A pair with a flag listed
    in ``kg.drop`` is not an edge."""

    negated: bool = False
    hedged: bool = False
    question: bool = False
    estimate: bool = False
    reversed: bool = False
    unstated: bool = False
    temporal: bool = False
    evidence: list[str] = Field(default_factory=list)


class KGMention(Record):
    """One sentence behind an edge: where it is, what was extracted, how each end was linked.

    ``sentence``, ``cause`` and ``effect`` offsets are into the document's ``text`` (as in
    ``Extraction``); ``*_candidates`` are the linker's answers, best first, with scores.
    ``source`` says what kind of text it is: ``sentence`` (prose), ``wikipedia_infobox`` (an
    infobox field: ``sentence.text`` is ``field = value``, offsets into that text) or
    ``wikipedia_list`` (an item under a Causes/Aftermath/Consequences-style heading).
    ``assertion`` is set for prose mentions (schema 1.1; None in older files). A prose mention
    assembled with the pair verifier on (``kg.verifier``) also carries ``verifier``, an extra
    field: ``{"verdict", "score", "probabilities", "flipped"?}``; without it the field is absent.
    """

    schema_version: str = KG_SCHEMA_VERSION
    mention_id: str
    doc_id: DocId
    title: str | None = None
    url: str | None = None
    revision_id: int | None = None
    document_concept: QID | None = None  # the concept the page is about, when resolved
    sentence: SentenceRef
    cause: LinkedSpan
    effect: LinkedSpan
    direction: Literal["increase", "decrease", "unspecified"] | None = None
    score: float
    extractor: str
    model: str | None = None
    question: str | None = None
    cause_candidates: list[Candidate] = Field(default_factory=list)
    effect_candidates: list[Candidate] = Field(default_factory=list)
    source: Literal["sentence", "wikipedia_infobox", "wikipedia_list"] = "sentence"
    assertion: Assertion | None = None


class EdgeSupport(_Open):
    """How much text stands behind an edge. ``sentences``/``documents`` are distinct, over the
    edge's own mentions and those of the lower-level edges lifted into it."""

    sentences: int
    documents: int
    mentions: int
    direct_mentions: int
    examples: int = 0


class ScoreSummary(_Open):
    best: float
    mean: float


class EdgeExample(BaseKGExample):
    """A lower-level edge (instance or mixed) lifted into a class edge; ``edge_id`` names it."""

    edge_id: str


class KGEdge(FlatPair):
    """One line of ``data/kg/causal_kg_pairs.jsonl``: the flat WikiCausal pair shape (``cause``/
    ``effect`` with ``label`` and ``id: [QID]``) plus the edge's level, support, scores,
    lifted examples and every mention as provenance. ``confidence`` (schema 1.1) is the
    probability that the edge is supported by its evidence, from ``kg/confidence.py``."""

    schema_version: str = KG_SCHEMA_VERSION
    edge_id: str
    level: Literal["class", "instance", "mixed"]
    cause_kind: Literal["class", "instance"]
    effect_kind: Literal["class", "instance"]
    support: EdgeSupport
    score: ScoreSummary
    link_score: ScoreSummary
    examples: list[EdgeExample] = Field(default_factory=list)
    lifted_to: list[str] = Field(default_factory=list)
    mentions: list[KGMention] = Field(default_factory=list)
    confidence: float | None = None

    @field_validator("schema_version")
    @classmethod
    def _same_major(cls, value: str) -> str:
        return Record._same_major(value)


# --- end of the kg assembly block ------------------------------------------------------------


# --- web: human judgements (web/judgements.py writes them, evaluation/human.py reads them) ---


class Judgement(Record):
    """One line of ``data/judgements/judgements.jsonl``: a person's verdict on an edge as one
    sentence states it. Keyed by (``cause``, ``effect``, ``sentence``), not by edge or mention
    ids, so a judgement still applies after the KG is rebuilt."""

    cause: QID
    effect: QID
    sentence: str
    verdict: Literal["correct", "wrong", "unsure", "withdrawn"]  # withdrawn: an undo left no verdict
    judge: str
    time: str
    note: str = ""
    cause_label: str | None = None
    effect_label: str | None = None
    cause_text: str | None = None
    effect_text: str | None = None
    edge_id: str | None = None
    mention_id: str | None = None
    doc_id: str | None = None
    revision_id: int | None = None
    source: str | None = None  # the page it was made on: edge | queue | api; undo for an undo line
