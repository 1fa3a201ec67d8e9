"""The causal KG as RDF: the vocabulary, the triples of each edge, and the Turtle / N-Triples writers.

Flow: ``kg/aggregate.py`` aggregates linked mentions into ``KGEdge`` records and
``kg/kgfiles.py`` calls :func:`write_rdf` here; ``kg/store.py`` and ``kg/graphstore.py`` load
the N-Triples chunks into a triple store. The vocabulary (namespace ``ck:``) is documented in
``kg/ontology/causalkg.ttl`` and ``docs/kg.md``.

The model, in short (every resource is an IRI: no blank nodes, so the N-Triples chunks can be
uploaded separately and a retried upload never duplicates anything):

* nodes are Wikidata entities ``wd:Q..`` with ``rdfs:label`` and a type,
  ``ck:ClassConcept`` or ``ck:InstanceConcept``;
* each edge is asserted directly, ``wd:A ck:causes wd:B``, and as a resource
  ``ckr:edge/A_B a ck:CausalEdge`` carrying ``ck:cause``, ``ck:effect``, ``ck:level``, support
  counts, scores, ``ck:liftedFrom`` (the instance edges a class edge was lifted from) and
  ``prov:wasDerivedFrom`` its mentions;
* a mention ``ckr:mention/<hash> a ck:Mention`` holds the sentence (``schema:text``), the
  character offsets, the extractor, model, question and scores, ``dcterms:source`` the
  Wikipedia page and ``prov:wasQuotedFrom`` the page revision.

Literals and IRIs are rdflib terms, so quotes, newlines and any script are escaped by rdflib;
each triple is produced exactly once, so the number of N-Triples lines is the triple count. The
writer renders the terms with rdflib's own functions but lays out the statements itself
(rdflib's Turtle serialiser, general and slow, took 10.8 of 17 s at 108k triples); a test holds
its output to rdflib's, byte for byte.
"""

from __future__ import annotations

import hashlib
import re
import sys
from decimal import Decimal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from rdflib import RDF, RDFS, Graph, Literal, Namespace, URIRef
from rdflib.namespace import DCTERMS, PROV, SDO, XSD
from rdflib.plugins.serializers.turtle import TurtleSerializer

try:  # what the writer renders literals with (private to rdflib, so checked)
    from rdflib.plugins.serializers.nt import _quoteLiteral
except ImportError:  # pragma: no cover - another rdflib: every batch goes through its serialisers
    _quoteLiteral = None

from causalkg.core.contracts import BaseKGLine, Concept, KGEdge, KGMention, is_qid
from causalkg.core.errors import SchemaError, StoreError
from causalkg.core.jsonl import atomic_write

CK = Namespace("https://w3id.org/causalkg/ns#")
RESOURCE_BASE = "https://w3id.org/causalkg/"
WD = Namespace("http://www.wikidata.org/entity/")
WDT = Namespace("http://www.wikidata.org/prop/direct/")

PREFIXES: dict[str, str] = {
    "ck": str(CK),
    "wd": str(WD),
    "wdt": str(WDT),
    "rdf": str(RDF),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
    "prov": str(PROV),
    "dcterms": str(DCTERMS),
    "schema": str(SDO),
    "edge": RESOURCE_BASE + "edge/",
    "mention": RESOURCE_BASE + "mention/",
}

Triple = tuple[URIRef, URIRef, URIRef | Literal]


class _Terms:
    """A namespace's terms by attribute, each made once: rdflib's namespaces make a new term on
    every attribute access (about 1 microsecond each, several per triple at scale)."""

    def __init__(self, namespace) -> None:
        self._namespace = namespace

    def __getattr__(self, name: str) -> URIRef:
        term = getattr(self._namespace, name)
        setattr(self, name, term)
        return term


_RDF, _RDFS, _CK, _WDT, _SDO, _PROV, _DCT = (_Terms(ns) for ns in (RDF, RDFS, CK, WDT, SDO, PROV, DCTERMS))
_XSD_INTEGER, _XSD_DECIMAL = XSD.integer, XSD.decimal

