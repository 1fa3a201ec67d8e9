"""The held-out quality figure (``python -m bench heldout``): the split is fixed, a small part of
dev goes through assemble and the judged fixture, and unjudged items are listed, never counted."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from bench import bench_heldout as bh

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures"
PART = ("Exxon Valdez Oil Spill", "Hurricane Katrina", "Mount Tambora")


def test_the_split_is_the_salted_title_hash_stratified_by_domain():
    rows = [r.split("\t") for r in (bh.HELDOUT / "split.tsv").read_text(encoding="utf-8").split("\n")[1:] if r]
    assert len(rows) == 581
    sw100 = [r for r in rows if r[5].startswith("SW100/")]
    hese = [r for r in rows if r[5].startswith("HESE/")]
    fresh = [r for r in rows if r[5].startswith("FreshWiki/")]
    llma = [r for r in rows if r[5].startswith("LLM-Attributor/")]
    wikigen = [r for r in rows if r[5].startswith("WikiGenBench/")]
    chinapedia = [r for r in rows if r[5].startswith("chinapedia/")]
    assert len(sw100) == 60 and len(hese) == 300 and len(fresh) == 25 and len(llma) == 12 and len(wikigen) == 52
    assert len(chinapedia) == 132
    # each source's ids follow the one before it: adding a source moved nothing
    assert sorted(int(r[0]) for r in sw100) == list(range(2000000001, 2000000061))
    assert sorted(int(r[0]) for r in hese) == list(range(2000000061, 2000000361))
    assert sorted(int(r[0]) for r in fresh) == list(range(2000000361, 2000000386))
    assert sorted(int(r[0]) for r in llma) == list(range(2000000386, 2000000398))
    assert sorted(int(r[0]) for r in wikigen) == list(range(2000000398, 2000000450))
    # one title dealt and then left out (a football rivalry, CHINAPEDIA_NOT_EVENTS): its id is unused
    assert sorted(int(r[0]) for r in chinapedia) == [i for i in range(2000000450, 2000000583) if i != 2000000535]
    assert all(r[4].startswith("Q") for r in hese) and not any(r[4] for r in fresh + llma + wikigen + chinapedia)
    by_domain: dict[tuple[str, str], list[list[str]]] = {}
    read_before = [r for r in fresh if r[3] == "2022 Luzon earthquake"]
    assert [r[1] for r in read_before] == ["dev"]  # read before the split was fixed: dev
    for r in rows:
        if r not in read_before:
            by_domain.setdefault((r[5].split("/")[0], r[2]), []).append(r)
    # the title left out after the dealing took its turn in it (a dev place)
    by_domain[("chinapedia", "war")].append(["2000000535", "dev", "war", "Battle of Jutland (Denmark)"])
    assert sorted({r[2] for r in sw100}) == ["disaster", "disease", "economics", "geology", "history", "politics"]
    assert sorted({r[2] for r in hese}) == ["battle", "civil-war", "conflict", "crusade", "invasion", "revolution", "war"]
    assert sorted({r[2] for r in fresh}) == ["accident", "attack", "crisis", "election", "hazard"]
    assert sorted({r[2] for r in llma}) == ["hazard", "human"]
    assert sorted({r[2] for r in wikigen}) == ["crisis", "election", "epidemic", "hazard", "violence", "war"]
    assert sorted({r[2] for r in chinapedia}) == ["accident", "hazard", "violence", "war"]
    assert len({r[3].casefold() for r in rows}) == len(rows)  # no article twice
    for domain, items in by_domain.items():
        order = sorted(items, key=lambda r: hashlib.sha256(f"causalkg-heldout-v1:{r[3]}".encode()).hexdigest())
        assert [r[1] for r in order] == ["dev", "test"] * (len(items) // 2) + ["dev"] * (len(items) % 2), domain
    for split in bh.SPLITS:
        ids = {json.loads(x)["id"] for x in bh.select(split)}
        assert ids == {int(r[0]) for r in rows if r[1] == split}
    assert len(bh.select("dev", limit=3, domain="geology")) == 3
    assert len(bh.select("test", domain="war")) == 115


def test_the_whole_article_records_are_prose_without_citation_markers():
    import re

    docs = [json.loads(x) for s in bh.SPLITS for x in bh.select(s)]
    fresh = [d for d in docs if d["id"] > 2000000360]
    assert len(fresh) == 221  # FreshWiki's 25, LLM-Attributor's 12, WikiGenBench's 52, chinapedia's 132
    for d in fresh:
        paras = d["text"].split("\n\n")
        assert d["url"].startswith("https://en.wikipedia.org/wiki/") and not d["document_concept"]["resolved"]
        assert not re.search(r"\[\d+\]", d["text"]), d["title"]  # citation markers removed
        assert not {"References", "See also", "External links"} & set(paras), d["title"]  # the text ends before them
        assert d["first_section"] and d["text"].startswith(d["first_section"])
        assert not re.search(r"\]\]|\+-{3}|thumb\|", d["text"]), d["title"]  # no captions' or tables' markup
    # whole articles: HESE lead sections are about 1,400 characters (one 2019 article is a table
    # of fires after a 429-character lead, and tables are left out)
    sizes = sorted(len(d["text"]) for d in fresh)
    assert sizes[0] > 400 and sizes[len(sizes) // 2] > 10_000


@pytest.fixture
def project(tmp_path):
    """A data folder with the small real vocabulary of the kg tests and its linking index."""
    from causalkg.core.config import load_config
    from causalkg.linking.index import build_index

    (tmp_path / "data" / "wikidata").mkdir(parents=True)
    shutil.copy(FIX / "kg" / "concepts.jsonl", tmp_path / "data" / "wikidata" / "concepts.jsonl")
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data")})
    assert build_index(cfg)["built"]
    return tmp_path, cfg


def test_a_small_part_of_dev_end_to_end(project):
    root, cfg = project
    lines = [ln for ln in bh.select("dev") if json.loads(ln)["title"] in PART]
    work = root / "data" / "heldout" / "dev-part"
    pairs = bh.build("dev", work, lines, cfg, extractions=FIX / "heldout" / "dev-extractions.jsonl")
    row = bh.figures("dev-part", pairs, bh.JUDGED / "heldout-dev" / "judgements.jsonl", len(lines),
                     work / "judge_todo.jsonl")
    todo = [json.loads(x) for x in (work / "judge_todo.jsonl").read_text(encoding="utf-8").split("\n") if x]
    edges = [json.loads(x) for x in pairs.read_text(encoding="utf-8").split("\n") if x]
    assert [(e["cause"]["label"], e["effect"]["label"]) for e in edges] == [("volcanic eruption", "death")]
    assert row == {"set": "dev-part", "articles": 3, "edges": 1, "judged": 1, "supported %": 100.0,
                   "supported 95% interval": "21-100", "plausible %": 100.0, "supported": 1, "supported / 100 articles": 33.3,
                   "unjudged items": 0, "unjudged edges": 0}
    assert todo == []

    # without its judgement the same edge is listed to judge, and counted neither good nor bad
    empty = root / "none.jsonl"
    empty.write_text("", encoding="utf-8")
    row = bh.figures("dev-part", pairs, empty, len(lines), work / "judge_todo.jsonl")
    assert (row["edges"], row["judged"], row["supported"], row["supported %"], row["unjudged edges"]) == (1, 0, 0, None, 1)
    assert row["supported 95% interval"] is None
    todo = [json.loads(x) for x in (work / "judge_todo.jsonl").read_text(encoding="utf-8").split("\n") if x]
    assert len(todo) == row["unjudged items"] == 1
    assert todo[0]["sentence"].startswith("Most deaths from the eruption")
    assert all(todo[0][k] is None for k in ("stated", "asserted", "cause_ok", "effect_ok", "plausible"))


def test_the_confidence_curve_of_a_small_part_of_dev(project):
    from causalkg.core.config import load_config

    root, _ = project
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(root / "data"), "kg.min_confidence": 0.0})
    lines = [ln for ln in bh.select("dev") if json.loads(ln)["title"] in PART]
    pairs = bh.build("dev", root / "data" / "heldout" / "dev-all", lines, cfg,
                     extractions=FIX / "heldout" / "dev-extractions.jsonl")
    rows = bh.judged_features(pairs, bh.JUDGED / "heldout-dev" / "judgements.jsonl")
    assert [(s, p) for _, s, p in rows] == [(1, 1)]
    assert set(rows[0][0]) == {"score", "link", "exact", "support", "structured", "temporal", "lifted", "cue"}
    # in use the edge is kept at 0.5; a bias of -10 drops it below every threshold but 0
    kept = {r["min_confidence"]: r["judged edges"] for r in bh.curve(rows)}
    assert kept[0.0] == kept[0.5] == 1
    low = bh.curve(rows, {"bias": -10.0}, thresholds=(0.0, 0.3))
    assert low == [{"min_confidence": 0.0, "judged edges": 1, "supported": 1, "supported %": 100.0, "plausible %": 100.0},
                   {"min_confidence": 0.3, "judged edges": 0, "supported": 0, "supported %": None, "plausible %": None}]


def test_the_own_concepts_vocabulary_adds_each_articles_event_once(project):
    from causalkg.linking.linker import Linker

    root, cfg = project
    own = bh.own_vocabulary(root / "data", cfg)
    assert own.path("paths.data") == root / "data" / "heldout" / "vocab"
    base = (root / "data" / "wikidata" / "concepts.jsonl").read_text(encoding="utf-8").splitlines()
    lines = (own.path("paths.data") / "wikidata" / "concepts.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines[:len(base)] == base
    added = {c["id"]: c for c in map(json.loads, lines[len(base):])}
    resolved = {json.loads(x)["document_concept"]["id"] for s in bh.SPLITS for x in bh.select(s)} - {None}
    assert set(added) == resolved - {json.loads(x)["id"] for x in base} and len(added) == len(lines) - len(base)
    assert all(c["kind"] == "instance" and not c["instance_of"] for c in added.values())
    # the source's label stays; the article title (without a bracketed qualifier) is an alias
    assert added["Q2887801"]["label"] == "Adibo dali" and added["Q2887801"]["aliases"] == ["Battle of Adibo"]
    pig = next(c for c in added.values() if c["enwiki_title"] == "Pig War (1859)")
    assert "Pig War" in [pig["label"], *pig["aliases"]]
    best = Linker.load(own).link(["Battle of Adibo"], k=1)[0][0]
    assert (best.qid, best.match) == ("Q2887801", "exact")
    # a second call finds the folder current: nothing rewritten
    stamp = (own.path("paths.data") / "wikidata" / "concepts.jsonl").stat().st_mtime_ns
    bh.own_vocabulary(root / "data", cfg)
    assert (own.path("paths.data") / "wikidata" / "concepts.jsonl").stat().st_mtime_ns == stamp


def test_python_m_bench_passes_options_to_one_benchmark():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "bench", "heldout", "--split", "nosuch"], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "invalid choice: 'nosuch'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "bench", "heldout", "edges", "--fit"], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "options go to one benchmark" in r.stderr


def test_the_supported_share_carries_its_wilson_interval():
    from causalkg.evaluation.wikicausal.precision import wilson_interval

    # 14 of 22 judged edges: 64%, and with so few edges anything from 43% to 80% is as likely a rate
    assert bh._interval(14, 22, wilson_interval) == "43-80"
    assert bh._interval(43, 49, wilson_interval) == "76-94"
    assert bh._interval(0, 0, wilson_interval) is None


def test_the_rule_ablation_of_a_small_part_of_dev(project):
    root, _ = project
    work = root / "data" / "heldout" / "dev"
    work.mkdir(parents=True)
    shutil.copy(FIX / "heldout" / "dev-extractions.jsonl", work / "extractions.jsonl")
    rows = bh.ablation(("dev",), data=root / "data", snapshot=False, families=("unstated", "temporal"),
                       overrides={"paths.data": str(root / "data")})
    by = {r["left out of kg.drop"]: r for r in rows}
    assert list(by) == ["nothing (the default)", "unstated", "temporal", "all 7"]
    # the default is the KG of the plain build: one edge, supported
    assert (by["nothing (the default)"]["dev edges"], by["nothing (the default)"]["dev supported"]) == (1, 1)
    # each setting is its own KG, and its unjudged evidence is listed to judge, never counted
    for tag in ("default", "unstated", "temporal", "all"):
        assert (root / "data" / "heldout" / f"dev-keep-{tag}" / "kg" / "causal_kg_pairs.jsonl").is_file()
    # the three articles' six flagged pairs (2 unstated, 2 temporal, 1 negated, 1 reversed): each setting
    # drops the others; none of the kept ones links to two concepts of this small vocabulary
    dropped = {tag: json.loads((root / "data" / "heldout" / f"dev-keep-{tag}" / "kg" / "manifest.json")
                               .read_text(encoding="utf-8"))["counts"]["link_unasserted_dropped"]
               for tag in ("default", "unstated", "temporal", "all")}
    assert dropped == {"default": 6, "unstated": 4, "temporal": 4, "all": 0}
    assert all(r["dev edges"] == 1 for r in rows)
