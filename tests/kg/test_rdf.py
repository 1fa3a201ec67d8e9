"""The RDF model and writers (kg/rdf.py): isomorphic round trips, Oxigraph counts, escaping,
IRIs, the ontology, and the real WikiCausal files through our readers and writers."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph
import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.compare import isomorphic
from rdflib.namespace import RDF, RDFS

from causalkg.core.contracts import BaseKGLine, FlatPair, KGMention
from causalkg.core.errors import SchemaError
from causalkg.core.jsonl import read_jsonl
from causalkg.kg import rdf
from causalkg.kg.aggregate import aggregate
from causalkg.kg.inputs import load_concepts

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"
WIKICAUSAL = REPO / "snapshots" / "wikicausal"


@pytest.fixture(scope="module")
def concepts():
    return load_concepts(FIX / "concepts.jsonl")


@pytest.fixture(scope="module")
def edges(concepts):
    mentions = list(read_jsonl(FIX / "linked.jsonl", KGMention)) + list(read_jsonl(FIX / "tricky.jsonl", KGMention))
    return aggregate(mentions, concepts)


def _write(edges, concepts, tmp_path, **kw):
    blocks = rdf.kg_blocks(edges, concepts, rdf.RdfOptions(**kw))
    return rdf.write_rdf(blocks, turtle=tmp_path / "kg.ttl", nt_dir=tmp_path / "nt", chunk_triples=100)


def test_turtle_and_ntriples_parse_back_isomorphic(edges, concepts, tmp_path):
    expected = rdf.graph_of(rdf.kg_blocks(edges, concepts, rdf.RdfOptions()))
    files = _write(edges, concepts, tmp_path)
    assert files.triples == len(expected) > 300
    assert len(files.ntriples) == -(-files.triples // 100)  # chunked every 100 triples
    ttl = Graph().parse(files.turtle, format="turtle")
    nt = Graph()
    for p in files.ntriples:
        nt.parse(p, format="nt")
    assert isomorphic(expected, ttl)
    assert isomorphic(expected, nt)
    # one triple per N-Triples line: the line count is the triple count
    assert sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files.ntriples) == files.triples


def test_oxigraph_reads_the_same_triple_count(edges, concepts, tmp_path):
    files = _write(edges, concepts, tmp_path)
    assert rdf.count_with_oxigraph(files.turtle) == files.triples
    assert sum(rdf.count_with_oxigraph(p) for p in files.ntriples) == files.triples
    rdf.verify_rdf(files)  # raises on a difference
    store = pyoxigraph.Store()
    for p in files.ntriples:
        store.bulk_load(path=str(p), format=pyoxigraph.RdfFormat.N_TRIPLES)
    assert len(store) == files.triples  # no triple written twice


def test_tricky_sentence_survives_rdflib_and_oxigraph(edges, concepts, tmp_path):
    tricky = next(read_jsonl(FIX / "tricky.jsonl", KGMention))
    assert '"' in tricky.sentence.text and "\n" in tricky.sentence.text and "関東大震災" in tricky.sentence.text
    files = _write(edges, concepts, tmp_path)
    subject = rdf.mention_iri(tricky.mention_id)
    ttl = Graph().parse(files.turtle, format="turtle")
    assert ttl.value(subject, rdf.SDO.text) == Literal(tricky.sentence.text)
    assert ttl.value(subject, rdf.CK.causeText) == Literal(tricky.cause.text)
    assert ttl.value(subject, rdf.CK.section) == Literal(tricky.sentence.section)
    assert ttl.value(subject, rdf.CK.question) == Literal(tricky.question)
    store = pyoxigraph.Store()
    store.load(path=str(files.turtle), format=pyoxigraph.RdfFormat.TURTLE)
    found = list(store.quads_for_pattern(pyoxigraph.NamedNode(str(subject)),
                                         pyoxigraph.NamedNode(str(rdf.SDO.text)), None))
    assert [q.object.value for q in found] == [tricky.sentence.text]
    # the page IRI had a quote and braces: they are percent-encoded, and the title survives
    page = URIRef("https://en.wikipedia.org/wiki/Invented_%22quoted%22_title_%7Bx%7D")
    assert ttl.value(page, rdf.DCTERMS.title) == Literal(tricky.title)
    assert ttl.value(subject, rdf.DCTERMS.source) == page
    revision = URIRef("https://en.wikipedia.org/w/index.php?oldid=42")
    assert ttl.value(subject, rdf.PROV.wasQuotedFrom) == revision
    assert ttl.value(revision, rdf.PROV.specializationOf) == page


def test_edge_model(edges, concepts):
    g = rdf.graph_of(rdf.kg_blocks(edges, concepts, rdf.RdfOptions()))
    wd = rdf.WD
    assert (wd.Q7944, rdf.CK.causes, wd.Q8070) in g
    assert (wd.Q7944, RDFS.label, Literal("earthquake", lang="en")) in g
    assert (wd.Q7944, RDF.type, rdf.CK.ClassConcept) in g
    assert (wd.Q130754, RDF.type, rdf.CK.InstanceConcept) in g
    assert (wd.Q130754, rdf.CK.seedClass, wd.Q7944) in g
    assert (wd.Q1312405, rdf.WDT.P31, wd.Q1078765) in g
    e = rdf.edge_iri("Q7944_Q8070")
    assert g.value(e, rdf.CK.cause) == wd.Q7944 and g.value(e, rdf.CK.effect) == wd.Q8070
    assert g.value(e, rdf.CK.level) == Literal("class")
    assert g.value(e, rdf.CK.supportSentences).toPython() == 3  # two fixture sentences + the tricky one
    assert len(list(g.objects(e, rdf.PROV.wasDerivedFrom))) == 3
    lifted = rdf.edge_iri("Q7944_Q1078765")
    assert g.value(lifted, rdf.CK.liftedFrom) == rdf.edge_iri("Q130754_Q1312405")
    assert g.value(lifted, rdf.PROV.wasDerivedFrom) is None  # its evidence is the instance edge's
    # no wdt:P1542 unless asked for
    assert not list(g.triples((None, rdf.WDT.P1542, None)))
    g2 = rdf.graph_of(rdf.kg_blocks(edges, concepts, rdf.RdfOptions(wikidata_effect=True)))
    assert (wd.Q7944, rdf.WDT.P1542, wd.Q8070) in g2
    assert len(list(g2.triples((None, rdf.WDT.P1542, None)))) == len(edges)


def test_no_blank_nodes(edges, concepts):
    g = rdf.graph_of(rdf.kg_blocks(edges, concepts, rdf.RdfOptions()))
    assert len(g) > 100 and len(set(g.subjects())) > len(edges)  # a graph to look at, not an empty one
    assert all(isinstance(t, (URIRef, Literal)) for triple in g for t in triple)


def test_ontology_declares_every_term_we_use(edges, concepts):
    onto = Graph().parse(rdf.ontology_path(), format="turtle")
    declared = set(onto.subjects(RDF.type, None))
    g = rdf.graph_of(rdf.kg_blocks(edges, concepts, rdf.RdfOptions()))
    used = rdf.ck_terms_used(g)
    assert used and used <= declared, sorted(str(t) for t in used - declared)
    for term in declared:
        if str(term).startswith(str(rdf.CK)):
            assert onto.value(term, RDFS.label) is not None, term


def test_terms_are_validated():
    with pytest.raises(SchemaError, match="not a Wikidata item id"):
        rdf.entity("Q7944> <http://evil")
    with pytest.raises(SchemaError, match="not an edge id"):
        rdf.edge_iri("Q1_P2")
    with pytest.raises(SchemaError, match="not a mention id"):
        rdf.mention_iri("../x")
    assert rdf.safe_iri("https://en.wikipedia.org/wiki/A b<c>") == "https://en.wikipedia.org/wiki/A%20b%3Cc%3E"
    assert rdf.safe_iri("not an iri") is None
    assert rdf.revision_base_for("https://fr.wikipedia.org/wiki/") == "https://fr.wikipedia.org/w/index.php?oldid="
    assert rdf.revision_base_for("https://example.org/pages/") is None


def test_writer_is_deterministic_and_removes_stale_chunks(edges, concepts, tmp_path):
    a = _write(edges, concepts, tmp_path)
    first = {p.name: p.read_bytes() for p in a.ntriples} | {"ttl": a.turtle.read_bytes()}
    (tmp_path / "nt" / "causal_kg-00099.nt").write_text("stale\n", encoding="utf-8")
    b = _write(edges, concepts, tmp_path)
    assert {p.name: p.read_bytes() for p in b.ntriples} | {"ttl": b.turtle.read_bytes()} == first
    assert not (tmp_path / "nt" / "causal_kg-00099.nt").exists()


def test_empty_kg_writes_valid_empty_files(concepts, tmp_path):
    files = _write([], concepts, tmp_path)
    assert files.triples == 0 and len(files.ntriples) == 1
    assert rdf.count_with_oxigraph(files.turtle) == 0
    assert files.ntriples[0].read_text(encoding="utf-8") == ""


# --- the real WikiCausal files ---------------------------------------------------------------


def _reference_pairs(path: Path) -> tuple[set, set]:
    """Class and instance pairs as WikiCausal's recall script reads a KG file (either shape)."""
    classes, instances = set(), set()
    for line in path.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        source = obj["event"]["id"] if "event" in obj else obj["cause"]["id"][0]
        if "effect" in obj:
            obj["consequences"] = [{"id": obj["effect"]["id"][0], "label": obj["effect"]["label"]}]
        for c in obj["consequences"]:
            classes.add((source, c["id"]))
            for e in c.get("examples") or []:
                instances.add((e["cause"]["id"], e["effect"]["id"]))
    return classes, instances