# Characters RFC 3987 does not allow anywhere in an IRI; Wikipedia URLs may hold some of them.
_IRI_UNSAFE = re.compile(r'[\x00-\x20<>"{}|\\^`\x7f-\x9f]')


@dataclass(frozen=True)
class RdfOptions:
    """How edges become triples.

    ``lang``: the language tag of labels; ``revision_base``: the prefix a revision id is
    appended to (``https://en.wikipedia.org/w/index.php?oldid=``), or None for no revision IRIs;
    ``wikidata_effect``: also assert ``wdt:P1542`` (off by default, see docs/kg.md).
    """

    lang: str = "en"
    revision_base: str | None = "https://en.wikipedia.org/w/index.php?oldid="
    wikidata_effect: bool = False


def revision_base_for(url_base: str) -> str | None:
    """``https://en.wikipedia.org/wiki/`` -> ``https://en.wikipedia.org/w/index.php?oldid=``."""
    if url_base.endswith("/wiki/"):
        return url_base[: -len("wiki/")] + "w/index.php?oldid="
    return None


# --- terms -----------------------------------------------------------------------------------


def entity(qid: str) -> URIRef:
    """The Wikidata entity IRI of a validated QID. Raises SchemaError on anything else."""
    if not is_qid(qid):
        raise SchemaError(f"not a Wikidata item id: {qid!r}")
    return WD[qid]


def edge_id_for(cause: str, effect: str) -> str:
    """The id of the edge between two QIDs (also the last segment of its IRI)."""
    entity(cause), entity(effect)
    return f"{cause}_{effect}"


def edge_iri(edge_id: str) -> URIRef:
    cause, sep, effect = edge_id.partition("_")
    if not sep or not is_qid(cause) or not is_qid(effect):
        raise SchemaError(f"not an edge id (Qcause_Qeffect): {edge_id!r}")
    return URIRef(f"{RESOURCE_BASE}edge/{edge_id}")


def mention_id_for(doc_id: str, sentence_start: int, cause: tuple[int, int], effect: tuple[int, int],
                   extractor: str) -> str:
    """A stable id for one extracted pair in one place of one document (hex, 20 digits)."""
    key = f"{doc_id}\x1f{sentence_start}\x1f{cause[0]}:{cause[1]}\x1f{effect[0]}:{effect[1]}\x1f{extractor}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


def mention_iri(mention_id: str) -> URIRef:
    if not re.fullmatch(r"[0-9a-f]{8,64}", mention_id):
        raise SchemaError(f"not a mention id (hex digest): {mention_id!r}")
    return URIRef(f"{RESOURCE_BASE}mention/{mention_id}")


def staging_iri(graph: str) -> str:
    """The graph an upload goes to before it replaces ``graph`` (``<graph>#staging``, or
    ``<graph>-staging`` when the IRI already has a fragment). Both the embedded store
    (``kg.store``) and a remote one (``kg.graphstore``) stage there."""
    return graph + ("-staging" if "#" in graph else "#staging")


def safe_iri(url: str) -> str | None:
    """``url`` with the characters IRIs forbid percent-encoded (UTF-8), or None if it is still
    not an absolute IRI (checked with Oxigraph's IRI parser)."""
    import pyoxigraph

    text = _IRI_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), url)
    try:
        pyoxigraph.NamedNode(text)
    except ValueError:
        return None
    return text


def _int(value: int) -> Literal:
    return Literal(int(value), datatype=_XSD_INTEGER)


def _score(value: float) -> Literal:
    # xsd:decimal of the value rounded to six places: exact, readable in Turtle ("0.93", not
    # "9.3e-01"), and the same on every platform.
    return Literal(Decimal(repr(round(float(value), 6))), datatype=_XSD_DECIMAL)


def _text(value: str) -> Literal:
    return Literal(value)


# --- triples ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeInfo:
    qid: str
    label: str | None
    kind: str  # class | instance
    seed_classes: tuple[str, ...] = ()
    instance_of: tuple[str, ...] = ()


