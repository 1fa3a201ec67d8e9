"""The SPARQL queries of the Wikidata side of the corpus, built from validated ids only.

Every query here is plain SPARQL 1.1 over the Wikidata RDF vocabulary (``wd:``, ``wdt:``,
``rdfs:label``, ``skos:altLabel``, ``schema:about``, ``schema:isPartOf``, ``schema:name``,
``schema:description``) with its own PREFIX lines: no label service, no Blazegraph hints. So
the very same text runs on the Wikidata Query Service (``corpus.sparql.SPARQLClient``) and on
the bundled snapshot in an embedded Oxigraph store (``corpus.snapshot.SnapshotEngine``).

Ids (``Q…``, ``P…``) are checked against ``Q[1-9][0-9]*`` / ``P[1-9][0-9]*`` before they are
written into a query; IRIs and string literals (site IRIs, language tags) are written through
pyoxigraph's term serialisation. Labels and other free text never enter query text.

Queries that can return many rows take ``limit`` and ``offset`` and have a total ORDER BY over
their projected variables whose first variable is an IRI (the *key*: ?item, ?class, ?cause).
They also take ``key``, a ``Key`` condition on that variable (``FILTER(STR(?item) > "...")``),
so ``corpus.paging.select_keyset`` pages by key instead of by OFFSET: every page is "the next
LIMIT rows after the last key seen", whose cost does not grow with the page number (the public
query service answers deep OFFSETs slowly or not at all). ``corpus.sparql.select_all`` still
pages by OFFSET (``wikidata.paging = "offset"``). Queries over many items take a batch of QIDs
for a VALUES block.

Flow: ``corpus.wikidata`` and ``corpus.basekg`` call these builders; ``corpus.build`` runs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import pyoxigraph as ox

from causalkg.core.contracts import PID_RE, QID_RE
from causalkg.core.errors import ConfigError

PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX wdt: <http://www.wikidata.org/prop/direct/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
PREFIX schema: <http://schema.org/>
"""

ENTITY_PREFIX = "http://www.wikidata.org/entity/"
LANG_RE = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{1,8})*$")
SITE_RE = re.compile(r"^https?://[A-Za-z0-9.-]+/$")

# The six Wikidata properties that state causation, by which end is the cause.
CAUSE_IS_SUBJECT = ("P1542", "P1536", "P1537")  # has effect, immediate cause of, contributing factor of
CAUSE_IS_OBJECT = ("P828", "P1478", "P1479")  # has cause, has immediate cause, has contributing factor


@dataclass(frozen=True)
class Query:
    """A named query: ``name`` is short and human (it goes into error messages and logs);
    ``text`` is the full SPARQL. The cache key is (endpoint, text)."""

    name: str
    text: str


# --- validation ------------------------------------------------------------------------------


def check_qid(value: object, where: str = "QID") -> str:
    """Return ``value`` if it is a Wikidata item id (``Q`` + digits), else raise ConfigError."""
    if not isinstance(value, str) or not QID_RE.match(value):
        raise ConfigError(f"{where}: {value!r} is not a Wikidata item id (Q followed by digits, e.g. Q198)")
    return value


def check_pid(value: object, where: str = "PID") -> str:
    """Return ``value`` if it is a Wikidata property id (``P`` + digits), else raise ConfigError."""
    if not isinstance(value, str) or not PID_RE.match(value):
        raise ConfigError(f"{where}: {value!r} is not a Wikidata property id (P followed by digits, e.g. P1542)")
    return value


def check_language(value: object, where: str = "language") -> str:
    if not isinstance(value, str) or not LANG_RE.match(value):
        raise ConfigError(f"{where}: {value!r} is not a language code such as 'en'")
    return value


def check_site(value: object, where: str = "site") -> str:
    if not isinstance(value, str) or not SITE_RE.match(value):
        raise ConfigError(f"{where}: {value!r} is not a wiki site IRI such as 'https://en.wikipedia.org/'")
    return value


def qid_of(iri: str) -> str | None:
    """The QID of a ``http://www.wikidata.org/entity/Q…`` IRI, or None for anything else."""
    if iri.startswith(ENTITY_PREFIX):
        tail = iri[len(ENTITY_PREFIX):]
        if QID_RE.match(tail):
            return tail
    return None


def qid_key(qid: str) -> int:
    """Numeric sort key of a QID (Q2 before Q10)."""
    return int(qid[1:])


# --- term writers (validated, then serialised by pyoxigraph) ---------------------------------


def _wd(qid: str) -> str:
    return "wd:" + check_qid(qid)


def _wdt(pid: str) -> str:
    return "wdt:" + check_pid(pid)


def _iri(value: str) -> str:
    return str(ox.NamedNode(value))


