"""The Wikidata part of `corpus build` through the live code path, against a real SPARQL endpoint
on 127.0.0.1: over the bundled snapshot (the result must equal the offline build, through
faults, pages and batches), and over a tiny INVENTED graph that has what the snapshot lacks
(Wikinews sitelinks, subclass chains, inverse properties, class-valued effects)."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import BaseKGLine, Concept, EventClass
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.jsonl import read_jsonl
from causalkg.testing.sparql_server import Fault, SPARQLServer
from causalkg.corpus.build import build_wikidata

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
FILES = ("event_classes.jsonl", "concepts.jsonl", "base_kg.jsonl")


class Waits(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def config(tmp: Path, **overrides):
    base = {
        "paths.data": str(tmp / "data"),
        "paths.cache": str(tmp / "cache"),
        "wikidata.snapshot": str(SNAPSHOT),
        "wikidata.backoff_base": 0.5,
    }
    base.update(overrides)
    return load_config(search_cwd=False, overrides=base)


def outputs(tmp: Path) -> dict[str, bytes]:
    return {name: (tmp / "data" / "wikidata" / name).read_bytes() for name in FILES}


@pytest.fixture
def server():
    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as s:
        yield s


@pytest.fixture(scope="module")
def offline(tmp_path_factory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("offline")
    result = build_wikidata(config(tmp), source="snapshot")
    assert result["source"] == "snapshot"
    return outputs(tmp)


def same_as_offline(tmp: Path, offline: dict[str, bytes]) -> None:
    """Byte-identical concepts and Base KG; event classes identical but for the note that
    says why counts are missing (offline: no sitelinks; here: wikidata.counts = never)."""
    got = outputs(tmp)
    assert got["concepts.jsonl"] == offline["concepts.jsonl"]
    assert got["base_kg.jsonl"] == offline["base_kg.jsonl"]

    def strip(data: bytes) -> list[dict]:
        return [{k: v for k, v in json.loads(x).items() if k != "count_notes"} for x in data.splitlines()]

    assert strip(got["event_classes.jsonl"]) == strip(offline["event_classes.jsonl"])


def test_live_path_equals_the_offline_build_through_faults_and_pages(server, offline, tmp_path):
    cfg = config(tmp_path, **{"wikidata.endpoint": server.endpoint, "wikidata.page_size": 40,
                              "wikidata.values_batch": 30, "wikidata.counts": "never", "wikidata.timeout": 2.0})
    # faults spread over the run: on instance pages, fact batches, term batches
    for n, fault in {3: Fault(status=429, retry_after=4), 20: Fault(status=503), 61: Fault(delay=5.0),
                     75: Fault(truncate=True), 90: Fault(malformed=True),
                     120: Fault(body=b'{"head": {"vars": []}}'), 150: Fault(status=502)}.items():
        server.schedule(n, fault)
    waits = Waits()
    result = build_wikidata(cfg, source="live", sleep=waits)
    assert result["source"] == "live" and result["endpoint"] == server.endpoint
    same_as_offline(tmp_path, offline)
    assert result["queries"]["retries"] == 7 and 4.0 in waits
    # Seven requests failed; the slow one (61) is answered by the server after the client gave up
    # on it, at a moment that depends on scheduling, so it may or may not be counted yet.
    assert len(server.requests) - 7 <= server.answered <= len(server.requests) - 6
    assert len(server.requests) - 7 > 150
    assert server.user_agents() == {load_config(search_cwd=False).get("wikidata.user_agent")}
    manifest = json.loads((tmp_path / "data" / "wikidata" / "manifest.json").read_text())
    assert manifest["source"] == "live" and manifest["endpoint"] == server.endpoint
    assert manifest["counts"]["base_kg_class_pairs"] == 427 and manifest["counts"]["base_kg_instance_pairs"] == 399
    assert manifest["config"]["wikidata"]["page_size"] == 40

    # a rerun is served from the cache: not one request, the same files
    before = len(server.requests)
    again = build_wikidata(cfg, source="live", sleep=waits)
    assert len(server.requests) == before
    assert again["queries"]["requests"] == 0 and again["queries"]["cache_hits"] == again["queries"]["queries"]
    same_as_offline(tmp_path, offline)
    # --refresh asks again
    build_wikidata(cfg, source="live", refresh=True, sleep=waits)
    assert len(server.requests) == 2 * before - 7


def test_an_invalid_qid_in_the_config_stops_before_any_request(server, tmp_path):
    cfg = config(tmp_path, **{"wikidata.endpoint": server.endpoint,
                              "wikidata.seed_classes": ["Q198", "Q19 8"]})
    with pytest.raises(ConfigError, match=r"wikidata.seed_classes\[1\]: 'Q19 8' is not a Wikidata item id"):
        build_wikidata(cfg, source="live")
    assert server.requests == []
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("fault", [Fault(body=b'{"head": {"vars": ["x"]}, "results": {"bindings": "none"}}'),
                                   Fault(status=503)], ids=["malformed", "503"])
def test_a_failure_mid_run_leaves_no_partial_output(server, tmp_path, fault):
    cfg = config(tmp_path, **{"wikidata.endpoint": server.endpoint, "wikidata.max_retries": 1,
                              "wikidata.counts": "never"})
    out = tmp_path / "data" / "wikidata"
    out.mkdir(parents=True)
    (out / "concepts.jsonl").write_text("previous run\n")
    for n in range(30, 40):
        server.schedule(n, fault)
    with pytest.raises(SourceError) as err:
        build_wikidata(cfg, source="live", sleep=Waits())
    assert f"at {server.endpoint} failed after 2 attempts" in str(err.value)
    assert sorted(p.name for p in out.iterdir()) == ["concepts.jsonl"]  # no temp file, no new file
    assert (out / "concepts.jsonl").read_text() == "previous run\n"


# --- the INVENTED graph -----------------------------------------------------------------------

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
ALT = "http://www.w3.org/2004/02/skos/core#altLabel"
DESC = "http://schema.org/description"
ABOUT, PART, NAME = "http://schema.org/about", "http://schema.org/isPartOf", "http://schema.org/name"
TRICKY = 'A "quoted" } UNION { ?s ?p ?o } label'


def invented_store() -> ox.Store:
    """INVENTED data (not Wikidata): QIDs Q9000... name made-up items, to exercise discovery,
    counts, subclass chains, inverse properties and class-valued effects."""
    t: list[tuple] = []

    def rel(s, p, o):
        t.append((ox.NamedNode(WD + s), ox.NamedNode(WDT + p), ox.NamedNode(WD + o)))

    def lit(s, p, text, lang="en"):
        t.append((ox.NamedNode(WD + s), ox.NamedNode(p), ox.Literal(text, language=lang)))

    def link(qid, site, title):
        a = ox.NamedNode(f"{site}wiki/{title.replace(' ', '_')}")
        t.extend([(a, ox.NamedNode(ABOUT), ox.NamedNode(WD + qid)), (a, ox.NamedNode(PART), ox.NamedNode(site)),
                  (a, ox.NamedNode(NAME), ox.Literal(title, language="en"))])

    rel("Q9100", "P279", "Q9101"); rel("Q9101", "P279", "Q1190554")  # seed class under occurrence
    rel("Q9103", "P279", "Q9100")  # a second seed, subclass of the first
    rel("Q9104", "P279", "Q9100")  # a subclass whose instances are instances of Q9100
    rel("Q9105", "P279", "Q1190554")  # a discovered, non-seed event class
    lit("Q9100", LABEL, "invented event"); lit("Q9100", LABEL, "erfundenes Ereignis", "de")
    lit("Q9100", ALT, "made-up event"); lit("Q9100", DESC, "an invented class for tests")
    lit("Q9105", LABEL, "invented discovered class")
    rel("Q9200", "P31", "Q9100"); rel("Q9201", "P31", "Q9100"); rel("Q9210", "P31", "Q9104")
    rel("Q9202", "P31", "Q9102")  # Q9102 is not an occurrence: never discovered
    rel("Q9203", "P31", "Q9105")
    lit("Q9200", LABEL, TRICKY)
    for q, title in (("Q9200", "Invented A"), ("Q9201", "Invented B"), ("Q9202", "Invented C"), ("Q9203", "Invented D")):
        link(q, "https://en.wikinews.org/", title)
    link("Q9200", "https://en.wikipedia.org/", "Invented A (event)")
    rel("Q9200", "P1542", "Q9300"); rel("Q9300", "P31", "Q9400")  # forward
    rel("Q9301", "P828", "Q9210"); rel("Q9301", "P31", "Q9401")  # inverse: Q9210 causes Q9301
    rel("Q9200", "P1536", "Q9302"); rel("Q9302", "P279", "Q9402")  # a class-valued effect
    rel("Q9210", "P1537", "Q9303")  # an effect without any class: not lifted
    rel("Q9100", "P1542", "Q9404")  # a class-level statement
    rel("Q9200", "P361", "Q9405")  # not a causal property
    store = ox.Store()
    store.extend([ox.Quad(*x) for x in t])
    return store


def test_discovery_counts_and_lifting_on_invented_data(tmp_path):
    with SPARQLServer(invented_store()) as server:
        cfg = config(tmp_path, **{"wikidata.endpoint": server.endpoint, "wikidata.seed_classes": ["Q9100", "Q9103"],
                                  "wikidata.page_size": 2, "wikidata.values_batch": 2,
                                  "wikidata.languages": ["en", "de"]})
        result = build_wikidata(cfg, source="live", sleep=Waits())
        assert not any("invented" in q.lower() or "quoted" in q for q in server.queries)  # labels never in queries
    out = tmp_path / "data" / "wikidata"
    classes = {e.id: e for e in read_jsonl(out / "event_classes.jsonl", EventClass)}
    assert list(classes) == ["Q9100", "Q9103", "Q9105"]  # seeds in config order, then discovered
    assert classes["Q9100"].discovered and classes["Q9100"].seed
    assert (classes["Q9100"].wikinews_instances, classes["Q9100"].enwiki_instances) == (2, 1)
    assert not classes["Q9103"].discovered and classes["Q9103"].wikinews_instances == 0
    assert classes["Q9105"].label == "invented discovered class" and not classes["Q9105"].seed
    assert result["counts"]["event_classes_discovered"] == 2

    concepts = {c.id: c for c in read_jsonl(out / "concepts.jsonl", Concept)}
    assert {q for q, c in concepts.items() if c.kind == "class"} == {"Q9100", "Q9103", "Q9400", "Q9401", "Q9402", "Q9404"}
    assert {q for q, c in concepts.items() if c.kind == "instance"} == {"Q9200", "Q9201", "Q9210", "Q9300", "Q9301", "Q9302"}
    seed = concepts["Q9100"]
    assert (seed.label, seed.aliases, seed.description) == ("invented event", ["made-up event"], "an invented class for tests")
    assert seed.subclass_of == ["Q9101"] and seed.seed_classes == ["Q9100"]
    assert concepts["Q9103"].seed_classes == ["Q9100", "Q9103"]
    assert concepts["Q9210"].seed_classes == ["Q9100"] and concepts["Q9210"].instance_of == ["Q9104"]
    assert concepts["Q9200"].label == TRICKY and concepts["Q9200"].enwiki_title == "Invented A (event)"
    assert concepts["Q9300"].seed_classes == []  # an effect, not an instance of a seed class

    lines = list(read_jsonl(out / "base_kg.jsonl", BaseKGLine))
    assert [line.event.id for line in lines] == ["Q9100", "Q9103"]
    assert lines[1].consequences == []
    cons = {c.id: c for c in lines[0].consequences}
    assert set(cons) == {"Q9400", "Q9401", "Q9402", "Q9404"}
    ex = {c: [(e.cause.id, e.effect.id, tuple(e.properties)) for e in k.examples] for c, k in cons.items()}
    assert ex == {"Q9400": [("Q9200", "Q9300", ("P1542",))], "Q9401": [("Q9210", "Q9301", ("P828",))],
                  "Q9402": [("Q9200", "Q9302", ("P1536",))], "Q9404": []}
    assert cons["Q9404"].direct_properties == ["P1542"] and cons["Q9404"].facts_count == 1
    assert lines[0].event.usage_count == 2 and lines[0].event.page_count == 1
    assert result["counts"]["base_kg_effects_without_class"] == 1
    assert result["counts"]["base_kg_facts"] == 5


def test_max_examples_trims_examples_but_not_facts_count(tmp_path):
    with SPARQLServer(invented_store()) as server:
        store = server.store
        for n in range(5):  # five more effects of class Q9400 for Q9201
            store.add(ox.Quad(ox.NamedNode(f"{WD}Q92{n}0"), ox.NamedNode(WDT + "P31"), ox.NamedNode(WD + "Q9400")))
            store.add(ox.Quad(ox.NamedNode(WD + "Q9201"), ox.NamedNode(WDT + "P1542"), ox.NamedNode(f"{WD}Q92{n}0")))
        cfg = config(tmp_path, **{"wikidata.endpoint": server.endpoint, "wikidata.seed_classes": ["Q9100"],
                                  "wikidata.max_examples": 2, "wikidata.counts": "never"})
        result = build_wikidata(cfg, source="live", sleep=Waits())
    line = next(read_jsonl(tmp_path / "data" / "wikidata" / "base_kg.jsonl", BaseKGLine))
    top = line.consequences[0]
    assert top.id == "Q9400" and top.facts_count == 6 and len(top.examples) == 2
    assert result["counts"]["base_kg_examples_trimmed"] == 4
    assert line.event.usage_count is None  # counts = never


def test_auto_uses_the_endpoint_when_it_answers(server, tmp_path, caplog):
    cfg = config(tmp_path, **{"wikidata.endpoint": server.endpoint, "wikidata.counts": "never"})
    result = build_wikidata(cfg, source="auto")
    assert result["source"] == "live"
    assert server.requests[0]["query"].rstrip().endswith("SELECT ?ok WHERE { BIND(true AS ?ok) }")


def test_dry_run_asks_nothing_and_writes_nothing(server, tmp_path):
    cfg = config(tmp_path, **{"wikidata.endpoint": server.endpoint})
    result = build_wikidata(cfg, source="auto", dry_run=True)
    assert server.requests == [] and not (tmp_path / "data").exists()
    assert result["plan"][0].startswith(f"source: auto: would probe {server.endpoint}")
