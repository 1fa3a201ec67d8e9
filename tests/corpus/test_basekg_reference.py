"""The Base KG built from the bundled snapshot gives back the WikiCausal Base KG v1 (the copy in
snapshots/wikicausal/): the same 427 class pairs and 399 instance pairs. And the snapshot is
exactly what its build script makes from the real data (no triple from anywhere else)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import BaseKGLine
from causalkg.core.jsonl import read_jsonl
from causalkg.corpus import basekg, wikidata
from causalkg.corpus.snapshot import SnapshotEngine, serialize_ntriples, snapshot_triples

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
REFERENCE = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"
EXTRACT = REPO / "snapshots" / "wikidata" / "historic-events-extract.json"


@pytest.fixture(scope="module")
def reference() -> list[dict]:
    return list(read_jsonl(REFERENCE))


@pytest.fixture(scope="module")
def built():
    """The Base KG from the snapshot, through the same functions `corpus build` uses."""
    s = wikidata.WikidataSettings.from_config(load_config(search_cwd=False))
    engine = SnapshotEngine(SNAPSHOT)
    instances = wikidata.instances_of_seeds(engine, s)
    members = {x for items in instances.values() for x in items}
    facts = basekg.fetch_causal_facts(engine, members | set(s.seeds), s)
    terms = wikidata.fetch_terms(engine, set(s.seeds) | members | {f.effect for f in facts}, s)
    more = basekg.consequence_classes(s.seeds, instances, facts, terms) - set(terms)
    terms.update(wikidata.fetch_terms(engine, more, s))
    lines, stats = basekg.build_base_kg(s.seeds, instances, facts, terms)
    # the corpus build's way: one line at a time, the stats complete after the last
    streamed_stats = basekg.BaseKGStats()
    stream = basekg.iter_base_kg(s.seeds, instances, facts, terms, stats=streamed_stats)
    first = next(stream)
    assert streamed_stats.consequences == len(first.consequences) < stats.consequences
    assert [first, *stream] == lines and streamed_stats.to_dict() == stats.to_dict()
    return lines, stats


def by_pair(lines) -> dict[tuple[str, str], set[tuple[str, str]]]:
    out: dict = defaultdict(set)
    for line in lines:
        d = line.model_dump() if isinstance(line, BaseKGLine) else line
        for c in d["consequences"]:
            out[(d["event"]["id"], c["id"])] |= {(e["cause"]["id"], e["effect"]["id"]) for e in c["examples"]}
    return out


def test_class_and_instance_pairs_are_exactly_the_reference(built, reference):
    lines, _ = built
    assert len(basekg.class_pairs(reference)) == 427 and len(basekg.instance_pairs(reference)) == 399
    assert basekg.class_pairs(lines) == basekg.class_pairs(reference)
    assert basekg.instance_pairs(lines) == basekg.instance_pairs(reference)


def test_lines_follow_the_reference_event_order_and_labels(built, reference):
    lines, _ = built
    assert [line.event.id for line in lines] == [r["event"]["id"] for r in reference]
    for line, ref in zip(lines, reference):
        assert line.event.label == ref["event"]["label"]
        assert set(line.event.labels) == set(ref["event"]["labels"])
        refc = {c["id"]: c for c in ref["consequences"]}
        for c in line.consequences:
            assert c.label == refc[c.id]["label"]
            assert set(c.labels) == set(refc[c.id]["labels"])


def test_every_reference_example_is_under_its_class_pair(built, reference):
    lines, stats = built
    ours, ref = by_pair(lines), by_pair(reference)
    assert set(ours) == set(ref)
    missing = {k: ref[k] - ours[k] for k in ref if ref[k] - ours[k]}
    assert missing == {}
    # Lifting attaches an instance pair to every (class of cause, class of effect) pair, where
    # the reference kept a sample of at most five: 11 pairs sit under one more class pair
    # here, all of them where the reference lists exactly five examples (its cap).
    extra = {k: ours[k] - ref[k] for k in ours if ours[k] - ref[k]}
    assert sum(len(v) for v in extra.values()) == 11
    assert all(len(ref[k]) == 5 for k in extra)
    assert stats.examples == 563 + 11


def test_pairs_without_examples_come_from_class_level_statements(built, reference):
    lines, stats = built
    no_examples = {(r["event"]["id"], c["id"]) for r in reference for c in r["consequences"] if not c["examples"]}
    assert len(no_examples) == 48 and stats.class_statements == 48
    for line in lines:
        for c in line.consequences:
            pair = (line.event.id, c.id)
            assert (c.direct_properties == ["P1542"]) == (pair in no_examples)
            assert c.facts_count == len(c.examples) + (1 if pair in no_examples else 0)


def test_examples_carry_their_property(built):
    lines, stats = built
    props = {tuple(e.properties) for line in lines for c in line.consequences for e in c.examples}
    assert props == {("P1542",)}
    assert stats.facts_by_property == {"P1542": 399 + 48}


def test_the_snapshot_is_what_the_build_script_makes(reference):
    """Rebuild the snapshot from the reference Base KG and the bundled extract of the historic
    events: byte-identical N-Triples."""
    extract = json.loads(EXTRACT.read_text(encoding="utf-8"))
    triples, stats = snapshot_triples(reference, extract)
    with gzip.open(SNAPSHOT, "rb") as fh:
        bundled = fh.read()
    assert serialize_ntriples(triples) == bundled
    assert stats["class_pairs"] == 427 and stats["instance_pairs"] == 399
    assert stats["enwiki_sitelinks"] == 8 == len(extract)


def test_only_eight_items_have_an_enwiki_title_and_they_are_real():
    engine = SnapshotEngine(SNAPSHOT)
    doc = engine.select(wikidata.Q.Query("sitelinks", wikidata.Q.PREFIXES + """
        SELECT ?item ?title WHERE { ?a schema:about ?item ; schema:isPartOf <https://en.wikipedia.org/> ;
        schema:name ?title } ORDER BY ?item"""))
    titles = {r["item"]["value"].rsplit("/", 1)[1]: r["title"]["value"] for r in doc["results"]["bindings"]}
    assert len(titles) == 8
    assert titles["Q33761"] == "Arab Spring"
    assert titles["Q22948744"] == "Rebellion of the Alpujarras (1499–1501)"  # percent-decoded