def _string(value: str) -> str:
    return str(ox.Literal(value))


def _values(var: str, qids: Sequence[str]) -> str:
    if not qids:
        raise ValueError("a VALUES block needs at least one id")
    return f"VALUES ?{var} {{ " + " ".join(_wd(q) for q in qids) + " }"


def _union_over(values: str, branches: Sequence[str]) -> str:
    """``{ VALUES ... branch1 } UNION { VALUES ... branch2 } ...``: the VALUES block is repeated
    inside every branch instead of standing once outside the UNION. Same solutions; but an engine
    that evaluates each branch before joining it with an outer VALUES (Oxigraph does) would scan
    every statement of the branch's property for every batch, a cost that grows with the whole
    store, not with the batch (on a generated world of 68,391 items: 56 s per batch of 200
    against 0.05 s)."""
    return "\n  UNION ".join("{ " + values + " " + b.strip()[1:].strip() for b in branches)


def _lang_filter(var: str, languages: Sequence[str]) -> str:
    langs = ", ".join(_string(check_language(lang)) for lang in languages)
    return f"FILTER(LANG(?{var}) IN ({langs}))"


@dataclass(frozen=True)
class Key:
    """A condition on a query's key variable, for paging by key: ``op`` is ``>`` (the page
    after ``value``), ``>=`` (from ``value`` on) or ``=`` (only ``value``'s rows, paged by
    OFFSET when one key has more rows than a page). ``value`` is the key's IRI; it is compared
    as a string, which is how ORDER BY orders IRIs, so key order and page order agree."""

    var: str
    op: str
    value: str

    def __post_init__(self) -> None:
        if self.op not in (">", ">=", "="):
            raise ValueError(f"Key.op must be >, >= or =, got {self.op!r}")
        if not re.match(r"^[a-z]+$", self.var):
            raise ValueError(f"Key.var must be a plain variable name, got {self.var!r}")
        ox.NamedNode(self.value)  # raises ValueError on anything that is not an IRI

    def filter(self) -> str:
        return f"  FILTER(STR(?{self.var}) {self.op} {_string(self.value)})\n"

    def describe(self) -> str:
        tail = qid_of(self.value) or self.value
        return {">": "after ", ">=": "from ", "=": "only "}[self.op] + tail


def _key_filter(key: "Key | None") -> str:
    return key.filter() if key is not None else ""


def _name(what: str, limit: int, offset: int, batch: str = "", key: "Key | None" = None) -> str:
    """``what (batch 2/9, page 3)``: short enough for a log line, precise enough to find."""
    page = f"page {offset // max(1, int(limit)) + 1}"
    if key is not None:
        page = f"{key.describe()}" + (f", {page}" if offset else "")
    where = ", ".join(x for x in (batch, page) if x)
    return f"{what} ({where})"


def _page(limit: int, offset: int) -> str:
    if int(limit) < 1 or int(offset) < 0:
        raise ValueError("limit must be >= 1 and offset >= 0")
    return f"LIMIT {int(limit)} OFFSET {int(offset)}"


# --- the queries -----------------------------------------------------------------------------


def probe() -> Query:
    """A tiny query answered instantly by any endpoint: is it there?"""
    return Query("probe", PREFIXES + "SELECT ?ok WHERE { BIND(true AS ?ok) }\n")


def discover_event_classes(root: str, site: str, limit: int, offset: int, *, key: Key | None = None) -> Query:
    """Classes (direct P31) of items that have an article on ``site`` (English Wikinews),
    kept when the class is a subclass (P279*) of ``root`` (occurrence), with how many such
    items each has. The WikiCausal corpus discovered its event classes this way."""
    text = (
        PREFIXES
        + "SELECT ?class (COUNT(DISTINCT ?item) AS ?instances) WHERE {\n"
        + f"  ?article schema:about ?item ;\n           schema:isPartOf {_iri(check_site(site))} .\n"
        + "  ?item wdt:P31 ?class .\n"
        + f"  ?class wdt:P279* {_wd(root)} .\n"
        + _key_filter(key)
        + "}\nGROUP BY ?class\nORDER BY ?class\n"
        + _page(limit, offset)
        + "\n"
    )
    return Query(_name("discover event classes", limit, offset, key=key), text)


def instances_of(cls: str, limit: int, offset: int, *, key: Key | None = None) -> Query:
    """Items that are instances (P31/P279*) of class ``cls``."""
    text = (
        PREFIXES
        + "SELECT DISTINCT ?item WHERE {\n"
        + f"  ?item wdt:P31/wdt:P279* {_wd(cls)} .\n"
        + _key_filter(key)
        + "}\nORDER BY ?item\n"
        + _page(limit, offset)
        + "\n"
    )
    return Query(_name(f"instances of {cls}", limit, offset, key=key), text)


