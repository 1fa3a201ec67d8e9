"""The web application's pages and APIs (Starlette's TestClient) over the fixture KG and a real
Oxigraph store: search, concept and edge pages, graph and paths, the SPARQL endpoint and query
page, judgements, the queue, the report, and the error pages for what can go wrong."""

from __future__ import annotations

import csv
import io
import json
import threading
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from causalkg.core.config import load_config
from causalkg.web.app import create_app
from causalkg.web.examples import EXAMPLES

from tests.web.kgfixture import build_project

REPO = Path(__file__).resolve().parents[2]


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


# --- search ------------------------------------------------------------------------------------


def test_search_api_ranks_label_matches_and_shows_kind_qid_degree(client):
    r = client.get("/api/search", params={"q": "earthquake"})
    assert r.status_code == 200
    results = r.json()["results"]
    assert results[0] == {"qid": "Q7944", "label": "earthquake", "kind": "class", "degree": 3, "causes": 0,
                          "effects": 3, "description": None,
                          "aliases": ["earthquakes", "quake", "temblor", "earth quake", "tremor"], "classes": [],
                          "same_label": 0, "hint": "class"}
    assert "Q130754" in [x["qid"] for x in results]  # 2004 Indian Ocean earthquake: a word prefix
    # an alias, a prefix, a QID
    assert client.get("/api/search", params={"q": "temblor"}).json()["results"][0]["qid"] == "Q7944"
    assert client.get("/api/search", params={"q": "tsu"}).json()["results"][0]["label"] == "tsunami"
    assert [x["qid"] for x in client.get("/api/search", params={"q": "q8070"}).json()["results"]] == ["Q8070"]
    assert client.get("/api/search", params={"q": "zzzz"}).json()["results"] == []


def test_search_page_lists_concepts_and_escapes_the_query(client):
    r = client.get("/search", params={"q": "<script>alert(1)</script>"})
    assert r.status_code == 200
    assert "<script>alert(1)</script>" not in r.text and "&lt;script&gt;" in r.text
    r = client.get("/search", params={"q": "death"})
    assert 'href="/concept/Q4"' in r.text and "<code>Q4</code>" in r.text


# --- concept and edge pages ----------------------------------------------------------------


def test_concept_page_lists_effects_ranked_with_base_kg_marks_and_links(client):
    r = client.get("/concept/Q7944")
    assert r.status_code == 200
    html = r.text
    assert "https://www.wikidata.org/wiki/Q7944" in html
    effects = html.split('class="effects"')[1]
    # tsunami (2 sentences) before death and train wreck (1 each)
    assert effects.index("/edge/Q7944_Q8070") < effects.index("/edge/Q7944_Q4")
    row = effects.split("/edge/Q7944_Q8070")[1].split("</tr>")[0]
    assert "Base KG" in row  # Wikidata's own statements have earthquake -> tsunami
    row = effects.split("/edge/Q7944_Q4")[1].split("</tr>")[0]
    assert "Base KG" not in row
    assert "No cause of this concept" in html.split('class="causes"')[1].split("</section>")[0]


def test_concept_page_filters(client):
    effects = lambda r: r.text.split('class="effects"')[1]  # noqa: E731
    r = client.get("/concept/Q7944", params={"min_support": 2})
    assert "/edge/Q7944_Q8070" in effects(r) and "/edge/Q7944_Q4" not in effects(r)
    r = client.get("/concept/Q7944", params={"level": "instance"})
    assert "/edge/Q7944_" not in effects(r) and "with these filters" in effects(r)
    r = client.get("/concept/Q7944", params={"extractor": "qa", "min_support": "x", "level": "bogus"})
    assert r.status_code == 200 and "/edge/Q7944_Q4" in effects(r)
    r = client.get("/concept/Q7944", params={"extractor": "patterns"})  # no such extractor: no filter
    assert "/edge/Q7944_Q4" in effects(r)


