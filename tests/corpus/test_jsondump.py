"""Wikidata from its JSON dump (corpus.jsondump): the bundled snapshot's entities written as
dump lines in the real entity format (statements shaped like the real Q1299 fixture's), read
back through `--source json-dump` in parallel, give exactly the snapshot path's event classes,
concepts and Base KG; ranks, snak types and sites follow the query service's `wdt:` rules."""

from __future__ import annotations

import bz2
import copy
import gzip
import json
import uuid
from collections import defaultdict
from pathlib import Path

import pyoxigraph as ox
import pytest

from causalkg.core.config import load_config
from causalkg.corpus.build import build_wikidata
from causalkg.corpus.jsondump import DumpFilter, convert, entity_triples, site_iri
from causalkg.core.errors import SourceError

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
BEATLES = REPO / "tests" / "fixtures" / "wikidata-json" / "Q1299-trimmed.json"
FILES = ("event_classes.jsonl", "concepts.jsonl", "base_kg.jsonl")
E = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
KEEP = DumpFilter(languages=("en",), properties=("P31", "P279", "P1542", "P828"),
                  sites=("https://en.wikipedia.org/", "https://en.wikinews.org/"))


def beatles() -> dict:
    return json.loads(BEATLES.read_text())


def statement(subject: str, pid: str, qid: str, rank: str = "normal") -> dict:
    """A statement in the real shape: the fixture's own P31 statement with its values replaced."""
    s = copy.deepcopy(beatles()["claims"]["P31"][0])
    s["mainsnak"]["property"] = pid
    s["mainsnak"]["datavalue"]["value"] = {"entity-type": "item", "numeric-id": int(qid[1:]), "id": qid}
    s["id"] = f"{subject}${str(uuid.uuid5(uuid.NAMESPACE_URL, f'{subject}/{pid}/{qid}')).upper()}"
    s["rank"] = rank
    return s


def snapshot_entities() -> list[dict]:
    """Every subject item of the snapshot as a dump entity (labels, aliases, claims, sitelinks)."""
    with gzip.open(SNAPSHOT, "rb") as fh:
        triples = list(ox.parse(fh, format=ox.RdfFormat.N_TRIPLES))
    ents: dict[str, dict] = defaultdict(lambda: {"labels": {}, "descriptions": {}, "aliases": {}, "claims": {},
                                                 "sitelinks": {}})
    about, names = {}, {}
    for t in triples:
        s, p, o = t.subject.value, t.predicate.value, t.object
        if s.startswith(E):
            q = s[len(E):]
            e = ents[q]
            if p.endswith("rdf-schema#label"):
                e["labels"]["en"] = {"language": "en", "value": o.value}
            elif p.endswith("core#altLabel"):
                e["aliases"].setdefault("en", []).append({"language": "en", "value": o.value})
            elif p.startswith(WDT):
                pid = p[len(WDT):]
                e["claims"].setdefault(pid, []).append(statement(q, pid, o.value[len(E):]))
        elif p == "http://schema.org/about":
            about[s] = o.value[len(E):]
        elif p == "http://schema.org/name":
            names[s] = o.value
    for article, q in about.items():
        ents[q]["sitelinks"]["enwiki"] = {"site": "enwiki", "title": names[article], "badges": []}
    out = []
    for q in sorted(ents, key=lambda x: int(x[1:])):
        e = ents[q]
        for values in e["aliases"].values():
            values.sort(key=lambda a: a["value"])
        out.append({"type": "item", "id": q, "lastrevid": 1, "modified": "2024-01-01T00:00:00Z", **e})
    return out


def tricky(entities: list[dict]) -> list[dict]:
    """Things the dump has and `wdt:` leaves out, added to the snapshot's entities: a deprecated
    statement, normal statements beside preferred ones, somevalue/novalue snaks, labels in other
    languages, a Wikiquote and a Commons sitelink, a property entity, and the real Q1299 line."""
    out = copy.deepcopy(entities)
    first = next(e for e in out if "P1542" in e["claims"] and "P31" in e["claims"])
    q = first["id"]
    for s in first["claims"]["P31"]:
        s["rank"] = "preferred"
    first["claims"]["P31"].append(statement(q, "P31", "Q5741069"))                 # normal beside preferred
    first["claims"]["P1542"].append(statement(q, "P1542", "Q42", "deprecated"))    # deprecated
    some = statement(q, "P828", "Q1")
    some["mainsnak"] = {"snaktype": "somevalue", "property": "P828", "datatype": "wikibase-item"}
    first["claims"]["P828"] = [some]
    first["labels"]["de"] = {"language": "de", "value": "nur deutsch"}
    first["sitelinks"]["enwikiquote"] = {"site": "enwikiquote", "title": "Some quote page", "badges": []}
    first["sitelinks"]["commonswiki"] = {"site": "commonswiki", "title": "Category:Something", "badges": []}
    prop = {"type": "property", "id": "P1542", "datatype": "wikibase-item",
            "labels": {"en": {"language": "en", "value": "has effect"}}, "claims": {}}
    return [prop, beatles()] + out