@pytest.mark.parametrize("name,model", [
    ("base-kg-v1.jsonl", BaseKGLine),
    ("causenet-full-linked-v1.jsonl", FlatPair),
    ("causenet-precision-linked-v1.jsonl", FlatPair),
])
def test_wikicausal_files_round_trip_through_our_contracts(name, model, tmp_path):
    from causalkg.core.jsonl import write_jsonl

    src = WIKICAUSAL / name
    records = list(read_jsonl(src, model))
    out = tmp_path / name
    write_jsonl(out, (r.model_dump(mode="json", exclude_unset=True) for r in records))
    original = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()]
    assert [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()] == original
    assert _reference_pairs(out) == _reference_pairs(src)


def test_base_kg_rdf_holds_every_reference_pair(tmp_path):
    lines = list(read_jsonl(WIKICAUSAL / "base-kg-v1.jsonl", BaseKGLine))
    files = rdf.write_rdf(rdf.base_kg_blocks(lines, rdf.RdfOptions()), turtle=tmp_path / "b.ttl",
                          nt_dir=tmp_path / "nt", nt_stem="base_kg", chunk_triples=1000)
    rdf.verify_rdf(files)
    g = Graph().parse(files.turtle, format="turtle")
    pairs = {(str(s).rsplit("/", 1)[1], str(o).rsplit("/", 1)[1]) for s, o in g.subject_objects(rdf.CK.causes)}
    classes, instances = _reference_pairs(WIKICAUSAL / "base-kg-v1.jsonl")
    assert len(classes) == 427  # as SOURCE.md says
    assert pairs == classes | instances
    assert g.value(rdf.WD.Q7944, RDFS.label) == Literal("earthquake", lang="en")


