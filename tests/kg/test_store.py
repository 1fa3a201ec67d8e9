"""The embedded Oxigraph store (kg/store.py): export, atomic replacement, skipping, queries
(the ones in docs/kg.md, run and checked), output formats and error messages."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pyoxigraph
import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import KGMention
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.jsonl import read_jsonl
from causalkg.kg import assemble as A
from causalkg.kg.kgfiles import read_edges
from causalkg.kg import stats as S
from causalkg.kg import store as K

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"
BASE = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"
KG_GRAPH = "https://w3id.org/causalkg/graph/kg"
BASE_GRAPH = "https://w3id.org/causalkg/graph/base-kg"


def _project(root: Path, linked: Path = FIX / "linked.jsonl", **overrides) -> object:
    """A data folder with the fixture KG assembled and the Base KG in place; returns the config."""
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(root / "data"), **overrides})
    (root / "data" / "wikidata").mkdir(parents=True, exist_ok=True)
    shutil.copy(BASE, root / "data" / "wikidata" / "base_kg.jsonl")
    A.assemble(cfg, linked=linked, concepts=FIX / "concepts.jsonl")
    return cfg


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    cfg = _project(root)
    K.export(cfg)
    return root, cfg


def _quads(cfg) -> list[str]:
    st = pyoxigraph.Store.read_only(str(K.store_dir(cfg) / "oxigraph"))
    try:
        return sorted(str(q) for q in st)
    finally:
        del st


def test_export_loads_both_graphs_with_the_written_counts(project):
    root, cfg = project
    manifest = json.loads((root / "data" / "kg" / "manifest.json").read_text())
    counts = K.store_counts(cfg)
    assert counts[KG_GRAPH] == manifest["counts"]["triples"] > 300
    assert counts[BASE_GRAPH] > 1000
    store_manifest = json.loads((root / "data" / "store" / "manifest.json").read_text())
    assert store_manifest["outputs"]["graphs"] == counts
    assert store_manifest["target"] == "oxigraph.v1"  # the registry's export target, by versioned name
    assert not any(g.endswith("#staging") for g in counts)


def test_export_twice_gives_the_same_store(tmp_path):
    cfg = _project(tmp_path)
    first = K.export(cfg)
    before = _quads(cfg)
    again = K.export(cfg)
    assert again.skipped and again.graphs == first.graphs
    forced = K.export(cfg, force=True)
    assert not forced.skipped
    assert _quads(cfg) == before  # replaced, not added to
    # a changed KG replaces the graph: lifted edges are gone, nothing of the old one is left
    A.assemble(cfg.with_overrides({"kg.lift": "none"}), linked=FIX / "linked.jsonl", concepts=FIX / "concepts.jsonl")
    K.export(cfg)
    after = K.query(cfg, "ASK { edge:Q7944_Q1078765 ?p ?o }")
    assert after.boolean is False
    manifest = json.loads((tmp_path / "data" / "kg" / "manifest.json").read_text())
    assert K.store_counts(cfg)[KG_GRAPH] == manifest["counts"]["triples"]


def test_a_staging_graph_left_by_a_killed_export_is_discarded(tmp_path):
    cfg = _project(tmp_path)
    K.export(cfg)
    st = pyoxigraph.Store(str(K.store_dir(cfg) / "oxigraph"))
    junk = pyoxigraph.NamedNode("http://example.org/junk")
    st.add(pyoxigraph.Quad(junk, junk, pyoxigraph.Literal("half-loaded"), pyoxigraph.NamedNode(KG_GRAPH + "#staging")))
    del st
    K.export(cfg, force=True)
    counts = K.store_counts(cfg)
    assert KG_GRAPH + "#staging" not in counts
    assert K.query(cfg, 'ASK { ?s ?p "half-loaded" }', union=True).boolean is False


def test_export_keeps_the_graphs_it_does_not_replace(tmp_path):
    """The new generation is a new database: the KG and Base KG graphs are bulk-loaded into it
    fresh, and every other graph of the current store (a user's named graph, the default graph,
    blank nodes shared by two triples) is copied over unchanged."""
    cfg = _project(tmp_path)
    K.export(cfg)
    st = pyoxigraph.Store(str(K.store_dir(cfg) / "oxigraph"))
    ex = "http://example.org/"
    mine, b = pyoxigraph.NamedNode(ex + "mine"), pyoxigraph.BlankNode()
    st.add(pyoxigraph.Quad(pyoxigraph.NamedNode(ex + "s"), pyoxigraph.NamedNode(ex + "p"), b, mine))
    st.add(pyoxigraph.Quad(b, pyoxigraph.NamedNode(ex + "q"), pyoxigraph.Literal("kept ü"), mine))
    st.add(pyoxigraph.Quad(pyoxigraph.NamedNode(ex + "d"), pyoxigraph.NamedNode(ex + "p"), pyoxigraph.Literal("default")))
    st.flush()
    del st
    A.assemble(cfg.with_overrides({"kg.lift": "none"}), linked=FIX / "linked.jsonl", concepts=FIX / "concepts.jsonl")
    K.export(cfg)
    counts = K.store_counts(cfg)
    assert counts[ex + "mine"] == 2
    manifest = json.loads((tmp_path / "data" / "kg" / "manifest.json").read_text())
    assert counts[KG_GRAPH] == manifest["counts"]["triples"]
    joined = K.query(cfg, 'ASK { GRAPH <http://example.org/mine> { <http://example.org/s> <http://example.org/p> ?b . '
                          '?b <http://example.org/q> "kept ü" } }', union=False)
    assert joined.boolean is True  # the blank node still joins the two triples
    assert '<http://example.org/d> <http://example.org/p> "default"' in "\n".join(_quads(cfg))  # the default graph


def test_load_graph_replaces_a_graph_that_holds_triples_in_place(tmp_path):
    """Into a store whose graph already holds triples, load_graph replaces it atomically
    (staging graph + MOVE): the old triples are gone, the count checked, no staging left."""
    cfg = _project(tmp_path)
    plan = K.plan_export(cfg, with_base_kg=False)
    try:
        st = pyoxigraph.Store()
        g = plan.graphs[0]
        st.add(pyoxigraph.Quad(pyoxigraph.NamedNode("http://example.org/old"), pyoxigraph.NamedNode("http://example.org/p"),
                               pyoxigraph.Literal("old"), pyoxigraph.NamedNode(g.graph)))
        assert K.load_graph(st, g) == g.triples
        assert K.load_graph(st, g) == g.triples  # again: replaced, not added to
        assert not list(st.quads_for_pattern(pyoxigraph.NamedNode("http://example.org/old"), None, None))
        assert [n.value for n in st.named_graphs()] == [g.graph]
    finally:
        plan.cleanup()


def test_load_graph_loads_in_slices_and_names_a_bad_line(tmp_path, monkeypatch):
    """The export bulk-loads each N-Triples file in slices of BULK_LOAD_LINES lines (memory
    bounded by the slice): every triple lands; a line Oxigraph cannot parse is named as
    file:line in the whole file, and the half-loaded graph is removed."""
    cfg = _project(tmp_path)
    monkeypatch.setattr(K, "BULK_LOAD_LINES", 7)
    plan = K.plan_export(cfg, with_base_kg=False)
    try:
        g = plan.graphs[0]
        assert g.triples > 3 * 7
        st = pyoxigraph.Store()
        assert K.load_graph(st, g) == g.triples
        broken = tmp_path / "broken.nt"
        lines = g.files[0].read_text(encoding="utf-8").splitlines(keepends=True)
        lines[16] = '<http://example.org/s> <http://example.org/p> "unclosed .\n'  # line 17
        broken.write_text("".join(lines), encoding="utf-8")
        fresh = pyoxigraph.Store()
        with pytest.raises(K.StoreError, match=rf"{re.escape(str(broken))}:17: Oxigraph cannot parse it"):
            K.load_graph(fresh, K.GraphFiles(g.graph, [broken], g.triples, "x"))
        assert not list(fresh)
    finally:
        plan.cleanup()


def _doc_queries() -> dict[str, str]:
    text = (REPO / "docs" / "kg.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sparql\n(.*?)```", text, flags=re.S)
    out = {}
    for b in blocks:
        name = re.match(r"# query: (\S+)", b)
        assert name, f"every sparql block in docs/kg.md is named: {b[:60]}"
        out[name.group(1)] = b
    return out


def test_the_documented_queries_answer_correctly(project):
    _, cfg = project
    queries = _doc_queries()
    assert set(queries) == {"earthquake-effects", "causes-of-event", "edge-evidence", "confirmed-by-base-kg"}

    rows = K.query(cfg, queries["earthquake-effects"]).values()
    assert rows[0] == {"effect": "http://www.wikidata.org/entity/Q8070", "label": "tsunami", "sentences": 2}
    assert {r["label"] for r in rows} == {"tsunami", "train wreck", "death"}

    rows = K.query(cfg, queries["causes-of-event"]).values()
    assert rows == [{"cause": "http://www.wikidata.org/entity/Q130754", "label": "2004 Indian Ocean earthquake",
                     "level": "instance"}]

    rows = K.query(cfg, queries["edge-evidence"]).values()
    assert [r["effect"] for r in rows] == ["a series of devastating tsunamis", "Tsunamis"]
    assert rows[0]["score"] == 0.93 and rows[0]["page"] == "https://en.wikipedia.org/wiki/2004_Indian_Ocean_earthquake"
    # a lifted edge's evidence is its instance edge's sentence
    lifted = K.query(cfg, queries["edge-evidence"].replace("wd:Q8070", "wd:Q1078765")).values()
    assert [r["cause"] for r in lifted] == ["The tsunami"]

    rows = K.query(cfg, queries["confirmed-by-base-kg"]).values()
    edges = read_edges(Path(cfg.path("paths.data")) / "kg" / "causal_kg_pairs.jsonl")
    expected = S.confirmed_edges(list(edges), S.base_pairs(BASE))
    assert {(r["causeLabel"], r["effectLabel"]) for r in rows} == {(e.cause.label, e.effect.label) for e in expected}
    assert ("2004 Indian Ocean earthquake", "2004 Sri Lanka tsunami-rail disaster") in {
        (r["causeLabel"], r["effectLabel"]) for r in rows}
    assert ("earthquake", "tsunami") in {(r["causeLabel"], r["effectLabel"]) for r in rows}


def test_tricky_sentence_survives_the_store(tmp_path):
    merged = tmp_path / "linked.jsonl"
    merged.write_text((FIX / "linked.jsonl").read_text(encoding="utf-8") + (FIX / "tricky.jsonl").read_text(encoding="utf-8"),
                      encoding="utf-8")
    cfg = _project(tmp_path, linked=merged)
    K.export(cfg)
    tricky = next(read_jsonl(FIX / "tricky.jsonl", KGMention))
    res = K.query(cfg, "SELECT ?t ?q WHERE { ?m ck:extractor \"llm\" ; schema:text ?t ; ck:question ?q }")
    assert res.values() == [{"t": tricky.sentence.text, "q": tricky.question}]
    out = json.loads(K.format_result(res, "json"))
    assert out["results"]["bindings"][0]["t"] == {"type": "literal", "value": tricky.sentence.text}


def test_query_cli_formats(cli, project):
    root, _ = project
    q = "SELECT ?label WHERE { wd:Q7944 ck:causes ?e . ?e rdfs:label ?label } ORDER BY ?label"
    r = cli("kg", "query", q, cwd=root)
    assert r.code == 0, r.err
    assert r.out.splitlines() == ["label", "death", "train wreck", "tsunami"]
    r = cli("kg", "query", q, "--format", "csv", cwd=root)
    assert list(csv.reader(io.StringIO(r.out))) == [["label"], ["death"], ["train wreck"], ["tsunami"]]
    r = cli("kg", "query", q, "--format", "json", cwd=root)
    doc = json.loads(r.out)
    assert doc["head"]["vars"] == ["label"]
    assert doc["results"]["bindings"][2]["label"] == {"type": "literal", "value": "tsunami", "xml:lang": "en"}
    r = cli("kg", "query", q, "--format", "md", cwd=root)
    assert r.out.splitlines()[:3] == ["| label |", "|---|", "| death |"]
    r = cli("kg", "query", "ASK { wd:Q7944 ck:causes wd:Q8070 }", cwd=root)
    assert r.out.strip() == "true"
    r = cli("kg", "query", "CONSTRUCT { wd:Q7944 ck:causes ?e } WHERE { wd:Q7944 ck:causes ?e } ORDER BY ?e", cwd=root)
    assert "<http://www.wikidata.org/entity/Q7944> <https://w3id.org/causalkg/ns#causes> " \
           "<http://www.wikidata.org/entity/Q8070> ." in r.out.splitlines()
    # the Base KG graph, and the union
    r = cli("kg", "query", f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{BASE_GRAPH}> {{ wd:Q7944 ck:causes ?e }} }}", cwd=root)
    assert r.out.splitlines()[1].strip() == "20"
    qfile = root / "q.rq"
    qfile.write_text("SELECT ?n WHERE { BIND(1 AS ?n) }", encoding="utf-8")
    r = cli("kg", "query", "--file", qfile, cwd=root)
    assert r.out.splitlines() == ["n", "1"]


def test_query_cli_errors(cli, project, tmp_path):
    root, _ = project
    r = cli("kg", "query", "SELEKT nothing", cwd=root)
    assert r.code == 2 and r.err.startswith("error: the query is not valid SPARQL:")
    # An update gets the web endpoint's wording, whatever its prologue.
    for update, word in (("INSERT DATA { wd:Q1 ck:causes wd:Q2 }", "INSERT"),
                         ("PREFIX x: <http://x/> # note\nDELETE WHERE { ?s ?p ?o }", "DELETE")):
        r = cli("kg", "query", update, cwd=root)
        assert r.code == 2 and r.err.strip() == (f"error: updates are refused: the store is read-only to queries "
                                                 f"({word}) (the KG changes with causalkg kg assemble and "
                                                 f"causalkg kg export)")
    r = cli("kg", "query", "SELECT ?x WHERE { ?x ck:causes wd:Q0 }", cwd=root)
    assert r.code == 0 and r.out.strip() == "0 rows"
    r = cli("kg", "query", cwd=root)
    assert r.code == 2 and r.err.strip() == "error: no query given (causalkg kg query 'SELECT ...' or --file query.rq)"
    r = cli("kg", "query", "ASK {}", cwd=tmp_path)
    assert r.code == 1
    assert r.err.strip() == f"error: no triple store in {tmp_path}/data/store/oxigraph (run causalkg kg export)"


def test_export_cli(cli, tmp_path):
    r = cli("kg", "export", cwd=tmp_path)
    assert r.code == 1 and r.err.strip() == f"error: no assembled KG in {tmp_path}/data/kg (run causalkg kg assemble)"
    cfg = _project(tmp_path)
    manifest = json.loads((tmp_path / "data" / "kg" / "manifest.json").read_text())
    r = cli("kg", "export", "--dry-run", cwd=tmp_path)
    assert r.code == 0 and r.out.splitlines()[:2] == [
        f"plan: load into {tmp_path}/data/store/oxigraph", f"  <{KG_GRAPH}>: {manifest['counts']['triples']} triples"]
    assert not (tmp_path / "data" / "store").exists()
    r = cli("kg", "export", cwd=tmp_path)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].startswith(f"{tmp_path}/data/store/oxigraph loaded in ")
    assert f"  <{KG_GRAPH}>: {manifest['counts']['triples']} triples" in r.out.splitlines()
    assert r.err == ""
    r = cli("kg", "export", cwd=tmp_path)
    assert "is up to date (--force reloads it)" in r.out
    assert r.err == "" and r.out.count("up to date") == 1  # said once
    shutil.rmtree(tmp_path / "data" / "store")
    r = cli("kg", "export", "--no-base-kg", cwd=tmp_path)
    assert BASE_GRAPH not in r.out and K.store_counts(cfg) == {KG_GRAPH: manifest["counts"]["triples"]}
    (tmp_path / "data" / "wikidata" / "base_kg.jsonl").unlink()
    r = cli("kg", "export", "--force", cwd=tmp_path)
    assert "note: no Base KG at" in r.out and "(run causalkg corpus build)" in r.out
    r = cli("kg", "export", "--graph", "not an iri", cwd=tmp_path)
    assert r.code == 2 and "kg.graph is not a valid IRI: 'not an iri'" in r.err


def test_query_and_export_api_errors(tmp_path):
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data")})
    with pytest.raises(SourceError, match="no assembled KG"):
        K.export(cfg)
    with pytest.raises(ConfigError, match="unknown format"):
        K.format_result(K.QueryResult("ask", boolean=True), "xml")


def test_the_export_target_is_chosen_through_the_registry(tmp_path):
    """``kg.target``: auto picks graph-store when an endpoint is set, else oxigraph; a named target
    is used; a wrong name, graph-store without an endpoint and an endpoint with oxigraph are
    refused before anything is read."""
    def cfg(**o):
        return load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data"), **o})

    assert K.export_target(cfg()) == "oxigraph.v1"
    assert K.export_target(cfg(), "http://127.0.0.1:9/gsp") == "graph-store.v1"
    assert K.export_target(cfg(**{"kg.endpoint": "http://127.0.0.1:9/gsp"})) == "graph-store.v1"
    assert K.export_target(cfg(**{"kg.target": "oxigraph.v1", "kg.endpoint": "http://127.0.0.1:9/gsp"})) == "oxigraph.v1"
    with pytest.raises(ConfigError, match=r"unknown kg.target 'fuseki' \(choose one of: auto, graph-store, oxigraph\)"):
        K.export(cfg(**{"kg.target": "fuseki"}))
    with pytest.raises(ConfigError, match="kg.target is graph-store but no endpoint is set"):
        K.export(cfg(**{"kg.target": "graph-store"}))
    with pytest.raises(ConfigError, match="an endpoint was given but kg.target is 'oxigraph'"):
        K.export(cfg(**{"kg.target": "oxigraph"}), endpoint="http://127.0.0.1:9/gsp")
    # Named explicitly, the embedded store loads as under auto, and says which target ran.
    c = _project(tmp_path, **{"kg.target": "oxigraph"})
    result = K.export(c, with_base_kg=False)
    assert result.backend == "oxigraph.v1" and result.graphs == K.store_counts(c)
    assert json.loads((tmp_path / "data" / "store" / "manifest.json").read_text())["target"] == "oxigraph.v1"