def write_dump(path: Path, entities: list[dict]) -> None:
    """The dump's layout: "[", one entity per line with a trailing comma but the last, "]"."""
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in entities]
    body = ("[\n" + ",\n".join(lines) + "\n]\n").encode("utf-8")
    if path.name.endswith(".bz2"):
        path.write_bytes(bz2.compress(body))
    elif path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(body, mtime=0))
    else:
        path.write_bytes(body)


def config(tmp: Path, **more):
    overrides = {"paths.data": str(tmp / "data"), "paths.cache": str(tmp / "cache"),
                 "wikidata.snapshot": str(SNAPSHOT), "wikidata.counts": "always"}
    overrides.update(more)
    return load_config(search_cwd=False, overrides=overrides)


def outputs(tmp: Path) -> dict[str, bytes]:
    return {f: (tmp / "data" / "wikidata" / f).read_bytes() for f in FILES}


def test_the_real_entity_shape_gives_the_truthy_triples():
    lines = entity_triples(beatles(), DumpFilter(("en",), ("P31", "P527"), ("https://en.wikipedia.org/",)))
    text = "".join(lines)
    assert f'<{E}Q1299> <http://www.w3.org/2000/01/rdf-schema#label> "The Beatles"@en .' in text
    assert f"<{E}Q1299> <{WDT}P31> <{E}Q5741069> ." in text
    assert text.count(f"<{WDT}P527>") == 6 and "Fab Four" in text
    assert '<http://schema.org/name> "The Beatles"@en' in text
    assert "@de" not in text and "wikiquote" not in text and "commons" not in text
    assert site_iri("enwiki") == "https://en.wikipedia.org/" and site_iri("enwikinews") == "https://en.wikinews.org/"
    assert site_iri("commonswiki") is None and site_iri("zh_yuewiki") == "https://zh-yue.wikipedia.org/"


@pytest.mark.parametrize("name,workers", [("latest-all.json.bz2", 2), ("latest-all.json.gz", 1), ("latest-all.json", 2)])
def test_conversion_is_the_same_for_every_compression_and_worker_count(tmp_path, name, workers):
    entities = tricky(snapshot_entities())
    write_dump(tmp_path / name, entities)
    stats = convert(tmp_path / name, tmp_path / "out.nt", KEEP, workers=workers, chunk_lines=37)
    write_dump(tmp_path / "one.json", entities)
    convert(tmp_path / "one.json", tmp_path / "one.nt", KEEP, workers=1)
    assert (tmp_path / "out.nt").read_bytes() == (tmp_path / "one.nt").read_bytes()
    assert stats.entities == len(entities) and stats.bad_lines == 0
    text = (tmp_path / "out.nt").read_text()
    assert f"<{E}Q42>" not in text and f"<{E}Q5741069>" in text  # the Beatles' P31, not the normal-beside-preferred one
    assert "nur deutsch" not in text and "Some quote page" not in text


def test_json_dump_source_equals_the_snapshot_path(tmp_path):
    snap = tmp_path / "snap"
    build_wikidata(config(snap), source="snapshot")
    dump = tmp_path / "latest-all.json.bz2"
    write_dump(dump, tricky(snapshot_entities()))
    jd = tmp_path / "jd"
    result = build_wikidata(config(jd, **{"wikidata.dump": str(dump), "run.workers": 2}), source="json-dump")
    assert result["source"] == "json-dump"
    assert outputs(jd) == outputs(snap)
    assert json.loads(outputs(jd)["base_kg.jsonl"].splitlines()[0])["event"]["page_count"] is not None
    manifest = json.loads((jd / "data" / "wikidata" / "manifest.json").read_text())
    assert manifest["json_dump"]["entities"] > 900 and manifest["json_dump"]["workers"] == 2
    # a rerun loads the converted store from the cache: same files, no conversion
    again = build_wikidata(config(jd, **{"wikidata.dump": str(dump)}), source="json-dump")
    assert outputs(jd) == outputs(snap) and again["counts"] == result["counts"]


def test_json_dump_source_needs_a_dump(tmp_path):
    from causalkg.core.errors import ConfigError
    with pytest.raises(ConfigError, match="needs a dump"):
        build_wikidata(config(tmp_path), source="json-dump")
    (tmp_path / "empty.json").write_text("[\n]\n")
    with pytest.raises(SourceError, match="holds no entity"):
        build_wikidata(config(tmp_path, **{"wikidata.dump": str(tmp_path / "empty.json")}), source="json-dump")


def test_a_broken_line_is_counted_and_named(tmp_path):
    lines = ["[", json.dumps(beatles()) + ",", '{"type": "item", "id": "Q2", "labels": {', "]"]
    (tmp_path / "d.json.gz").write_bytes(gzip.compress("\n".join(lines).encode(), mtime=0))
    stats = convert(tmp_path / "d.json.gz", tmp_path / "out.nt", KEEP, workers=1)
    assert stats.entities == 1 and stats.bad_lines == 1
    assert stats.bad[0].startswith("line 3: not JSON")