def test_base_kg_blocks_give_each_triple_once_in_order_whatever_the_block_size(monkeypatch):
    """The Base KG's triples, deduplicated by plain keys and cut into blocks of at most about
    BASE_KG_BLOCK triples, are exactly the first occurrences of the triples every line states."""
    lines = list(read_jsonl(WIKICAUSAL / "base-kg-v1.jsonl", BaseKGLine))
    opts = rdf.RdfOptions()
    stated = []
    for line in lines:
        for ev_c in line.consequences:
            for qid, label, kind in [(line.event.id, line.event.label, rdf.CK.ClassConcept), (ev_c.id, ev_c.label, rdf.CK.ClassConcept)]:
                stated += [(rdf.entity(qid), RDF.type, kind)] + ([(rdf.entity(qid), RDFS.label, Literal(label, lang="en"))] if label else [])
            stated.append((rdf.entity(line.event.id), rdf.CK.causes, rdf.entity(ev_c.id)))
            for ex in ev_c.examples:
                for end in (ex.cause, ex.effect):
                    stated += [(rdf.entity(end.id), RDF.type, rdf.CK.InstanceConcept)]
                    stated += [(rdf.entity(end.id), RDFS.label, Literal(end.label, lang="en"))] if end.label else []
                stated.append((rdf.entity(ex.cause.id), rdf.CK.causes, rdf.entity(ex.effect.id)))
    first = list(dict.fromkeys(stated))
    assert len(first) < len(stated)  # the bundled Base KG repeats its concepts
    whole = [t for b in rdf.base_kg_blocks(lines, opts) for t in b]
    assert whole == first
    monkeypatch.setattr(rdf, "BASE_KG_BLOCK", 7)
    blocks = list(rdf.base_kg_blocks(lines, opts))
    assert [t for b in blocks for t in b] == first
    assert len(blocks) > len(lines) and max(map(len, blocks)) <= 7 + 4  # a consequence or an example adds 5 at most