def node_info(qid: str, concept: Concept | None, *, label: str | None, kind: str) -> NodeInfo:
    if concept is None:
        return NodeInfo(qid, label, kind)
    return NodeInfo(
        qid,
        concept.label or label,
        concept.kind or kind,
        tuple(q for q in concept.seed_classes if q != qid),
        tuple(concept.instance_of),
    )


def node_triples(node: NodeInfo, options: RdfOptions) -> list[Triple]:
    s = entity(node.qid)
    out: list[Triple] = [(s, _RDF.type, _CK.ClassConcept if node.kind == "class" else _CK.InstanceConcept)]
    if node.label:
        out.append((s, _RDFS.label, Literal(node.label, lang=options.lang)))
    for q in node.seed_classes:
        out.append((s, _CK.seedClass, entity(q)))
    for q in node.instance_of:
        # A Wikidata statement copied from the concepts file (P31), so joins with Wikidata work.
        out.append((s, _WDT.P31, entity(q)))
    return out


@dataclass(frozen=True)
class PageInfo:
    """A Wikipedia page behind some mentions: its IRI, title, id, and the concept it is about."""

    iri: str
    title: str | None
    doc_id: str
    about: str | None


def page_triples(page: PageInfo) -> list[Triple]:
    s = URIRef(page.iri)
    out: list[Triple] = [(s, _RDF.type, _SDO.Article), (s, _CK.pageId, _text(page.doc_id))]
    if page.title:
        out.append((s, _DCT.title, _text(page.title)))
    if page.about and is_qid(page.about):
        out.append((s, _SDO.about, entity(page.about)))
    return out


def revision_triples(revision_iri: str, page_iri: str | None, revision_id: int) -> list[Triple]:
    s = URIRef(revision_iri)
    out: list[Triple] = [(s, _RDF.type, _PROV.Entity), (s, _CK.revisionId, _int(revision_id))]
    if page_iri:
        out.append((s, _PROV.specializationOf, URIRef(page_iri)))
    return out


def revision_iri_for(options: RdfOptions, revision_id: int | None) -> str | None:
    if revision_id is None or options.revision_base is None:
        return None
    return safe_iri(f"{options.revision_base}{int(revision_id)}")


def mention_triples(m: KGMention, options: RdfOptions) -> list[Triple]:
    s = mention_iri(m.mention_id)
    out: list[Triple] = [
        (s, _RDF.type, _CK.Mention),
        (s, _CK.documentId, _text(m.doc_id)),
        (s, _SDO.text, _text(m.sentence.text)),
        (s, _CK.sentenceStart, _int(m.sentence.start)),
        (s, _CK.sentenceEnd, _int(m.sentence.end)),
        (s, _CK.causeText, _text(m.cause.text)),
        (s, _CK.causeStart, _int(m.cause.start)),
        (s, _CK.causeEnd, _int(m.cause.end)),
        (s, _CK.causeConcept, entity(m.cause.qid)),
        (s, _CK.causeLinkScore, _score(m.cause.link_score)),
        (s, _CK.effectText, _text(m.effect.text)),
        (s, _CK.effectStart, _int(m.effect.start)),
        (s, _CK.effectEnd, _int(m.effect.end)),
        (s, _CK.effectConcept, entity(m.effect.qid)),
        (s, _CK.effectLinkScore, _score(m.effect.link_score)),
        (s, _CK.extractionScore, _score(m.score)),
        (s, _CK.extractor, _text(m.extractor)),
    ]
    if m.sentence.section is not None:
        out.append((s, _CK.section, _text(m.sentence.section)))
    if m.model:
        out.append((s, _CK.model, _text(m.model)))
    if m.question:
        out.append((s, _CK.question, _text(m.question)))
    if m.direction:
        out.append((s, _CK.direction, _text(m.direction)))
    page = safe_iri(m.url) if m.url else None
    if page:
        out.append((s, _DCT.source, URIRef(page)))
    revision = revision_iri_for(options, m.revision_id)
    if revision:
        out.append((s, _PROV.wasQuotedFrom, URIRef(revision)))
    return out


