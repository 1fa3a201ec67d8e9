"""The explorer's pages over the fixture KG (Starlette's TestClient): the edges table (facets,
sort, search, paging, CSV and JSON of what is shown), the JSON forms of the concept, edge, path
and search pages, honest evidence (snapshot revisions, infobox fields, duplicates, lifted edges
judged through their instance claim, undo), paths with evidence per hop, search that tells
same-label concepts apart, and the report page's message when there is no report."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from causalkg.web.app import create_app

ALL_EDGES = 13  # the fixture KG's edges (tests/fixtures/kg assembled)


def _judge(client, edge_id: str, mention_id: str, verdict: str, judge: str = "Ada"):
    return client.post(f"/edge/{edge_id}/judge", data={"mention_id": mention_id, "verdict": verdict, "judge": judge},
                       headers={"Accept": "application/json"})


# --- the edges table -------------------------------------------------------------------------


def test_edges_page_lists_every_edge_with_facet_counts(client):
    r = client.get("/edges")
    assert r.status_code == 200
    assert r.text.count("<tr data-edge=") == ALL_EDGES
    data = client.get("/edges", params={"format": "json"}).json()
    assert data["total"] == ALL_EDGES and data["edges_in_kg"] == ALL_EDGES
    counts = {name: {f["value"]: f["count"] for f in vals} for name, vals in data["facets"].items()}
    assert counts["level"] == {"class": 10, "instance": 1, "mixed": 2}
    assert counts["base_kg"] == {"yes": 6, "no": 7}
    assert counts["support"] == {"1": 12, "2": 1}
    assert counts["judged"] == {"no": ALL_EDGES}
    assert counts["extractor"] == {"qa": ALL_EDGES}
    assert sum(counts["confidence"].values()) == ALL_EDGES
    assert "verdict" not in counts  # no edge of the fixture KG carries a verifier verdict
    # the KG's rank by default: earthquake -> tsunami (2 sentences) first
    assert data["rows"][0]["edge_id"] == "Q7944_Q8070" and data["sort"] == "rank"


def test_edges_facets_filter_and_combine(client):
    data = client.get("/edges", params={"format": "json", "level": "class", "base_kg": "yes"}).json()
    assert data["total"] == 5
    assert all(r["level"] == "class" and r["base_kg"] for r in data["rows"])
    assert {f["value"]: f["selected"] for f in data["facets"]["level"]} == {"class": True}
    # two values of one facet are alternatives
    data = client.get("/edges?format=json&level=instance&level=mixed").json()
    assert sorted(r["level"] for r in data["rows"]) == ["instance", "mixed", "mixed"]
    # a facet link in the page toggles the value
    html = client.get("/edges", params={"level": "class"}).text
    assert 'href="/edges"' in html.split('data-facet="level"')[1].split("</section>")[0]


def test_edges_sort_by_any_column_both_ways(client):
    rows = client.get("/edges", params={"format": "json", "sort": "effect"}).json()["rows"]
    labels = [r["effect_label"] for r in rows]
    assert labels == sorted(labels, key=str.casefold)
    rows = client.get("/edges", params={"format": "json", "sort": "-confidence"}).json()["rows"]
    conf = [r["confidence"] for r in rows]
    assert conf == sorted(conf, reverse=True)
    # an unknown column is the default order, not an error
    assert client.get("/edges", params={"format": "json", "sort": "nope"}).json()["sort"] == "rank"
    html = client.get("/edges", params={"sort": "sentences"}).text
    assert 'aria-sort="ascending"' in html and 'href="/edges?sort=-sentences"' in html


def test_edges_search_over_evidence_sentences(client):
    data = client.get("/edges", params={"format": "json", "q": "Krakatoa"}).json()
    assert [r["edge_id"] for r in data["rows"]] == ["Q7692360_Q8070"]
    assert "Krakatoa" in data["rows"][0]["evidence"]
    # every word in one sentence; a quoted phrase as one
    assert client.get("/edges", params={"format": "json", "q": "krakatoa deaths"}).json()["total"] == 0
    words = client.get("/edges", params={"format": "json", "q": "the attacks caused"}).json()
    assert {r["edge_id"] for r in words["rows"]} == {"Q10806_Q4", "Q750215_Q4", "Q10806_Q193078", "Q750215_Q193078"}
    assert client.get("/edges", params={"format": "json", "q": '"the attacks caused"'}).json()["total"] == 4
    assert client.get("/edges", params={"format": "json", "q": '"caused the attacks"'}).json()["total"] == 0
    html = client.get("/edges", params={"q": "<b>x</b>"}).text
    assert "<b>x</b>" not in html and "No edge matches" in html


def test_edges_paging_and_exports_give_exactly_what_is_shown(client):
    page1 = client.get("/edges", params={"format": "json", "size": 5}).json()
    page3 = client.get("/edges", params={"format": "json", "size": 5, "page": 3}).json()
    assert page1["pages"] == 3 and len(page1["rows"]) == 5 and len(page3["rows"]) == 3
    assert page1["next"] == "/edges?page=2&size=5&format=json" and page3["next"] is None
    html = client.get("/edges", params={"size": 5, "page": 2}).text
    assert 'rel="next" href="/edges?page=3&amp;size=5"' in html and "Rows 6–10 of 13" in html
    # the CSV of a filtered, sorted page holds the same edges in the same order as the page
    params = {"level": "class", "sort": "-sentences", "size": 4, "page": 2}
    shown = [r["edge_id"] for r in client.get("/edges", params={**params, "format": "json"}).json()["rows"]]
    page = client.get("/edges", params=params).text
    assert [x.split('"')[0] for x in page.split('<tr data-edge="')[1:]] == shown
    r = client.get("/edges", params={**params, "format": "csv"})
    assert r.headers["content-type"].startswith("text/csv") and "attachment" in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [x["edge_id"] for x in rows] == shown and all(x["level"] == "class" for x in rows)
    # size=all: every matching row, one page
    everything = client.get("/edges", params={"level": "class", "size": "all", "format": "csv"}).text
    assert len(list(csv.DictReader(io.StringIO(everything)))) == 10
    # the page links its exports with the same filters
    assert '/edges?level=class&amp;sort=-sentences&amp;page=2&amp;size=4&amp;format=csv' in page


def test_edges_judged_facet_follows_the_judgements_file(client):
    ev = client.get("/edge/Q7944_Q8070", params={"format": "json"}).json()["evidence"][0]
    assert _judge(client, "Q7944_Q8070", ev["mention_id"], "correct").status_code == 201
    data = client.get("/edges", params={"format": "json", "judged": "yes"}).json()
    assert [r["edge_id"] for r in data["rows"]] == ["Q7944_Q8070"] and data["rows"][0]["judged"] is True
    assert client.get("/edges", params={"format": "json", "judged": "no"}).json()["total"] == ALL_EDGES - 1


def test_edges_verifier_verdict_facet_when_edges_carry_one(tmp_path, kg_project):
    _, cfg = kg_project
    kg = tmp_path / "kg"
    kg.mkdir()
    src = Path(cfg.path("paths.data")) / "kg" / "causal_kg_pairs.jsonl"
    lines = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()]
    # invented: the first edge as a verifier rejected it, the second accepted
    lines[0]["verifier"] = {"verdict": "rejected"}
    lines[1]["verdict"] = "accepted"
    (kg / "causal_kg_pairs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with TestClient(create_app(cfg, kg=str(kg), judgements=str(tmp_path / "j.jsonl"))) as c:
        data = c.get("/edges", params={"format": "json"}).json()
        assert {f["value"]: f["count"] for f in data["facets"]["verdict"]} == {"accepted": 1, "rejected": 1}
        rows = c.get("/edges", params={"format": "json", "verdict": "rejected"}).json()["rows"]
        assert [r["edge_id"] for r in rows] == [lines[0]["edge_id"]] and rows[0]["verdict"] == "rejected"


# --- JSON forms of the other pages --------------------------------------------------------------


def test_concept_edge_path_and_search_pages_have_a_json_form(client):
    c = client.get("/concept/Q7944", params={"format": "json", "min_support": 2}).json()
    assert c["qid"] == "Q7944" and c["label"] == "earthquake" and "temblor" in c["aliases"]
    assert [e["edge_id"] for e in c["effects"]] == ["Q7944_Q8070"] and c["causes"] == []
    assert c["effects"][0]["base_kg"] is True and c["effects"][0]["sentences"] == 2
    e = client.get("/edge/Q7944_Q8070", params={"format": "json"}).json()
    assert e["edge_id"] == "Q7944_Q8070" and len(e["evidence"]) == 2
    assert e["evidence"][0]["revision_url"] == "https://en.wikipedia.org/w/index.php?oldid=1001"
    p = client.get("/paths", params={"from": "earthquake", "to": "train wreck", "format": "json"}).json()
    assert [[x["edge_id"] for x in path["edges"]] for path in p["shortest"]] == [
        ["Q7944_Q1078765"], ["Q7944_Q8070", "Q8070_Q1078765"]]
    assert all(x["evidence"]["text"] for path in p["shortest"] for x in path["edges"])
    s = client.get("/search", params={"q": "earthquake", "format": "json"}).json()
    assert s["results"][0]["qid"] == "Q7944"
    assert client.get("/concept/Q1", params={"format": "json"}).status_code == 404
    assert client.get("/paths", params={"from": "zzzz", "to": "death", "format": "json"}).status_code == 404


# --- honest evidence -------------------------------------------------------------------------------


@pytest.fixture
def odd_client(kg_project, tmp_path):
    """The fixture KG with invented edge cases written into a copy of its pairs file: a mention
    on a revision id the bundled snapshot assigned, the same sentence twice on one edge (a second
    extractor), and an infobox field as evidence."""
    _, cfg = kg_project
    kg = tmp_path / "kg"
    kg.mkdir()
    src = Path(cfg.path("paths.data")) / "kg" / "causal_kg_pairs.jsonl"
    edges = {x["edge_id"]: x for x in map(json.loads, src.read_text(encoding="utf-8").splitlines())}
    quake = edges["Q7944_Q8070"]
    quake["mentions"][0]["revision_id"] = 3_000_000_012
    twin = json.loads(json.dumps(quake["mentions"][0]))
    twin.update({"mention_id": "0000000000000000twin", "extractor": "patterns", "score": 0.5})
    quake["mentions"].append(twin)
    box = edges["Q7692360_Q8070"]["mentions"][0]
    box.update({"source": "wikipedia_infobox", "sentence": {"text": "effects = tsunamis", "start": 0, "end": 18,
                                                            "section": None}})
    box["effect"].update({"text": "tsunamis", "start": 10, "end": 18})
    box["cause"].update({"text": "Krakatoa", "start": 0, "end": 8})
    (kg / "causal_kg_pairs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in edges.values()), encoding="utf-8")
    with TestClient(create_app(cfg, kg=str(kg), judgements=str(tmp_path / "j.jsonl"))) as c:
        c.judgements = tmp_path / "j.jsonl"
        yield c


def test_a_snapshot_revision_links_the_page_not_a_revision(odd_client):
    html = odd_client.get("/edge/Q7944_Q8070").text
    assert "oldid=3000000012" not in html and "bundled snapshot page, not a Wikipedia revision" in html
    assert 'href="https://en.wikipedia.org/wiki/2004_Indian_Ocean_earthquake"' in html
    ev = odd_client.get("/edge/Q7944_Q8070", params={"format": "json"}).json()["evidence"]
    first = next(x for x in ev if x["revision_id"] == 3_000_000_012)
    assert first["snapshot_revision"] is True and first["revision_url"] is None


def test_the_same_sentence_twice_on_one_edge_is_shown_once(odd_client):
    html = odd_client.get("/edge/Q7944_Q8070").text
    assert html.count('<section class="mention') == 2 and 'Evidence <span class="n">2</span>' in html
    assert "the same text 1 more time on this edge (patterns, qa), shown once" in html
    ev = odd_client.get("/edge/Q7944_Q8070", params={"format": "json"}).json()["evidence"]
    assert ev[0]["duplicates"] == ["0000000000000000twin"] and ev[0]["extractors"] == ["patterns", "qa"]


def test_an_infobox_field_is_shown_and_judged_as_a_field(odd_client):
    html = odd_client.get("/edge/Q7692360_Q8070").text
    assert '<section class="mention infobox"' in html and '<code class="field">effects</code>' in html
    assert "Does this infobox field say that" in html and "Does this sentence say" not in html
    ev = odd_client.get("/edge/Q7692360_Q8070", params={"format": "json"}).json()["evidence"][0]
    assert (ev["kind"], ev["field"]) == ("infobox", "effects")


def test_a_lifted_class_edge_is_judged_through_its_instance_claim(client):
    html = client.get("/edge/Q750215_Q4").text
    q = html.split('<span class="question">')[1].split("</span></span>")[0]
    assert "<b>September 11 attack</b> caused <b>death</b>" in q and "so <b>mass murder</b> can cause <b>death</b>" in q
    mention = client.get("/edge/Q750215_Q4", params={"format": "json"}).json()["evidence"][0]["mention_id"]
    assert _judge(client, "Q750215_Q4", mention, "correct").status_code == 201
    [line] = [json.loads(x) for x in client.judgements.read_text(encoding="utf-8").splitlines()]
    assert (line["cause"], line["effect"], line["via_edge"]) == ("Q750215", "Q4", "Q10806_Q4")
    # an instance edge's own sentence is asked plainly
    assert "so <b>" not in client.get("/edge/Q10806_Q4").text


def test_undo_takes_back_ones_last_judgement(client):
    from causalkg.evaluation.wikicausal.human import edge_verdicts
    from causalkg.web.judgements import read_judgements

    mention = client.get("/edge/Q7944_Q8070", params={"format": "json"}).json()["evidence"][0]["mention_id"]
    r = client.post("/edge/Q7944_Q8070/judge", data={"mention_id": mention, "verdict": "correct", "judge": "Ada"},
                    follow_redirects=False)
    page = client.get(r.headers["location"]).text
    assert 'action="/judgements/undo"' in page and 'name="judge" value="Ada"' in page.split("form class=\"undo\"")[1]
    _judge(client, "Q7944_Q8070", mention, "wrong")
    # undo the "wrong": "correct" is back in force
    r = client.post("/judgements/undo", data={"judge": "Ada"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/edge/Q7944_Q8070?")
    assert "Undone: your wrong is taken back" in client.get(r.headers["location"]).text
    lines, _ = read_judgements(client.judgements)
    assert [(j.verdict, j.source) for j in lines] == [("correct", "edge"), ("wrong", "edge"), ("correct", "undo")]
    assert edge_verdicts(lines) == {("Q7944", "Q8070"): "correct"}
    # one step only
    r = client.post("/judgements/undo", data={"judge": "Ada"}, headers={"Accept": "application/json"})
    assert r.status_code == 409 and "nothing to undo" in r.json()["error"]
    # a first verdict undone leaves none: the edge is unjudged again
    _judge(client, "Q7944_Q4", client.get("/edge/Q7944_Q4?format=json").json()["evidence"][0]["mention_id"], "wrong", "Bo")
    assert client.post("/judgements/undo", data={"judge": "Bo"}, headers={"Accept": "application/json"}).json()[
        "recorded"]["verdict"] == "withdrawn"
    lines, _ = read_judgements(client.judgements)
    assert ("Q7944", "Q4") not in edge_verdicts(lines)
    assert client.get("/edges", params={"format": "json", "judged": "yes"}).json()["total"] == 1
    assert client.post("/judgements/undo", data={"judge": "Nobody"}).status_code == 409


# --- paths -------------------------------------------------------------------------------------


def _invented_edge(c: str, e: str, n: int, sentence: str) -> dict:
    mention = {"mention_id": f"m{c}{e}", "doc_id": "1", "title": "Invented page",
               "sentence": {"text": sentence, "start": 0, "end": len(sentence)},
               "cause": {"text": c, "start": 0, "end": 1, "qid": c, "kind": "class", "link_score": 1.0},
               "effect": {"text": e, "start": 0, "end": 1, "qid": e, "kind": "class", "link_score": 1.0},
               "score": 0.9, "extractor": "qa"}
    return {"cause": {"label": f"c{c}", "id": [c]}, "effect": {"label": f"c{e}", "id": [e]}, "edge_id": f"{c}_{e}",
            "level": "class", "cause_kind": "class", "effect_kind": "class",
            "support": {"sentences": n, "documents": 1, "mentions": 1, "direct_mentions": 1},
            "score": {"best": 0.9, "mean": 0.9}, "link_score": {"best": 1.0, "mean": 1.0}, "mentions": [mention]}


def test_paths_shortest_and_best_supported_are_distinct_lists_with_each_hops_sentence(kg_project, tmp_path):
    _, cfg = kg_project
    kg = tmp_path / "kg"
    kg.mkdir()
    # invented: Q1 -> Q4 directly on one sentence; Q1 -> Q2 -> Q3 -> Q4 on ten sentences each
    edges = [_invented_edge("Q1", "Q4", 1, "One says Q1 led to Q4."),
             _invented_edge("Q1", "Q2", 10, "Ten say Q1 led to Q2."),
             _invented_edge("Q2", "Q3", 10, "Ten say Q2 led to Q3."),
             _invented_edge("Q3", "Q4", 10, "Ten say Q3 led to Q4.")]
    (kg / "causal_kg_pairs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in edges), encoding="utf-8")
    with TestClient(create_app(cfg, kg=str(kg), judgements=str(tmp_path / "j.jsonl"))) as c:
        html = c.get("/paths", params={"from": "Q1", "to": "Q4"}).text
        shortest = html.split("<h2>Shortest</h2>")[1].split("</section>")[0]
        best = html.split("<h2>Best supported</h2>")[1].split("</section>")[0]
        assert shortest.index("/edge/Q1_Q4") < shortest.index("/edge/Q1_Q2")
        assert best.index("/edge/Q1_Q2") < best.index("/edge/Q1_Q4")
        first_best = best.split('<li class="path">')[1]
        assert [x.split("</q>")[0] for x in first_best.split('<q class="hop-evidence">')[1:]] == [
            "Ten say Q1 led to Q2.", "Ten say Q2 led to Q3.", "Ten say Q3 led to Q4."]
        data = c.get("/paths", params={"from": "Q1", "to": "Q4", "format": "json"}).json()
        assert data["same"] is False
        assert [x["edge_id"] for x in data["best_supported"][0]["edges"]] == ["Q1_Q2", "Q2_Q3", "Q3_Q4"]
        assert data["best_supported"][0]["edges"][1]["evidence"]["text"] == "Ten say Q2 led to Q3."
        assert data["shortest"][0]["steps"] == 1 and data["shortest"][0]["weakest"] == 1


# --- the graph view ------------------------------------------------------------------------------


def test_graph_page_loads_the_vendored_layout_with_licences_and_a_legend(client):
    html = client.get("/graph/Q8070").text
    static = Path(__file__).resolve().parents[2] / "causalkg" / "web" / "static"
    for name, script in (("cytoscape", "cytoscape.min.js"), ("layout-base", "layout-base.js"),
                         ("cose-base", "cose-base.js"), ("cytoscape-fcose", "cytoscape-fcose.js")):
        assert f"/static/vendor/{name}/{script}" in html
        assert client.get(f"/static/vendor/{name}/{script}").status_code == 200
        assert "MIT" in (static / "vendor" / name / "LICENSE").read_text(encoding="utf-8") + \
            (static / "vendor" / name / "SOURCE.md").read_text(encoding="utf-8")
    # dependencies first: fcose needs cose-base, which needs layout-base
    assert html.index("layout-base.js") < html.index("cose-base.js") < html.index("cytoscape-fcose.js")
    assert "http://" not in html.split("<body>")[0].replace("http://www.w3.org", "") and "https://" not in html.split("<body>")[0]
    legend = html.split('<dl class="legend"')[1].split("</dl>")[0]
    for words in ("this concept", "a cause", "an effect", "a class", "an instance", "thick border", "green", "grey"):
        assert words in legend
    assert 'id="export-png"' in html and 'id="export-svg"' in html and 'id="evidence-panel"' in html


def test_graph_api_filters_by_level_and_support(client):
    data = client.get("/api/graph/Q7944", params={"level": "class", "min_support": 2}).json()
    assert [e["data"]["id"] for e in data["edges"]] == ["Q7944_Q8070"]
    data = client.get("/api/graph/Q4", params={"level": "mixed"}).json()
    assert {e["data"]["id"] for e in data["edges"]} == {"Q10806_Q4"}
    assert len(client.get("/api/graph/Q4", params={"level": "bogus"}).json()["edges"]) == 5


# --- search and concept pages --------------------------------------------------------------------


def test_search_tells_same_label_concepts_apart_and_shows_descriptions(kg_project, tmp_path):
    from causalkg.core.contracts import Concept

    _, cfg = kg_project
    data = tmp_path / "data"
    (data / "wikidata").mkdir(parents=True)
    (data / "kg").mkdir()
    src = Path(cfg.path("paths.data"))
    (data / "kg" / "causal_kg_pairs.jsonl").write_bytes((src / "kg" / "causal_kg_pairs.jsonl").read_bytes())
    concepts = [json.loads(x) for x in (src / "wikidata" / "concepts.jsonl").read_text(encoding="utf-8").splitlines()]
    # invented: two concepts with one label (as the corpus can hold), one with a Wikidata
    # description, the other only with its class
    concepts.append(Concept(id="Q900001", kind="instance", label="Great Hanshin earthquake", instance_of=["Q7944"],
                            description="earthquake in Japan in 1995", aliases=["Kobe earthquake"]).model_dump())
    concepts.append(Concept(id="Q900002", kind="instance", label="Great Hanshin earthquake",
                            instance_of=["Q7944"]).model_dump())
    (data / "wikidata" / "concepts.jsonl").write_text("".join(json.dumps(c) + "\n" for c in concepts), encoding="utf-8")
    from causalkg.core.config import load_config

    cfg2 = load_config(search_cwd=False, overrides={"paths.data": str(data)})
    with TestClient(create_app(cfg2, judgements=str(tmp_path / "j.jsonl"))) as c:
        results = c.get("/api/search", params={"q": "great hanshin"}).json()["results"]
        by_qid = {r["qid"]: r for r in results}
        assert set(by_qid) == {"Q900001", "Q900002"}
        assert by_qid["Q900001"]["hint"] == "earthquake in Japan in 1995"
        assert by_qid["Q900002"]["hint"] == "instance, instance of earthquake"
        assert by_qid["Q900001"]["same_label"] == 1 and by_qid["Q900001"]["aliases"] == ["Kobe earthquake"]
        assert by_qid["Q900002"]["classes"] == [{"qid": "Q7944", "label": "earthquake"}]
        html = c.get("/search", params={"q": "great hanshin"}).text
        assert "earthquake in Japan in 1995" in html and "instance, instance of earthquake" in html
        assert html.count("same name as 1 other") == 2 and "also: Kobe earthquake" in html
        assert c.get("/api/search", params={"q": "kobe"}).json()["results"][0]["qid"] == "Q900001"
        page = c.get("/concept/Q900001").text
        assert "earthquake in Japan in 1995" in page and 'href="/concept/Q7944">earthquake</a>' in page
        assert "1 other concept named “Great Hanshin earthquake”" in page and "Kobe earthquake" in page


# --- the report ----------------------------------------------------------------------------------


def test_a_missing_report_says_how_to_make_it_without_the_servers_paths(client, kg_project):
    root, _ = kg_project
    r = client.get("/report")
    assert r.status_code == 404
    assert "No evaluation report yet" in r.text and "make eval" in r.text and "causalkg eval report" in r.text
    assert str(root) not in r.text and "/tmp" not in r.text
    assert "The KG it needs is in place" in r.text
    j = client.get("/report", params={"format": "json"})
    assert j.status_code == 404 and "causalkg eval report" in j.json()["hint"] and str(root) not in j.text


def test_the_queue_asks_a_lifted_edge_through_its_instance_claim_and_can_undo(client):
    from causalkg.web.judgements import append, make_judgement
    from causalkg.web.kgview import load_view

    v = load_view(client.app.state.web.s.cfg)
    # every edge judged but mass murder -> death, which the queue then hands out
    for e in v.edges.values():
        if e.edge_id != "Q750215_Q4":
            append(client.judgements, make_judgement(e, None, "correct", "Earlier"))
    html = client.get("/queue", params={"judge": "Ada"}).text
    assert "<b>September 11 attack</b> caused <b>death</b>" in html and "so <b>mass murder</b> can cause <b>death</b>" in html
    mention = v.edges["Q10806_Q4"].mentions[0].mention_id
    r = client.post("/edge/Q750215_Q4/judge", data={"mention_id": mention, "verdict": "wrong", "judge": "Ada",
                                                    "from": "queue"}, follow_redirects=False)
    page = client.get(r.headers["location"]).text
    assert "Every edge has been judged" in page and 'action="/judgements/undo"' in page
    r = client.post("/judgements/undo", data={"judge": "Ada", "from": "queue"}, follow_redirects=False)
    assert r.headers["location"].startswith("/queue?")
    page = client.get(r.headers["location"]).text
    assert "Undone: your wrong is taken back" in page and "so <b>mass murder</b>" in page