def test_edge_page_highlights_spans_and_shows_provenance(client):
    r = client.get("/edge/Q7944_Q8070")
    assert r.status_code == 200
    html = r.text
    assert '<mark class="cause" title="cause">The undersea megathrust earthquake</mark>' in html
    assert '<mark class="effect" title="effect">a series of devastating tsunamis</mark>' in html
    assert "https://en.wikipedia.org/w/index.php?oldid=1001" in html
    assert "What did The undersea megathrust earthquake cause?" in html
    assert "models/causal-qa" in html and "linker candidates" in html
    assert html.count('<section class="mention') == 2


def test_lifted_edge_shows_the_instance_edges_and_their_sentences(client):
    html = client.get("/edge/Q7944_Q1078765").text
    assert 'href="/edge/Q130754_Q1312405"' in html
    assert "the lower edge" in html and '<mark class="cause"' in html
    lower = client.get("/edge/Q130754_Q1312405").text
    assert "Lifted into" in lower and "/edge/Q7944_Q1078765" in lower


def test_unknown_concept_and_edge_are_clear_404_pages(client):
    r = client.get("/concept/Q999999999")
    assert r.status_code == 404 and "is not a concept of this KG" in r.text
    r = client.get("/concept/not-a-qid")
    assert r.status_code == 404
    r = client.get("/edge/Q1_Q2")
    assert r.status_code == 404 and "Edge not found" in r.text
    r = client.get("/no/such/page")
    assert r.status_code == 404 and "Traceback" not in r.text


# --- graph and paths -----------------------------------------------------------------------


def test_graph_api_gives_the_neighbourhood_with_roles_and_support(client):
    data = client.get("/api/graph/Q8070").json()
    roles = {n["data"]["id"]: n["data"]["role"] for n in data["nodes"]}
    assert roles == {"Q8070": "center", "Q7944": "cause", "Q7692360": "cause", "Q1078765": "effect"}
    support = {e["data"]["id"]: e["data"]["support"] for e in data["edges"]}
    assert support["Q7944_Q8070"] == 2 and support["Q8070_Q1078765"] == 1
    assert client.get("/api/graph/Q1").status_code == 404
    page = client.get("/graph/Q8070").text
    assert "/static/vendor/cytoscape/cytoscape.min.js" in page and 'data-root="Q8070"' in page


def test_paths_shortest_and_best_supported(client):
    r = client.get("/paths", params={"from": "earthquake", "to": "train wreck"})
    assert r.status_code == 200
    # here the fewest steps are also the best supported: one list
    shortest = r.text.split("<h2>Shortest and best supported</h2>")[1].split("</section>")[0]
    items = shortest.split('<li class="path">')[1:]
    assert len(items) == 2
    assert "/edge/Q7944_Q1078765" in items[0]  # one step
    assert "/edge/Q7944_Q8070" in items[1] and "/edge/Q8070_Q1078765" in items[1]
    assert "<h2>Best supported</h2>" not in r.text
    r = client.get("/paths", params={"from": "death", "to": "earthquake"})
    assert "No causal path joins them" in r.text
    r = client.get("/paths", params={"from": "nothing like it", "to": "death"})
    assert "No concept matches" in r.text


def test_paths_best_supported_prefers_well_attested_chains():
    from causalkg.core.contracts import KGEdge
    from causalkg.web.kgview import KGView

    def edge(c, e, n):
        return KGEdge.model_validate({
            "cause": {"label": c, "id": [c]}, "effect": {"label": e, "id": [e]}, "edge_id": f"{c}_{e}",
            "level": "class", "cause_kind": "class", "effect_kind": "class",
            "support": {"sentences": n, "documents": 1, "mentions": n, "direct_mentions": n},
            "score": {"best": 0.9, "mean": 0.9}, "link_score": {"best": 1.0, "mean": 1.0}})

    # invented: A -> D directly on one sentence; A -> B -> C -> D on ten each
    v = KGView([edge("Q1", "Q4", 1), edge("Q1", "Q2", 10), edge("Q2", "Q3", 10), edge("Q3", "Q4", 10)], {}, set())
    found = v.paths("Q1", "Q4")
    assert [e.edge_id for e in found["shortest"][0]] == ["Q1_Q4"]
    assert [e.edge_id for e in found["best_supported"][0]] == ["Q1_Q2", "Q2_Q3", "Q3_Q4"]