def edge_triples(edge: KGEdge, options: RdfOptions) -> list[Triple]:
    """The direct ``ck:causes`` triple and the edge resource (not its mentions)."""
    cause, effect = edge.cause.id[0], edge.effect.id[0]
    s = edge_iri(edge.edge_id)
    out: list[Triple] = [
        (entity(cause), _CK.causes, entity(effect)),
        (s, _RDF.type, _CK.CausalEdge),
        (s, _CK.cause, entity(cause)),
        (s, _CK.effect, entity(effect)),
        (s, _CK.level, _text(edge.level)),
        (s, _CK.supportSentences, _int(edge.support.sentences)),
        (s, _CK.supportDocuments, _int(edge.support.documents)),
        (s, _CK.mentionCount, _int(edge.support.mentions)),
        (s, _CK.exampleCount, _int(edge.support.examples)),
        (s, _CK.bestScore, _score(edge.score.best)),
        (s, _CK.meanScore, _score(edge.score.mean)),
        (s, _CK.bestLinkScore, _score(edge.link_score.best)),
        (s, _CK.meanLinkScore, _score(edge.link_score.mean)),
    ]
    if options.wikidata_effect:
        out.append((entity(cause), _WDT.P1542, entity(effect)))
    for ex in edge.examples:
        out.append((s, _CK.liftedFrom, edge_iri(ex.edge_id)))
    for m in edge.mentions:
        out.append((s, _PROV.wasDerivedFrom, mention_iri(m.mention_id)))
    return out


def kg_blocks(
    edges: Sequence[KGEdge], concepts: Mapping[str, Concept], options: RdfOptions, *,
    mentions_of: Callable[[KGEdge], Sequence[KGMention]] | None = None,
) -> Iterator[list[Triple]]:
    """The KG's triples in blocks (nodes, then pages and revisions, then each edge with its
    mentions), each triple exactly once, in a deterministic order. ``mentions_of(edge)``
    gives the mentions of edges that do not carry them (read one edge at a time)."""
    own = mentions_of is None
    nodes: dict[str, NodeInfo] = {}
    for e in edges:
        for ref, kind in ((e.cause, e.cause_kind), (e.effect, e.effect_kind)):
            q = ref.id[0]
            if q not in nodes:
                nodes[q] = node_info(q, concepts.get(q), label=ref.label, kind=kind)
    for q in sorted(nodes, key=lambda x: int(x[1:])):
        yield node_triples(nodes[q], options)

    pages: dict[str, PageInfo] = {}
    revisions: dict[str, tuple[str | None, int]] = {}
    for e in edges:
        for m in (e.mentions if own else mentions_of(e)):
            page = safe_iri(m.url) if m.url else None
            if page and page not in pages:
                pages[page] = PageInfo(page, m.title, m.doc_id, m.document_concept)
            rev = revision_iri_for(options, m.revision_id)
            if rev and rev not in revisions and m.revision_id is not None:
                revisions[rev] = (page, m.revision_id)
    for page in sorted(pages):
        yield page_triples(pages[page])
    for rev in sorted(revisions):
        yield revision_triples(rev, *revisions[rev])

    for e in edges:
        if not own:
            e = e.model_copy(update={"mentions": list(mentions_of(e))})
        block = edge_triples(e, options)
        for m in e.mentions:
            block.extend(mention_triples(m, options))
        yield block


BASE_KG_BLOCK = 5_000  # a block of base_kg_blocks ends once it holds this many triples (after an example)