def causal_facts(
    causes: Sequence[str],
    limit: int,
    offset: int,
    *,
    subject_properties: Sequence[str] = CAUSE_IS_SUBJECT,
    object_properties: Sequence[str] = CAUSE_IS_OBJECT,
    batch: str = "",
    key: Key | None = None,
) -> Query:
    """Causal statements whose cause is one of ``causes``, normalised to (?cause ?property
    ?effect): for ``subject_properties`` the subject is the cause, for ``object_properties``
    the object is. Only item-valued effects are returned."""
    branches = [
        f"{{ ?cause {_wdt(p)} ?effect . BIND({_string(p)} AS ?property) }}" for p in subject_properties
    ] + [f"{{ ?effect {_wdt(p)} ?cause . BIND({_string(p)} AS ?property) }}" for p in object_properties]
    if not branches:
        raise ConfigError("no causal properties configured (wikidata.cause_subject_properties / cause_object_properties)")
    text = (
        PREFIXES
        + "SELECT DISTINCT ?cause ?property ?effect WHERE {\n"
        + "  "
        + _union_over(_values("cause", causes), branches)
        + "\n  FILTER(isIRI(?effect))\n"
        + _key_filter(key)
        + "}\nORDER BY ?cause ?property ?effect\n"
        + _page(limit, offset)
        + "\n"
    )
    return Query(_name("causal facts", limit, offset, batch, key), text)


def entity_terms(
    items: Sequence[str], languages: Sequence[str], wikipedia_site: str, limit: int, offset: int, *, batch: str = "",
    key: Key | None = None,
) -> Query:
    """Everything the concepts file needs about ``items``, one (item, field, value) row each:
    labels, aliases and descriptions in ``languages``, direct P31 and P279 classes, and the
    title of the article on ``wikipedia_site``."""
    lang = _lang_filter("value", languages)
    text = (
        PREFIXES
        + "SELECT DISTINCT ?item ?field ?value WHERE {\n"
        + "  "
        + _union_over(_values("item", items), [
            f'{{ ?item rdfs:label ?value . BIND("label" AS ?field) {lang} }}',
            f'{{ ?item skos:altLabel ?value . BIND("alias" AS ?field) {lang} }}',
            f'{{ ?item schema:description ?value . BIND("description" AS ?field) {lang} }}',
            '{ ?item wdt:P31 ?value . BIND("P31" AS ?field) }',
            '{ ?item wdt:P279 ?value . BIND("P279" AS ?field) }',
            f'{{ ?article schema:about ?item ; schema:isPartOf {_iri(check_site(wikipedia_site))} ; '
            'schema:name ?value . BIND("sitelink" AS ?field) }',
        ])
        + "\n"
        + _key_filter(key)
        + "}\nORDER BY ?item ?field ?value LANG(?value)\n"
        + _page(limit, offset)
        + "\n"
    )
    return Query(_name("terms", limit, offset, batch, key), text)


def seed_superclasses(classes: Sequence[str], seeds: Sequence[str], limit: int, offset: int, *, batch: str = "",
                      key: Key | None = None) -> Query:
    """Pairs (class, seed) where ``class`` is a proper subclass (P279+) of the seed class."""
    text = (
        PREFIXES
        + "SELECT DISTINCT ?class ?seed WHERE {\n"
        + f"  {_values('class', classes)}\n"
        + f"  {_values('seed', seeds)}\n"
        + "  ?class wdt:P279+ ?seed .\n"
        + _key_filter(key)
        + "}\nORDER BY ?class ?seed\n"
        + _page(limit, offset)
        + "\n"
    )
    return Query(_name("seed superclasses", limit, offset, batch, key), text)


def sitelinked_instance_counts(classes: Sequence[str], site: str, limit: int, offset: int, *, batch: str = "",
                               key: Key | None = None) -> Query:
    """For each class, how many of its direct instances (P31) have an article on ``site``."""
    text = (
        PREFIXES
        + "SELECT ?class (COUNT(DISTINCT ?item) AS ?count) WHERE {\n"
        + f"  {_values('class', classes)}\n"
        + "  ?item wdt:P31 ?class .\n"
        + f"  ?article schema:about ?item ;\n           schema:isPartOf {_iri(check_site(site))} .\n"
        + _key_filter(key)
        + "}\nGROUP BY ?class\nORDER BY ?class\n"
        + _page(limit, offset)
        + "\n"
    )
    return Query(_name(f"counts of {site} instances", limit, offset, batch, key), text)


def batches(items: Iterable[str], size: int) -> list[list[str]]:
    """Split ids into VALUES batches of at most ``size`` (sorted, deduplicated)."""
    ordered = sorted(set(items), key=qid_key)
    size = max(1, int(size))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]