# --- the writer's own Turtle and N-Triples: rdflib's bytes, rdflib's fallback --------------------

def _shapes() -> list[rdf.Triple]:
    """A batch of every shape the KG's triples take, and the awkward corners of them."""
    wd, ck, e = rdf.WD, rdf.CK, URIRef(rdf.RESOURCE_BASE + "edge/Q1_Q2")
    from decimal import Decimal

    from rdflib.namespace import DCTERMS, PROV, SDO, XSD
    mentions = [rdf.mention_iri(h) for h in ("00000000000000000001", "0a1b2c3d4e5f60718293", "ffffffffffffffffffff")]
    return [
        (wd.Q1, RDF.type, ck.ClassConcept), (wd.Q1, RDFS.label, Literal("war", lang="en")),
        (wd.Q2, RDFS.label, Literal('the "Great" war\nand after"', lang="en")),
        (wd.Q1, ck.causes, wd.Q2), (wd.Q3, ck.causes, wd.Q2), (wd.Q2, ck.seedClass, wd.Q1),
        (e, RDF.type, ck.CausalEdge), (e, ck.cause, wd.Q1), (e, ck.effect, wd.Q2),
        *[(e, PROV.wasDerivedFrom, m) for m in reversed(mentions)],
        (e, ck.liftedFrom, URIRef(rdf.RESOURCE_BASE + "edge/Q3_Q2")),
        (e, ck.bestScore, Literal(Decimal("0.5"), datatype=XSD.decimal)),
        (e, ck.meanScore, Literal(Decimal("1"), datatype=XSD.decimal)),
        (e, ck.mentionCount, Literal(3, datatype=XSD.integer)),
        (mentions[0], SDO.text, Literal('he said """so""" \\ and "ended"')),
        (mentions[0], ck.question, Literal("Tab\there, 関東大震災, é")),
        (mentions[0], DCTERMS.source, URIRef("https://en.wikipedia.org/wiki/Battle_of_X_(1914)")),
        (mentions[0], PROV.wasQuotedFrom, URIRef("https://en.wikipedia.org/w/index.php?oldid=12")),
        (mentions[1], ck.section, Literal("")), (mentions[1], ck.causeStart, Literal(0, datatype=XSD.integer)),
        (mentions[1], ck.effectText, Literal("2\r\n3")),
        # prefixed names rdflib escapes or refuses: parentheses, a bare %, a final dot
        (URIRef(str(wd) + "Q4_(x)"), ck.causes, URIRef(str(ck) + "50%off")),
        (URIRef(str(ck) + "ends."), RDF.type, ck.Thing),
        (URIRef(str(ck)), RDFS.label, Literal("the namespace itself")),
        (URIRef("http://example.org/no/prefix#here"), ck.causes, wd.Q1),
    ]