def base_kg_blocks(lines: Iterable[BaseKGLine], options: RdfOptions) -> Iterator[list[Triple]]:
    """The WikiCausal Base KG as ``ck:causes`` triples (class pairs and instance examples) with
    labels, for the Base KG's own named graph in the store. Duplicates are removed: a triple is
    given the first time it comes.

    What was given is remembered by plain keys, not as rdflib triples: (QID, kind) for a type,
    (QID, label) for a label, (cause QID, effect QID) for a ``ck:causes``, the QIDs interned.
    Each key stands for exactly one triple (the label's language is the same for all). A Base
    KG line is one event class with all its consequences and examples (tens of thousands of
    triples in the 68,391-document world's largest), so a block ends after the consequence or
    example that takes it to ``BASE_KG_BLOCK`` triples (up to 4 more): the same triples in the
    same order, whatever the blocks. At that world's Base KG (474,713 triples) ``kg export``'s
    conversion went from 439 MB to 247 MB."""
    typed: set[tuple[str, int]] = set()
    named: set[tuple[str, str]] = set()
    pairs: set[tuple[str, str]] = set()
    kinds = (CK.ClassConcept, CK.InstanceConcept)

    def labelled(block: list[Triple], qid: str, label: str | None, kind: int) -> str:
        qid = sys.intern(qid)
        if (qid, kind) not in typed:
            typed.add((qid, kind))
            block.append((entity(qid), RDF.type, kinds[kind]))
        if label and (qid, label) not in named:
            named.add((qid, label))
            block.append((entity(qid), RDFS.label, Literal(label, lang=options.lang)))
        return qid

    def causes(block: list[Triple], cause: str, effect: str) -> None:
        if (cause, effect) not in pairs:
            pairs.add((cause, effect))
            block.append((entity(cause), CK.causes, entity(effect)))

    for line in lines:
        ev = line.event
        block: list[Triple] = []
        event = labelled(block, ev.id, ev.label, 0)
        for c in line.consequences:
            causes(block, event, labelled(block, c.id, c.label, 0))
            for ex in c.examples:
                if len(block) >= BASE_KG_BLOCK:  # one line (one event class) can hold tens of thousands
                    yield block
                    block = []
                a = labelled(block, ex.cause.id, ex.cause.label, 1)
                b = labelled(block, ex.effect.id, ex.effect.label, 1)
                causes(block, a, b)
            if len(block) >= BASE_KG_BLOCK:
                yield block
                block = []
        if block:
            yield block


def graph_of(blocks: Iterable[list[Triple]]) -> Graph:
    """All blocks in one rdflib Graph (for tests and small KGs)."""
    g = new_graph()
    for block in blocks:
        for t in block:
            g.add(t)
    return g


def new_graph() -> Graph:
    g = Graph(bind_namespaces="none")
    for prefix, ns in PREFIXES.items():
        g.bind(prefix, Namespace(ns))
    return g


# --- writers ---------------------------------------------------------------------------------


@dataclass
class RdfFiles:
    """What :func:`write_rdf` wrote: the triple count and the files."""

    triples: int = 0
    turtle: Path | None = None
    ntriples: list[Path] = field(default_factory=list)


def _batches(blocks: Iterable[list[Triple]], size: int) -> Iterator[list[Triple]]:
    batch: list[Triple] = []
    for block in blocks:
        batch.extend(block)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


_HEADER = "".join(f"@prefix {p}: <{ns}> .\n" for p, ns in PREFIXES.items())  # the Turtle file's first lines
_HEADER_LINES = frozenset(_HEADER.splitlines())


def _rdflib_batch(batch: list[Triple], *, ttl: bool, nt: bool) -> tuple[str | None, list[str]]:
    """One batch through rdflib's own serialisers: the Turtle piece (without the header's
    ``@prefix`` lines) and the sorted N-Triples lines. The reference :class:`_BatchWriter`
    agrees with, and its fallback for anything outside the shapes it handles."""
    g = graph_of([batch])
    if len(g) != len(batch):
        raise StoreError(f"internal error: {len(batch) - len(g)} duplicate triples in the RDF writer")
    piece = None
    if ttl:
        # split on "\n" alone: str.splitlines() also splits at U+2028, U+0085, form feeds and
        # the like, which a literal may hold unescaped
        text = g.serialize(format="turtle")
        body = [ln for ln in text.split("\n") if not (ln.startswith("@prefix") and ln in _HEADER_LINES)]
        piece = "\n" + "\n".join(body).strip("\n") + "\n"
    lines = sorted(ln for ln in g.serialize(format="nt").split("\n") if ln.strip()) if nt else []
    return piece, lines