# --- SPARQL ----------------------------------------------------------------------------------

Q_EFFECTS = "SELECT ?label WHERE { wd:Q7944 ck:causes ?x . ?x rdfs:label ?label } ORDER BY ?label"


def test_sparql_get_post_and_formats(client):
    r = client.get("/sparql", params={"query": Q_EFFECTS})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/sparql-results+json")
    labels = [b["label"]["value"] for b in r.json()["results"]["bindings"]]
    assert labels == ["death", "train wreck", "tsunami"]
    r = client.post("/sparql", data={"query": Q_EFFECTS}, headers={"Accept": "text/csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert list(csv.reader(io.StringIO(r.text))) == [["label"], ["death"], ["train wreck"], ["tsunami"]]
    r = client.post("/sparql", content=Q_EFFECTS.encode(), headers={"Content-Type": "application/sparql-query",
                                                                    "Accept": "text/tab-separated-values"})
    assert r.text.splitlines() == ["?label", '"death"@en', '"train wreck"@en', '"tsunami"@en']
    r = client.get("/sparql", params={"query": "ASK { wd:Q7944 ck:causes wd:Q8070 }"})
    assert r.json() == {"head": {}, "boolean": True}
    r = client.get("/sparql", params={"query": "CONSTRUCT { wd:Q7944 ck:causes ?x } WHERE { wd:Q7944 ck:causes ?x }"})
    assert r.headers["content-type"].startswith("application/n-triples")
    assert r.text.count(" .\n") == 3
    # the Base KG graph by default-graph-uri
    r = client.get("/sparql", params={"query": "ASK { wd:Q7944 ck:causes wd:Q8070 }",
                                      "default-graph-uri": "https://w3id.org/causalkg/graph/base-kg"})
    assert r.json()["boolean"] is True


@pytest.mark.parametrize("params,status,text", [
    ({"query": "SELECT ?x WHERE { ?x"}, 400, "not valid SPARQL"),
    ({"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}, 403, "updates are refused"),
    ({"query": "PREFIX x: <urn:x#> DELETE WHERE { ?s ?p ?o }"}, 403, "updates are refused"),
    ({"update": "DROP ALL"}, 403, "updates are refused"),
    ({"query": "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }"}, 403, "SERVICE is refused"),
    ({"query": "SELECT * WHERE { \\u0053ERVICE <http://127.0.0.1:9/s> { ?s ?p ?o } }"}, 403, "SERVICE is refused"),
    ({"query": "# a comment\nPREFIX a: <urn:a#>\nLOAD <http://127.0.0.1:9/x.nt>"}, 403, "updates are refused"),
    ({}, 400, "no query"),
    ({"query": "   "}, 400, "empty"),
])
def test_sparql_refuses_bad_queries_clearly(client, params, status, text):
    r = client.get("/sparql", params=params)
    assert r.status_code == status and text in r.text and "Traceback" not in r.text


def test_sparql_words_inside_strings_are_not_keywords(client):
    r = client.get("/sparql", params={"query": 'SELECT ?x WHERE { ?x rdfs:label "SERVICE INSERT" }'})
    assert r.status_code == 200 and r.json()["results"]["bindings"] == []


def test_sparql_update_bodies_are_refused(client):
    r = client.post("/sparql", content=b"DROP ALL", headers={"Content-Type": "application/sparql-update"})
    assert r.status_code == 403
    r = client.post("/sparql", data={"update": "DROP ALL"})
    assert r.status_code == 403
    assert client.get("/sparql", params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"] is True


def test_sparql_result_cap_and_time_limit(kg_project, tmp_path):
    root, cfg = kg_project
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"), result_cap=3)) as c:
        r = c.get("/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o }"})
        assert len(r.json()["results"]["bindings"]) == 3 and r.headers["x-results-truncated"] == "true"
        page = c.get("/query", params={"query": "SELECT * WHERE { ?s ?p ?o }", "run": "1"})
        assert "cut at 3" in page.text
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"), query_timeout=1.0)) as c:
        # a four-way cross product of every triple (about 10^12 rows to count): never ends in a second
        r = c.get("/sparql", params={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"})
        assert r.status_code == 504 and "time limit" in r.text
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"))) as c:
        assert c.get("/sparql", params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"] is True


def test_query_page_runs_each_readme_example(client):
    page = client.get("/query").text
    for x in EXAMPLES:
        assert f'href="/query?example={x.name}"' in page
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for x in EXAMPLES:
        r = client.get("/query", params={"example": x.name})
        assert r.status_code == 200 and 'class="error' not in r.text, x.name
    # earthquake's effects, as a table with links to the concepts
    r = client.get("/query", params={"example": "earthquake-effects"})
    assert 'href="/concept/Q8070"' in r.text and '<span class="n" id="row-count">3</span>' in r.text
    assert "wd:Q7944" in readme and "wd:Q182865" in readme  # the examples are the README's


def test_query_page_shows_errors_not_tracebacks(client):
    r = client.get("/query", params={"query": "SELECT ?x WHERE {", "run": "1"})
    assert r.status_code == 400 and "not valid SPARQL" in r.text and "Traceback" not in r.text
    r = client.get("/query", params={"query": "CLEAR ALL", "run": "1"})
    assert r.status_code == 403 and "updates are refused" in r.text


# --- judgements ----------------------------------------------------------------------------

MENTION = "d86028e13181404fb8f8"  # earthquake -> tsunami, sentence 1


def _judge(c, verdict="correct", judge="Ada", **extra):
    data = {"mention_id": MENTION, "verdict": verdict, "judge": judge, "note": "fine", **extra}
    return c.post("/edge/Q7944_Q8070/judge", data=data, follow_redirects=False)


def test_a_judgement_is_appended_with_edge_sentence_judge_and_time(client):
    r = _judge(client)
    assert r.status_code == 303 and r.headers["location"].startswith("/edge/Q7944_Q8070?")
    [line] = _lines(client.judgements)
    assert line["cause"] == "Q7944" and line["effect"] == "Q8070" and line["verdict"] == "correct"
    assert line["sentence"].startswith("The undersea megathrust earthquake was caused")
    assert line["judge"] == "Ada" and line["note"] == "fine" and line["time"].endswith("+00:00")
    assert line["mention_id"] == MENTION and line["schema_version"] == "1"
    page = client.get(r.headers["location"]).text
    assert "Recorded: correct" in page and "<b>correct</b> by Ada" in page


@pytest.mark.parametrize("data,text", [
    ({"verdict": "maybe"}, "verdict must be one of"),
    ({"judge": "   "}, "name is required"),
    ({"mention_id": "nope"}, "not one of this edge"),
])
def test_bad_judgements_are_refused_and_not_written(client, data, text):
    r = _judge(client, **data)
    assert r.status_code == 400 and text in r.text
    assert not client.judgements.exists()


def test_judgements_from_another_site_are_refused(client):
    r = client.post("/edge/Q7944_Q8070/judge", data={"mention_id": MENTION, "verdict": "wrong", "judge": "x"},
                    headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and not client.judgements.exists()
    # The same host under another scheme is another origin.
    host = client.base_url.netloc.decode() if isinstance(client.base_url.netloc, bytes) else client.base_url.netloc
    other = "https" if client.base_url.scheme == "http" else "http"
    r = client.post("/edge/Q7944_Q8070/judge", data={"mention_id": MENTION, "verdict": "wrong", "judge": "x"},
                    headers={"Origin": f"{other}://{host}"})
    assert r.status_code == 403 and not client.judgements.exists()


def test_read_only_server_refuses_judgements(kg_project, tmp_path):
    root, cfg = kg_project
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"), read_only=True)) as c:
        assert "read-only" in c.get("/edge/Q7944_Q8070").text
        assert 'class="judge"' not in c.get("/edge/Q7944_Q8070").text
        r = _judge(c)
        assert r.status_code == 403 and not (tmp_path / "j.jsonl").exists()


def test_token_is_needed_for_judgements_when_set(kg_project, tmp_path):
    root, cfg = kg_project
    path = tmp_path / "j.jsonl"
    with TestClient(create_app(cfg, judgements=str(path), token="s3cret")) as c:
        assert 'name="token"' in c.get("/edge/Q7944_Q8070").text
        assert _judge(c).status_code == 403
        assert _judge(c, token="wrong").status_code == 403
        assert not path.exists()
        r = _judge(c, token="s3cret")
        assert r.status_code == 303 and len(_lines(path)) == 1
        assert _judge(c).status_code == 303  # the cookie set by the first one
        c.cookies.clear()
        r = c.post("/edge/Q7944_Q8070/judge", data={"mention_id": MENTION, "verdict": "wrong", "judge": "Bo"},
                   headers={"Authorization": "Bearer s3cret", "Accept": "application/json"})
        assert r.status_code == 201 and r.json()["recorded"]["verdict"] == "wrong"
        assert len(_lines(path)) == 3


def test_concurrent_judgements_lose_nothing(kg_project, tmp_path):
    from causalkg.web import judgements as J
    from causalkg.web.kgview import load_view

    root, cfg = kg_project
    v = load_view(cfg)
    e = v.edges["Q7944_Q8070"]
    path = tmp_path / "j.jsonl"
    note = "x" * 3000  # long lines: more than one pipe buffer's worth across threads

    def worker(n: int) -> None:
        for i in range(50):
            J.append(path, J.make_judgement(e, e.mentions[0], "correct", f"judge{n}", f"{i} {note}"))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = _lines(path)
    assert len(lines) == 200
    assert sorted((x["judge"], int(x["note"].split()[0])) for x in lines) == sorted(
        (f"judge{n}", i) for n in range(4) for i in range(50))


def test_judgements_survive_a_rebuild_keyed_by_qids_and_sentence(tmp_path):
    from causalkg.kg import assemble as A

    cfg = build_project(tmp_path, export=False)
    path = tmp_path / "j.jsonl"
    with TestClient(create_app(cfg, judgements=str(path))) as c:
        assert _judge(c, verdict="wrong").status_code == 303
        # rebuild the KG without lifting: other edges, same earthquake -> tsunami sentence
        A.assemble(cfg.with_overrides({"kg.lift": "none"}), linked=REPO / "tests/fixtures/kg/linked.jsonl",
                   concepts=tmp_path / "data/wikidata/concepts.jsonl", force=True)
        html = c.get("/edge/Q7944_Q8070").text
        assert "<b>wrong</b> by Ada" in html
        assert c.get("/edge/Q7944_Q1078765").status_code == 404  # the rebuilt KG is served


# --- the queue -------------------------------------------------------------------------------


def test_queue_hands_out_unjudged_edges_in_the_seeded_random_order(client, kg_project):
    from causalkg.web import judgements as J
    from causalkg.web.kgview import load_view

    order = [e.edge_id for e in J.queue_order(load_view(kg_project[1]).edges.values(), 15)]
    assert order == [e.edge_id for e in J.queue_order(reversed(list(load_view(kg_project[1]).edges.values())), 15)]
    page = client.get("/queue").text
    assert f'action="/edge/{order[0]}/judge"' in page and "No edge of this KG has been judged yet" in page
    mention_id = page.split('name="mention_id" value="')[1].split('"')[0]
    r = client.post(f"/edge/{order[0]}/judge", data={"mention_id": mention_id, "verdict": "correct",
                                                     "judge": "Ada", "from": "queue"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/queue?")
    page = client.get(r.headers["location"]).text
    assert f'action="/edge/{order[1]}/judge"' in page
    assert "Precision so far: <b>1.00</b>" in page and f"{len(order) - 1} of {len(order)} edges left" in page
    assert 'value="Ada"' in page  # the judge's name is kept


# --- the report, static files, missing data ----------------------------------------------------


def test_report_page_renders_markdown_and_serves_its_plots_by_name_only(tmp_path):
    cfg = build_project(tmp_path, export=False)
    ev = tmp_path / "data" / "eval"
    (ev / "recall").mkdir(parents=True)
    png = (REPO / "causalkg" / "web" / "static" / "vendor" / "cytoscape" / "LICENSE").read_bytes()[:10]
    (ev / "recall" / "recall.png").write_bytes(b"\x89PNG fake " + png)
    (ev / "report.md").write_text("# Evaluation\n\n| kg | recall |\n|---|---|\n| ours | 0.1 |\n\n"
                                  "![recall](recall/recall.png)\n\n<script>alert(1)</script>\n", encoding="utf-8")
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"))) as c:
        html = c.get("/report").text
        assert "<h1>Evaluation</h1>" in html and "<td>ours</td>" in html
        assert 'src="/report/files/recall/recall.png"' in html
        assert "<script>alert(1)</script>" not in html
        assert c.get("/report/files/recall/recall.png").content.startswith(b"\x89PNG")
        for bad in ("/report/files/../kg/causal_kg_pairs.jsonl", "/report/files/report.md",
                    "/report/files/%2e%2e/kg/manifest.json", "/static/../app.py", "/static/%2e%2e/app.py"):
            r = c.get(bad)
            assert r.status_code == 404, bad


def test_missing_kg_store_and_empty_kg_get_clear_pages(tmp_path):
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data")})
    with TestClient(create_app(cfg)) as c:
        r = c.get("/")
        assert r.status_code == 503 and "No KG to show" in r.text and "make kg" in r.text
        r = c.get("/api/search", params={"q": "x"})
        assert r.status_code == 503 and "make kg" in r.json()["hint"]
        r = c.get("/sparql", params={"query": "ASK {}"})
        assert r.status_code == 503 and "no triple store" in r.text
        assert c.get("/report").status_code == 404
        assert c.get("/healthz").status_code == 503
    # an empty KG
    kg = tmp_path / "data" / "kg"
    kg.mkdir(parents=True)
    (kg / "causal_kg_pairs.jsonl").write_text("")
    with TestClient(create_app(cfg)) as c:
        r = c.get("/")
        assert r.status_code == 200 and "no edges yet" in r.text
        assert c.get("/queue").status_code == 200
    # a broken KG file
    (kg / "causal_kg_pairs.jsonl").write_text('{"cause": 1}\n')
    with TestClient(create_app(cfg)) as c:
        r = c.get("/")
        assert r.status_code == 400 and "causal_kg_pairs.jsonl:1" in r.text and "Traceback" not in r.text


def test_a_replaced_kg_is_served_and_a_broken_replacement_keeps_the_old(tmp_path):
    cfg = build_project(tmp_path, export=False)
    pairs = tmp_path / "data" / "kg" / "causal_kg_pairs.jsonl"
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"))) as c:
        assert c.get("/edge/Q7944_Q4").status_code == 200
        good = pairs.read_text(encoding="utf-8")
        pairs.write_text(good + "not json\n", encoding="utf-8")
        assert c.get("/edge/Q7944_Q4").status_code == 200  # the previous KG, still served
        lines = [x for x in good.splitlines() if '"edge_id":"Q7944_Q4"' not in x]
        pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
        assert c.get("/edge/Q7944_Q4").status_code == 404
        assert c.get("/edge/Q7944_Q8070").status_code == 200


def test_static_files_and_security_headers(client):
    r = client.get("/static/vendor/cytoscape/cytoscape.min.js")
    assert r.status_code == 200 and "cytoscape" in r.text[:2000].lower()
    assert (REPO / "causalkg/web/static/vendor/cytoscape/LICENSE").is_file()
    r = client.get("/")
    assert "default-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_loopback_server_refuses_foreign_host_headers(kg_project):
    root, cfg = kg_project
    app = create_app(cfg, allowed_hosts=["127.0.0.1", "localhost"])
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.get("/healthz").status_code == 200
        assert c.get("/healthz", headers={"Host": "attacker.example"}).status_code == 400


def test_unexpected_errors_are_a_page_without_traceback(kg_project, monkeypatch):
    root, cfg = kg_project
    app = create_app(cfg)
    monkeypatch.setattr(app.state.web, "view", lambda: 1 / 0)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/")
        assert r.status_code == 500 and "Something went wrong" in r.text and "ZeroDivisionError" in r.text
        assert "Traceback" not in r.text


def test_the_page_templates_ship_with_the_package():
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["causalkg.web"]
    web = REPO / "causalkg" / "web"
    shipped = {p for g in globs for p in web.glob(g)}
    for p in [*web.glob("templates/*"), *web.glob("static/**/*")]:
        if p.is_file():
            assert p in shipped, p


def test_queries_are_answered_while_kg_export_replaces_the_store(tmp_path):
    from causalkg.kg import assemble as A
    from causalkg.kg import store as K

    cfg = build_project(tmp_path)
    ask = {"query": "ASK { edge:Q7944_Q1078765 ?p ?o }"}  # a lifted edge: gone once lifting is off
    with TestClient(create_app(cfg, judgements=str(tmp_path / "j.jsonl"))) as c:
        assert c.get("/sparql", params=ask).json()["boolean"] is True
        A.assemble(cfg.with_overrides({"kg.lift": "none"}), linked=REPO / "tests/fixtures/kg/linked.jsonl",
                   concepts=tmp_path / "data/wikidata/concepts.jsonl", force=True)
        errors: list[BaseException] = []

        def export() -> None:
            try:
                K.export(cfg, force=True)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        t = threading.Thread(target=export)
        t.start()
        answers = []
        while t.is_alive():
            r = c.get("/sparql", params=ask)
            assert r.status_code == 200, r.text
            answers.append(r.json()["boolean"])
        t.join()
        assert not errors
        assert set(answers) <= {True, False}
        assert c.get("/sparql", params=ask).json()["boolean"] is False


def test_judgements_from_two_server_processes_lose_nothing(kg_project, tmp_path):
    import subprocess
    import sys

    root, cfg = kg_project
    path = tmp_path / "j.jsonl"
    script = (
        "import sys\n"
        "from causalkg.core.config import load_config\n"
        "from causalkg.web import judgements as J\n"
        "from causalkg.web.kgview import load_view\n"
        f"cfg = load_config(search_cwd=False, overrides={{'paths.data': {str(root / 'data')!r}}})\n"
        "e = load_view(cfg).edges['Q7944_Q8070']\n"
        "for i in range(50):\n"
        "    J.append(sys.argv[1], J.make_judgement(e, e.mentions[0], 'unsure', sys.argv[2], str(i) + ' ' + 'y' * 5000))\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), f"p{n}"]) for n in range(2)]
    assert [p.wait() for p in procs] == [0, 0]
    lines = _lines(path)
    assert sorted((x["judge"], int(x["note"].split()[0])) for x in lines) == sorted(
        (f"p{n}", i) for n in range(2) for i in range(50))