def test_the_writer_writes_the_bytes_rdflib_writes(edges, concepts):
    """The writer renders a batch itself, much faster than rdflib's serialisers; what it writes
    must be what they write, byte for byte, on the fixture KG, the bundled Base KG and the shapes above."""
    batches = [_shapes()]
    batches += list(rdf._batches(rdf.kg_blocks(edges, concepts, rdf.RdfOptions()), 200))
    lines = list(read_jsonl(WIKICAUSAL / "base-kg-v1.jsonl", BaseKGLine))[:300]
    batches += list(rdf._batches(rdf.base_kg_blocks(lines, rdf.RdfOptions()), 500))
    assert len(batches) > 5
    for batch in batches:
        ours = rdf._BatchWriter().render(batch, ttl=True, nt=True)
        assert ours == rdf._rdflib_batch(batch, ttl=True, nt=True)
    # and what it writes parses back to the same graph
    ttl = Graph().parse(data=rdf._HEADER + ours[0], format="turtle")
    assert isomorphic(ttl, rdf.graph_of([batch]))


@pytest.mark.parametrize("odd", [
    ("blank node", lambda: [(rdf.WD.Q1, rdf.CK.causes, __import__("rdflib").BNode("b1"))]),
    ("rdfs:Class", lambda: [(rdf.WD.Q1, RDF.type, RDFS.Class)]),
    ("rdf:nil", lambda: [(rdf.WD.Q1, rdf.CK.causes, RDF.nil)]),
    ("unprefixed predicate", lambda: [(rdf.WD.Q1, URIRef("http://example.org/p"), rdf.WD.Q2)]),
    ("two literals", lambda: [(rdf.WD.Q1, RDFS.label, Literal("a")), (rdf.WD.Q1, RDFS.label, Literal("b", lang="en"))]),
], ids=lambda o: o[0])
def test_what_the_writer_does_not_render_goes_to_rdflib(odd):
    batch = odd[1]() + [(rdf.WD.Q9, rdf.CK.causes, rdf.WD.Q8)]
    with pytest.raises(rdf._Fallback):
        rdf._BatchWriter().render(batch, ttl=True, nt=True)
    assert rdf._render_batch(batch, ttl=True, nt=True) == rdf._rdflib_batch(batch, ttl=True, nt=True)


def test_a_duplicate_triple_is_an_error_on_either_path():
    t = (rdf.WD.Q1, rdf.CK.causes, rdf.WD.Q2)
    for render in (lambda b: rdf._BatchWriter().render(b, ttl=True, nt=True),
                   lambda b: rdf._rdflib_batch(b, ttl=True, nt=True)):
        with pytest.raises(rdf.StoreError, match="duplicate"):
            render([t, (rdf.WD.Q1, rdf.CK.causes, URIRef(str(rdf.WD.Q2)))])


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1e"])
@pytest.mark.parametrize("fallback", [False, True], ids=["writer", "rdflib"])
def test_a_sentence_with_a_unicode_line_break_is_written_whole(sep, fallback, tmp_path):
    """Wikipedia text holds U+2028 and the like. Turtle and N-Triples allow them raw in a string,
    but Python's str.splitlines() splits at them: a writer that cut its output into lines with it
    broke the literal in two and wrote files Oxigraph refused."""
    text = f"The flood{sep}caused the famine."
    s = rdf.mention_iri("0123456789abcdef0123")
    block = [(s, rdf.SDO.text, Literal(text)), (s, rdf.CK.causes, rdf.WD.Q2)]
    if fallback:
        block.append((s, rdf.CK.note, __import__("rdflib").BNode("x")))
    files = rdf.write_rdf([block], turtle=tmp_path / "k.ttl", nt_dir=tmp_path / "nt")
    rdf.verify_rdf(files)
    for path, fmt in ((files.turtle, pyoxigraph.RdfFormat.TURTLE), (files.ntriples[0], pyoxigraph.RdfFormat.N_TRIPLES)):
        texts = [t.object.value for t in pyoxigraph.parse(path=str(path), format=fmt) if t.predicate.value == str(rdf.SDO.text)]
        assert texts == [text]