class _Fallback(Exception):
    """A batch :class:`_BatchWriter` does not render; rdflib's serialisers do it instead."""


# rdflib's own pattern for a "%" in a local name that must be escaped (not followed by two hex digits)
_PCT_NOT_ESCAPE = getattr(TurtleSerializer, "LOCALNAME_PECRENT_CHARACTER_REQUIRING_ESCAPE_REGEX", None)
_TYPE, _LABEL, _NIL, _CLASS = str(RDF.type), str(RDFS.label), str(RDF.nil), str(RDFS.Class)


class _BatchWriter:
    """Turtle and N-Triples text of one batch, byte for byte what rdflib's serialisers write
    for it (``_rdflib_batch``), at a fraction of their cost.

    rdflib's Turtle serialiser is general (blank nodes, lists, nesting) and pays for it on every
    triple; the KG has none of that: IRIs and literals only. This writes the same statements in
    the same order: subjects by (times used as an object, IRI), ``rdf:type`` then
    ``rdfs:label`` then the other predicates in IRI order, objects in term order; terms through
    the same rdflib functions (prefixed names by the graph's namespace manager, literals by
    ``Literal._literal_n3``, N-Triples rows by the N-Triples serialiser's). A batch with
    anything else (a blank node, ``rdf:nil``, an ``rdfs:Class``, a predicate with no prefix,
    several literals for one predicate, whose order rdflib leaves to its store) raises
    :class:`_Fallback`. One instance per batch, as rdflib gets a fresh graph per batch: its
    caches stay the size of a batch.
    """

    def __init__(self) -> None:
        self.graph = new_graph()
        self.nm = self.graph.namespace_manager
        self._names: dict[str, str] = {}
        self._verbs: dict[str, str] = {}
        self._nt: dict[str, str] = {}

    def _pname(self, uri: URIRef, verb: bool) -> str | None:
        # TurtleSerializer.get_pname, except that a verb never generates a prefix here: the
        # batch falls back to rdflib, which generates it
        try:
            prefix, namespace, local = self.nm.compute_qname(uri, generate=False)
        except Exception as exc:
            if verb and isinstance(exc, KeyError):
                raise _Fallback(f"no prefix for the predicate {uri}") from None
            prefix = self.graph.store.prefix(uri)
            if prefix is None:
                return None
            local = ""
        local = local.replace(r"(", r"\(").replace(r")", r"\)")
        local = _PCT_NOT_ESCAPE.sub("\\%", local)
        if local.endswith("."):
            return None
        if prefix.startswith("_"):
            raise _Fallback(f"rdflib rewrites the prefix {prefix}")
        return "%s:%s" % (prefix, local)

    def name(self, term: URIRef | Literal, verb: bool = False) -> str:
        """The Turtle form of a term (cached for IRIs, by their plain string: comparing two
        rdflib terms runs Python code, comparing two strings does not)."""
        if type(term) is URIRef:
            cache = self._verbs if verb else self._names
            key = str(term)
            out = cache.get(key)
            if out is None:
                out = "a" if verb and key == _TYPE else (self._pname(term, verb) or term.n3())
                cache[key] = out
            return out
        if type(term) is Literal:
            return term._literal_n3(use_plain=True, qname_callback=lambda dt: self._pname(dt, False))
        raise _Fallback(f"a {type(term).__name__} term")

    def _iri_nt(self, term: URIRef) -> str:
        key = str(term)
        out = self._nt.get(key)
        if out is None:
            out = self._nt[key] = term.n3()
        return out

    def nt_row(self, t: Triple) -> str:
        """``nt._nt_row`` without its newline."""
        s, p, o = t
        obj = _quoteLiteral(o) if type(o) is Literal else self._iri_nt(o)
        return "%s %s %s ." % (self._iri_nt(s), self._iri_nt(p), obj)

    def render(self, batch: list[Triple], *, ttl: bool, nt: bool) -> tuple[str | None, list[str]]:
        # subjects, predicates and IRI objects keyed by their plain strings: their order as
        # rdflib terms of one type is the order of their strings
        by_subject: dict[str, tuple[URIRef, dict[str, tuple[URIRef, list]]]] = {}
        refs: dict[str, int] = {}  # times each IRI is an object
        for s, p, o in batch:
            if type(s) is not URIRef or type(p) is not URIRef:
                raise _Fallback("a subject or predicate that is not an IRI")
            if type(o) is URIRef:
                k = str(o)
                refs[k] = refs.get(k, 0) + 1
            elif type(o) is not Literal:
                raise _Fallback("an object that is neither an IRI nor a literal")
            ks, kp = str(s), str(p)
            entry = by_subject.get(ks)
            if entry is None:
                entry = by_subject[ks] = (s, {})
            objs = entry[1].get(kp)
            if objs is None:
                entry[1][kp] = (p, [o])
            else:
                objs[1].append(o)
        if (_NIL in by_subject or _NIL in refs or any(_NIL in props for _, props in by_subject.values())
                or (_CLASS in refs and any(_CLASS in [str(o) for o in props.get(_TYPE, (None, ()))[1]]
                                           for _, props in by_subject.values()))):
            raise _Fallback("rdf:nil or an rdfs:Class")
        lines = sorted([self.nt_row(t) for t in batch]) if nt else []
        # the same check as rdflib's graph (term equality); on N-Triples rows when there are any
        distinct = len(set(lines)) if nt else len(set(batch))
        if distinct != len(batch):
            raise StoreError(f"internal error: {len(batch) - distinct} duplicate triples in the RDF writer")
        piece = None
        if ttl:
            statements = []
            name = self.name
            for _, ks in sorted([(refs.get(ks, 0), ks) for ks in by_subject]):
                s, props = by_subject[ks]
                order = [k for k in (_TYPE, _LABEL) if k in props]
                order += sorted([k for k in props if k != _TYPE and k != _LABEL])
                out = [name(s)]
                for i, kp in enumerate(order):
                    p, objs = props[kp]
                    if len(objs) > 1:
                        if any(type(o) is Literal for o in objs):
                            raise _Fallback("several literals for one predicate")
                        objs = sorted(objs, key=str)
                    out.append((" ;\n    " if i else " ") + name(p, verb=True) + " ")
                    out.append(",\n        ".join([name(o) for o in objs]))
                out.append(" .")
                statements.append("".join(out))
            piece = "\n" + "\n\n".join(statements) + "\n"
        return piece, lines


