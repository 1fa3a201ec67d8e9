"""The ``/sparql`` endpoint as SPARQL clients see it: content negotiation of results (JSON, XML,
CSV, TSV) and graphs (N-Triples, Turtle, RDF/XML, JSON-LD), 406 for what cannot be given, opt-in
CORS, and real clients (SPARQLWrapper, rdflib's SPARQLStore) against a real ``causalkg serve``
on 127.0.0.1 over the fixture KG."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.compare import isomorphic
from starlette.testclient import TestClient

from causalkg.web.app import create_app
from causalkg.web.sparql import QueryError, negotiate
from tests.web.server import ServeProcess

ALLOWED = "http://yasgui.127.0.0.1.example:8080"
PREFIXES = ("PREFIX wd: <http://www.wikidata.org/entity/>\nPREFIX ck: <https://w3id.org/causalkg/ns#>\n"
            "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n")
Q_EFFECTS = PREFIXES + "SELECT ?x ?label WHERE { wd:Q7944 ck:causes ?x . ?x rdfs:label ?label } ORDER BY ?label"
Q_ASK = PREFIXES + "ASK { wd:Q7944 ck:causes wd:Q8070 }"
Q_CONSTRUCT = PREFIXES + ("CONSTRUCT { wd:Q7944 ck:causes ?x . ?x rdfs:label ?l } "
                          "WHERE { wd:Q7944 ck:causes ?x . ?x rdfs:label ?l }")
EFFECTS = ["death", "train wreck", "tsunami"]


@pytest.fixture(scope="module")
def server(kg_project, tmp_path_factory):
    root, _ = kg_project
    judgements = tmp_path_factory.mktemp("sparqlj") / "j.jsonl"
    with ServeProcess(root / "data", "--quiet", "--judgements", str(judgements),
                      sets=(f'web.cors_origins=["{ALLOWED}"]',)) as srv:
        yield srv


def _request(url: str, method: str = "GET", data: bytes | None = None, **headers: str):
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode("utf-8")


def _sparql_url(srv, **params: str) -> str:
    return srv.url + "/sparql?" + urllib.parse.urlencode(params)


# --- negotiation rules -----------------------------------------------------------------------

@pytest.mark.parametrize("kind,accept,fmt,expected", [
    ("select", "", "", "json"),
    ("select", "*/*", "", "json"),
    ("select", "application/sparql-results+xml", "", "xml"),
    ("select", "text/csv;q=0.5, application/sparql-results+xml;q=0.9", "", "xml"),
    ("select", "application/sparql-results+json;q=0, */*", "", "xml"),
    ("select", "text/csv, */*;q=0.1", "", "csv"),
    ("select", "application/json", "", "json"),
    ("select", "text/csv", "xml", "xml"),  # format= wins over Accept
    ("select", "", "text/tab-separated-values", "tsv"),
    ("ask", "application/xml", "", "xml"),
    ("ask", "text/csv;q=0.9, application/sparql-results+json;q=0.1", "", "json"),
    ("graph", "", "", "nt"),
    ("graph", "text/turtle", "", "turtle"),
    ("graph", "application/rdf+xml", "", "rdfxml"),
    ("graph", "application/ld+json", "", "jsonld"),
    ("graph", "application/n-triples;q=0.2, text/turtle;q=0.8", "", "turtle"),
    ("graph", "", "xml", "rdfxml"),  # SPARQLWrapper's format=xml on a CONSTRUCT
    ("graph", "", "rdf xml", "rdfxml"),  # format=rdf+xml with its '+' unescaped in the URL
    ("graph", "", "json-ld", "jsonld"),
])
def test_negotiation_picks_the_best_format(kind, accept, fmt, expected):
    assert negotiate(kind, accept, fmt)[0] == expected


@pytest.mark.parametrize("kind,accept,fmt,names", [
    ("select", "image/png", "", "application/sparql-results+xml, text/csv"),
    ("select", "application/sparql-results+json;q=0", "", "application/sparql-results+json"),
    ("ask", "text/csv", "", "application/sparql-results+json, application/sparql-results+xml"),
    ("ask", "", "tsv", "application/sparql-results+xml"),
    ("graph", "application/sparql-results+json", "", "text/turtle, application/rdf+xml, application/ld+json"),
    ("graph", "", "csv", "application/n-triples"),
])
def test_nothing_acceptable_is_a_406_naming_what_can_be_given(kind, accept, fmt, names):
    with pytest.raises(QueryError) as err:
        negotiate(kind, accept, fmt)
    assert err.value.status == 406 and names in str(err.value)


# --- the endpoint (in process) ---------------------------------------------------------------

def test_select_as_xml_csv_tsv_and_ask_as_xml(client):
    r = client.get("/sparql", params={"query": Q_EFFECTS}, headers={"Accept": "application/sparql-results+xml"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/sparql-results+xml")
    assert r.text.count("<result>") == 3 and '<literal xml:lang="en">train wreck</literal>' in r.text
    r = client.get("/sparql", params={"query": Q_EFFECTS, "format": "tsv"})
    assert r.headers["content-type"].startswith("text/tab-separated-values")
    assert r.text.splitlines()[0] == "?x\t?label"
    r = client.get("/sparql", params={"query": Q_ASK}, headers={"Accept": "text/xml"})
    assert r.status_code == 200 and "<boolean>true</boolean>" in r.text


@pytest.mark.parametrize("query,headers,params", [
    (Q_ASK, {"Accept": "text/csv"}, {}),
    (Q_ASK, {}, {"format": "tsv"}),
    (Q_EFFECTS, {"Accept": "image/png"}, {}),
    (Q_CONSTRUCT, {"Accept": "application/sparql-results+json"}, {}),
])
def test_the_endpoint_answers_406_in_one_line(client, query, headers, params):
    r = client.get("/sparql", params={"query": query, **params}, headers=headers)
    assert r.status_code == 406
    assert r.text.count("\n") == 1 and r.text.startswith("error: ") and "can be given as" in r.text
    assert "_askResult" not in r.text


def test_no_cors_headers_unless_configured(client):
    r = client.get("/sparql", params={"query": Q_ASK}, headers={"Origin": ALLOWED})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    r = client.options("/sparql", headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in r.headers


def test_updates_stay_refused_whatever_is_accepted(client):
    r = client.get("/sparql", params={"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"},
                   headers={"Accept": "application/sparql-results+xml"})
    assert r.status_code == 403 and "updates are refused" in r.text


# --- real clients against a real server -------------------------------------------------------

def test_sparqlwrapper_select_in_its_default_xml_and_in_json(server):
    from SPARQLWrapper import JSON, SPARQLWrapper

    sw = SPARQLWrapper(server.url + "/sparql")
    sw.setQuery(Q_EFFECTS)
    res = sw.query()  # XML is SPARQLWrapper's default
    assert res.info()["content-type"].startswith("application/sparql-results+xml")
    doc = res.convert()
    labels = [lit.firstChild.data for lit in doc.getElementsByTagName("literal")]
    assert labels == EFFECTS
    sw.setReturnFormat(JSON)
    out = sw.query().convert()
    assert [b["label"]["value"] for b in out["results"]["bindings"]] == EFFECTS
    assert out["results"]["bindings"][0]["label"]["xml:lang"] == "en"


def test_sparqlwrapper_ask_in_xml(server):
    from SPARQLWrapper import SPARQLWrapper

    sw = SPARQLWrapper(server.url + "/sparql")
    sw.setQuery(Q_ASK)
    doc = sw.query().convert()
    assert doc.getElementsByTagName("boolean")[0].firstChild.data == "true"


def _reference_graph(server) -> Graph:
    """The CONSTRUCT answer in N-Triples (written without rdflib), parsed."""
    status, headers, body = _request(_sparql_url(server, query=Q_CONSTRUCT), Accept="application/n-triples")
    assert status == 200 and headers["content-type"].startswith("application/n-triples")
    g = Graph().parse(data=body, format="nt")
    assert len(g) == 6 and (None, None, Literal("tsunami", lang="en")) in g
    return g


def test_sparqlwrapper_construct_in_turtle_is_the_same_graph(server):
    from SPARQLWrapper import TURTLE, SPARQLWrapper

    sw = SPARQLWrapper(server.url + "/sparql")
    sw.setQuery(Q_CONSTRUCT)
    sw.setReturnFormat(TURTLE)
    res = sw.query()
    assert res.info()["content-type"].startswith("text/turtle")
    body = res.convert()
    got = Graph().parse(data=body.decode("utf-8") if isinstance(body, bytes) else body, format="turtle")
    assert isomorphic(got, _reference_graph(server))


@pytest.mark.parametrize("accept,media,rdflib_format", [
    ("text/turtle", "text/turtle", "turtle"),
    ("application/rdf+xml", "application/rdf+xml", "xml"),
    ("application/ld+json", "application/ld+json", "json-ld"),
    ("application/rdf+xml;q=0.3, application/ld+json;q=0.7", "application/ld+json", "json-ld"),
])
def test_construct_is_negotiated_and_parses_back_isomorphic(server, accept, media, rdflib_format):
    status, headers, body = _request(_sparql_url(server, query=Q_CONSTRUCT), Accept=accept)
    assert status == 200 and headers["content-type"].startswith(media)
    assert isomorphic(Graph().parse(data=body, format=rdflib_format), _reference_graph(server))


def test_rdflib_sparqlstore_select_and_ask(server):
    from rdflib.plugins.stores.sparqlstore import SPARQLStore

    g = Graph(store=SPARQLStore(server.url + "/sparql"))
    rows = list(g.query(Q_EFFECTS))
    assert [str(r.label) for r in rows] == EFFECTS
    assert all(isinstance(r.x, URIRef) and str(r.x).startswith("http://www.wikidata.org/entity/Q") for r in rows)
    assert rows[0].label.language == "en"
    assert g.query(Q_ASK).askAnswer is True
    assert g.query(PREFIXES + "ASK { wd:Q8070 ck:causes wd:Q7944 }").askAnswer is False


def test_cors_preflight_and_headers_for_listed_origins_only(server):
    preflight = {"Origin": ALLOWED, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    status, headers, _ = _request(server.url + "/sparql", method="OPTIONS", **preflight)
    assert status == 204 and headers["access-control-allow-origin"] == ALLOWED
    assert "POST" in headers["access-control-allow-methods"]
    assert "content-type" in headers["access-control-allow-headers"].lower()
    status, headers, _ = _request(server.url + "/sparql", method="OPTIONS",
                                  **{**preflight, "Origin": "http://other.example"})
    assert status == 204 and "access-control-allow-origin" not in {k.lower() for k in headers}
    status, headers, body = _request(server.url + "/sparql", method="POST", data=Q_ASK.encode(),
                                     **{"Origin": ALLOWED, "Content-Type": "application/sparql-query",
                                        "Accept": "application/sparql-results+json"})
    assert status == 200 and json.loads(body)["boolean"] is True
    assert headers["access-control-allow-origin"] == ALLOWED and "Origin" in headers["vary"]
    assert "X-Results-Truncated" in headers["access-control-expose-headers"]
    # a listed origin may query, not judge: the judgement POST keeps its same-site check
    status, _, _ = _request(server.url + "/edge/Q7944_Q8070/judge", method="POST",
                            data=b"verdict=wrong&judge=x&mention_id=m",
                            **{"Origin": ALLOWED, "Content-Type": "application/x-www-form-urlencoded"})
    assert status == 403


def test_a_real_server_refuses_what_it_cannot_give(server):
    status, _, body = _request(_sparql_url(server, query=Q_ASK), Accept="text/csv")
    assert status == 406 and body.count("\n") == 1 and "application/sparql-results+xml" in body
    status, _, body = _request(_sparql_url(server, query="DROP ALL"))
    assert status == 403 and "updates are refused" in body


# --- warm query processes ---------------------------------------------------------------------

def test_a_warm_worker_is_reused_and_replaced_after_a_runaway_query(kg_project, tmp_path):
    _, cfg = kg_project
    # the limit counts from the job being sent, not from a new worker's start-up
    # The queries that must answer get a limit no loaded machine reaches; only the runaway (a
    # four-way cross product that never ends) runs under a short one.
    app = create_app(cfg, judgements=str(tmp_path / "j.jsonl"), query_timeout=600.0)
    settings = app.state.web.s
    pool = app.state.web.pool
    with TestClient(app) as c:
        for _ in range(3):
            assert c.get("/sparql", params={"query": Q_ASK}).json()["boolean"] is True
        assert pool.started == 1 and len(pool.idle) == 1
        first = pool.idle[0].proc
        settings.query_timeout = 3.0
        r = c.get("/sparql", params={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"})
        settings.query_timeout = 600.0
        assert r.status_code == 504 and "time limit" in r.text
        assert first.poll() is not None and pool.idle == []  # the runaway worker was killed
        r = c.get("/sparql", params={"query": Q_EFFECTS, "format": "csv"})
        assert r.status_code == 200 and len(r.text.splitlines()) == 4
        assert pool.started == 2
        first_again = pool.idle[0].proc
        first_again.kill()  # a worker that died while idle is replaced on the next query
        first_again.wait()
        assert c.get("/sparql", params={"query": Q_ASK}).json()["boolean"] is True
        assert pool.started == 3
        workers = [w.proc for w in pool.idle]
    assert all(p.poll() is not None for p in workers)  # the app's shutdown ends its idle workers