# The writer uses three of rdflib's private names; without them every batch goes to rdflib itself
# (and tests/kg/test_rdf.py holds the writer's bytes to rdflib's, so a changed rdflib shows there).
_WRITER_OK = _quoteLiteral is not None and _PCT_NOT_ESCAPE is not None and hasattr(Literal, "_literal_n3")


def _render_batch(batch: list[Triple], *, ttl: bool, nt: bool) -> tuple[str | None, list[str]]:
    if _WRITER_OK:
        try:
            return _BatchWriter().render(batch, ttl=ttl, nt=nt)
        except _Fallback:
            pass
    return _rdflib_batch(batch, ttl=ttl, nt=nt)


def write_rdf(
    blocks: Iterable[list[Triple]],
    *,
    turtle: str | Path | None,
    nt_dir: str | Path | None,
    nt_stem: str = "causal_kg",
    chunk_triples: int = 500_000,
    batch_triples: int = 5_000,
) -> RdfFiles:
    """Stream ``blocks`` into one Turtle file and N-Triples files of at most ``chunk_triples``.

    Each batch of blocks is serialised on its own, by :class:`_BatchWriter` (the bytes
    rdflib's Turtle and N-Triples serialisers write for it; 3.2-3.9 times their triples per
    second with the triples' construction counted, ``python -m bench rdf``) or, for a batch
    outside the shapes it renders, by rdflib itself: the Turtle file is a header of
    prefixes followed by those pieces (a piece that needed another prefix keeps its own
    ``@prefix`` lines, which Turtle allows anywhere). N-Triples lines are sorted within a batch,
    so the output is byte-identical across runs. Old chunks beyond the new count are removed.
    Files are written atomically. Returns the triple count and paths.
    """
    if chunk_triples < 1:
        raise SchemaError(f"nt_chunk_triples must be at least 1, got {chunk_triples}")
    files = RdfFiles(turtle=Path(turtle) if turtle else None)
    nt_path = Path(nt_dir) if nt_dir else None
    if nt_path:
        nt_path.mkdir(parents=True, exist_ok=True)

    ttl_cm = atomic_write(files.turtle) if files.turtle else None
    ttl = ttl_cm.__enter__() if ttl_cm else None
    nt_cm = None
    nt_fh = None
    in_chunk = 0
    try:
        if ttl is not None:
            ttl.write(_HEADER)
        for batch in _batches(blocks, batch_triples):
            piece, lines = _render_batch(batch, ttl=ttl is not None, nt=nt_path is not None)
            files.triples += len(batch)
            if ttl is not None:
                ttl.write(piece)
            if nt_path is not None:
                for ln in lines:
                    if nt_fh is None or in_chunk >= chunk_triples:
                        if nt_cm is not None:
                            nt_cm.__exit__(None, None, None)
                        p = nt_path / f"{nt_stem}-{len(files.ntriples):05d}.nt"
                        files.ntriples.append(p)
                        nt_cm = atomic_write(p)
                        nt_fh = nt_cm.__enter__()
                        in_chunk = 0
                    nt_fh.write(ln + "\n")
                    in_chunk += 1
        if nt_path is not None and not files.ntriples:
            p = nt_path / f"{nt_stem}-00000.nt"  # an empty KG still gets one (empty) chunk
            files.ntriples.append(p)
            nt_cm = atomic_write(p)
            nt_fh = nt_cm.__enter__()
        if nt_cm is not None:
            nt_cm.__exit__(None, None, None)
            nt_cm = None
        if ttl_cm is not None:
            ttl_cm.__exit__(None, None, None)
            ttl_cm = None
    except BaseException as exc:
        for cm in (nt_cm, ttl_cm):
            if cm is not None:
                cm.__exit__(type(exc), exc, exc.__traceback__)
        raise
    if nt_path is not None:
        keep = {p.name for p in files.ntriples}
        for old in nt_path.glob(f"{nt_stem}-*.nt"):
            if old.name not in keep:
                old.unlink()
    return files


def count_with_oxigraph(path: str | Path) -> int:
    """Parse a Turtle or N-Triples file with Oxigraph (an independent parser) and count triples."""
    import pyoxigraph

    p = Path(path)
    fmt = pyoxigraph.RdfFormat.TURTLE if p.suffix == ".ttl" else pyoxigraph.RdfFormat.N_TRIPLES
    try:
        return sum(1 for _ in pyoxigraph.parse(path=str(p), format=fmt))
    except SyntaxError as exc:
        raise StoreError(f"{p}: Oxigraph cannot parse what we wrote: {exc}") from None


def verify_rdf(files: RdfFiles) -> None:
    """Check that Oxigraph reads the same number of triples we wrote, from the Turtle file and
    from the N-Triples chunks. Raises StoreError on a difference."""
    if files.turtle is not None:
        n = count_with_oxigraph(files.turtle)
        if n != files.triples:
            raise StoreError(f"{files.turtle}: Oxigraph reads {n} triples, we wrote {files.triples}")
    if files.ntriples:
        n = sum(count_with_oxigraph(p) for p in files.ntriples)
        if n != files.triples:
            raise StoreError(f"N-Triples chunks: Oxigraph reads {n} triples, we wrote {files.triples}")


def ck_terms_used(g: Graph) -> set[URIRef]:
    """The ``ck:`` IRIs a graph uses as predicate or type (for checking the ontology covers them)."""
    out: set[URIRef] = set()
    for _, p, o in g:
        if str(p).startswith(str(CK)):
            out.add(p)
        if p == RDF.type and isinstance(o, URIRef) and str(o).startswith(str(CK)):
            out.add(o)
    return out


def ontology_path() -> Path:
    return Path(__file__).with_name("ontology") / "causalkg.ttl"
