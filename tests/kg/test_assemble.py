"""Assembly (kg/assemble.py and the modules it runs: kg/mentions.py, kg/aggregate.py,
kg/kgfiles.py): linking in shards, aggregation, lifting, the output shapes, the
CLI, skipping when current, and a kill during assembly followed by a rerun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import BaseKGLine, Candidate, Extraction, KGEdge, KGMention
from causalkg.core.jsonl import read_jsonl
from causalkg.kg import assemble as A
from causalkg.kg.aggregate import AggregateCounts, aggregate
from causalkg.kg.inputs import load_concepts
from causalkg.kg.kgfiles import nested_lines, unlisted_edges
from causalkg.kg.mentions import link_pairs

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"


def _cfg(tmp_path, **overrides):
    return load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data"), **overrides})


@pytest.fixture(scope="module")
def concepts():
    return load_concepts(FIX / "concepts.jsonl")


@pytest.fixture(scope="module")
def gold():
    return list(read_jsonl(FIX / "linked.jsonl", KGMention))


@pytest.fixture(scope="module")
def linker(tmp_path_factory):
    """A real linker (MiniLM + FAISS) over the fixture concepts, in memory."""
    from causalkg.linking.linker import Linker

    cfg = _cfg(tmp_path_factory.mktemp("lk"))
    return Linker.from_concepts(load_concepts(FIX / "concepts.jsonl").values(), cfg)


def _by_id(edges):
    return {e.edge_id: e for e in edges}


# --- aggregation with linked pairs given as data ---------------------------------------------


def test_aggregate_support_scores_and_levels(gold, concepts):
    edges = _by_id(aggregate(gold, concepts))
    e = edges["Q7944_Q8070"]
    assert e.level == "class" and e.cause.label == "earthquake" and e.effect.id == ["Q8070"]
    assert (e.support.sentences, e.support.documents, e.support.mentions) == (2, 1, 2)
    assert e.score.best == 0.93 and e.score.mean == pytest.approx((0.93 + 0.64) / 2)
    assert [m.cause.text for m in e.mentions] == ["The undersea megathrust earthquake", 'earthquakes in the "Ring of Fire"']
    inst = edges["Q130754_Q1312405"]
    assert inst.level == "instance" and inst.cause_kind == inst.effect_kind == "instance"
    mixed = edges["Q10806_Q4"]
    assert mixed.level == "mixed" and (mixed.cause_kind, mixed.effect_kind) == ("instance", "class")
    # every mention keeps its provenance
    m = inst.mentions[0]
    assert (m.doc_id, m.title, m.revision_id, m.extractor, m.model) == (
        "1", "2004 Indian Ocean earthquake", 1001, "qa", "models/causal-qa")
    assert m.sentence.text.startswith("The tsunami caused") and m.cause_candidates[0].qid == "Q130754"


def test_aggregate_two_mentions_in_one_sentence_count_one_sentence(gold, concepts):
    edges = _by_id(aggregate(gold, concepts))
    # "The attacks caused the deaths ... and the injuries ...": one sentence, two edges
    assert edges["Q10806_Q4"].support.sentences == 1
    assert edges["Q10806_Q193078"].support.sentences == 1
    assert aggregate(gold + gold[:2], concepts, counts=(c := AggregateCounts())) and c.duplicate_mentions == 2


def test_lifting_to_seed_and_p31_classes(gold, concepts):
    edges = _by_id(aggregate(gold, concepts, lift="both"))
    inst = edges["Q130754_Q1312405"]
    # cause: seed classes earthquake and tsunami; effect: P31 train wreck -> two class edges
    assert inst.lifted_to == ["Q7944_Q1078765", "Q8070_Q1078765"]
    up = edges["Q7944_Q1078765"]
    assert up.level == "class" and up.mentions == [] and up.support.direct_mentions == 0
    assert [x.edge_id for x in up.examples] == ["Q130754_Q1312405"]
    assert up.examples[0].cause.label == "2004 Indian Ocean earthquake"
    assert up.support.sentences == 1 and up.score.best == inst.score.best
    # seed classes only: the effect has none, so nothing is lifted from that edge
    seeds = _by_id(aggregate(gold, concepts, lift="seed_classes"))
    assert "Q7944_Q1078765" not in seeds and seeds["Q130754_Q1312405"].lifted_to == []
    assert "Q750215_Q4" in seeds  # mixed edge: 9/11 (seed: mass murder) -> death
    assert set(_by_id(aggregate(gold, concepts, lift="none"))) == {
        k for k, e in edges.items() if e.support.direct_mentions}


def test_lifted_support_merges_with_direct_mentions(concepts, gold):
    # a direct class edge that also gets a lifted example counts both sentences
    direct = [m for m in gold if m.cause.qid == "Q7944" and m.effect.qid == "Q8070"][0]
    inst = [m for m in gold if m.cause.qid == "Q130754"][0]
    moved = inst.model_copy(update={"effect": inst.effect.model_copy(update={"qid": "Q8070", "kind": "class",
                                                                            "label": "tsunami"})})
    e = _by_id(aggregate([direct, moved], concepts))["Q7944_Q8070"]
    assert e.support.direct_mentions == 1 and e.support.examples == 1 and e.support.sentences == 2
    assert [x.edge_id for x in e.examples] == ["Q130754_Q8070"]


def test_min_support_drops_edges_and_dangling_examples(gold, concepts):
    edges = _by_id(aggregate(gold, concepts, min_support=2))
    assert set(edges) == {"Q7944_Q8070"}
    for e in edges.values():
        assert all(x.edge_id in edges for x in e.examples)
        assert all(t in edges for t in e.lifted_to)


def test_link_pairs_keeps_both_ends_and_drops_self_loops(gold):
    xs = list(read_jsonl(FIX / "extractions.jsonl", Extraction))[:3]
    eq = Candidate(qid="Q7944", label="earthquake", surface="earthquake", score=0.9, kind="class")
    ts = Candidate(qid="Q8070", label="tsunami", surface="tsunami", score=0.8, kind="class")
    out, c = link_pairs(xs, [[eq], [eq], []], [[ts], [eq], [ts]], {})
    assert [m.effect.qid for m in out] == ["Q8070"]
    assert (c.linked, c.self_loops_dropped, c.cause_unlinked) == (1, 1, 1)
    assert out[0].cause.link_score == 0.9 and out[0].cause_candidates == [eq]
    out, c = link_pairs(xs, [[eq], [eq], []], [[ts], [eq], []], {}, allow_self_loops=True)
    assert len(out) == 2 and c.self_loops_kept == 1 and c.both_unlinked == 1


def test_nested_shape_is_read_by_the_reference_logic(gold, concepts, tmp_path):
    edges = aggregate(gold, concepts)
    lines = nested_lines(edges, concepts)
    for line in lines:
        BaseKGLine.model_validate(line)
    classes = {(ln["event"]["id"], c["id"]) for ln in lines for c in ln["consequences"]}
    examples = {(x["cause"]["id"], x["effect"]["id"]) for ln in lines for c in ln["consequences"] for x in c["examples"]}
    assert classes == {(e.cause.id[0], e.effect.id[0]) for e in edges if e.level == "class"}
    assert examples == {(x.cause.id, x.effect.id) for e in edges for x in e.examples}
    assert ("Q130754", "Q1312405") in examples  # the instance pair the Base KG also has
    eq = next(ln for ln in lines if ln["event"]["id"] == "Q7944")
    assert eq["event"]["labels"][:2] == ["earthquake", "earthquakes"]
    first = eq["consequences"][0]
    assert first["id"] == "Q8070" and first["support"]["sentences"] == 2 and len(first["mentions"]) == 2
    # nothing is lost: every edge is a class pair or an example, each in its own view
    assert classes | examples == {(e.cause.id[0], e.effect.id[0]) for e in edges} and not classes & examples
    assert unlisted_edges(edges) == []
    # an example carries its own level, so readers can tell instance from mixed edges
    levels = {x["level"] for ln in lines for c in ln["consequences"] for x in c["examples"]}
    assert levels == {"instance", "mixed"}


def test_nested_line_support_counts_each_sentence_once(gold, concepts):
    # "The attacks caused the deaths ... and the injuries ...": one sentence behind two mixed
    # edges, lifted to mass murder -> death and mass murder -> injury: one line, one sentence
    lines = nested_lines(aggregate(gold, concepts), concepts)
    mm = next(ln for ln in lines if ln["event"]["id"] == "Q750215")
    assert {c["id"] for c in mm["consequences"]} >= {"Q4", "Q193078"}
    assert [c["support"]["sentences"] for c in mm["consequences"]] == [1] * len(mm["consequences"])
    assert mm["support"] == {"sentences": 1, "documents": 1, "edges": len(mm["consequences"])}


def test_edges_with_no_class_are_counted_not_silently_lost(gold, concepts):
    edges = aggregate(gold, concepts, lift="none")
    lower = {e.edge_id for e in edges if e.level != "class"}
    assert lower and {e.edge_id for e in unlisted_edges(edges)} == lower
    lines = nested_lines(edges, concepts)
    assert not [x for ln in lines for c in ln["consequences"] for x in c["examples"]]


# --- the whole step --------------------------------------------------------------------------


def test_assemble_cli_from_linked_mentions(cli, in_tmp):
    args = ["kg", "assemble", "--linked", FIX / "linked.jsonl", "--concepts", FIX / "concepts.jsonl"]
    r = cli(*args)
    assert r.code == 0, r.err
    assert f"causal KG in {in_tmp}/data/kg written: 13 edges (10 class, 1 instance, 2 mixed), 13 concepts, 10 mentions" in r.out
    out = in_tmp / "data" / "kg"
    for name in ("causal_kg_pairs.jsonl", "causal_kg.jsonl", "causal_kg.ttl", "causal_kg.graphml", "manifest.json",
                 "nt/causal_kg-00000.nt"):
        assert (out / name).is_file(), name
    pairs = list(read_jsonl(out / "causal_kg_pairs.jsonl", KGEdge))
    assert len(pairs) == 13 and pairs[0].edge_id == "Q7944_Q8070"  # best-supported first
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["edges"] == 13 and manifest["counts"]["triples"] > 0
    assert set(manifest["checksums"]) >= {"causal_kg_pairs.jsonl", "causal_kg.ttl", "nt/causal_kg-00000.nt"}
    import networkx as nx

    g = nx.read_graphml(out / "causal_kg.graphml")
    assert g.number_of_edges() == 13 and g.nodes["Q7944"]["label"] == "earthquake"

    assert r.err == ""  # everything is said once, on stdout
    again = cli(*args)
    assert again.code == 0 and "is up to date (--force rebuilds it)" in again.out
    assert again.err == "" and again.out.count("up to date") == 1
    plan = cli(*args, "--dry-run")
    assert plan.code == 0 and plan.out.splitlines()[0] == f"plan: assemble the causal KG into {in_tmp}/data/kg"
    assert plan.out.splitlines()[-1] == "  outputs are up to date: nothing to do"
    # a query-time linker setting changes which concepts phrases link to: not current any more
    plan = cli(*args, "--dry-run", "--set", "linking.instance_threshold=0.9")
    assert plan.out.splitlines()[-1] == "  outputs will be (re)built"
    plan = cli(*args, "--dry-run", "--lift", "none")
    assert plan.out.splitlines()[-1] == "  outputs will be (re)built" and "lift=none" in plan.out
    assert json.loads((out / "manifest.json").read_text())["options"]["lift"] == "both"  # nothing written
    forced = cli(*args, "--force", "--lift", "none")
    assert forced.code == 0 and "written: 9 edges" in forced.out
    assert ("  note: 3 instance/mixed edges have no class to lift to (kg.lift = none): they are in "
            "causal_kg_pairs.jsonl and the RDF, not in causal_kg.jsonl") in forced.out.splitlines()
    assert json.loads((out / "manifest.json").read_text())["counts"]["nested_unlisted_edges"] == 3


def test_outputs_read_by_the_evaluation_reader(cli, in_tmp):
    from causalkg.evaluation.wikicausal.kgread import iter_kg_pairs

    r = cli("kg", "assemble", "--linked", FIX / "linked.jsonl", "--concepts", FIX / "concepts.jsonl")
    assert r.code == 0, r.err
    out = in_tmp / "data" / "kg"
    edges = list(read_jsonl(out / "causal_kg_pairs.jsonl", KGEdge))
    nested = list(iter_kg_pairs(out / "causal_kg.jsonl"))
    assert {(p.cause, p.effect) for p in nested if p.kind == "class"} == {
        (e.cause.id[0], e.effect.id[0]) for e in edges if e.level == "class"}
    assert {(p.cause, p.effect) for p in nested if p.kind == "instance"} == {
        (e.cause.id[0], e.effect.id[0]) for e in edges if e.level != "class"}
    flat = list(iter_kg_pairs(out / "causal_kg_pairs.jsonl"))
    assert [(p.cause, p.effect) for p in flat] == [(e.cause.id[0], e.effect.id[0]) for e in edges]


def test_assemble_cli_errors(cli, in_tmp):
    r = cli("kg", "assemble", "--concepts", FIX / "concepts.jsonl")
    assert r.code == 1
    assert r.err.strip() == f"error: extractions file not found: {in_tmp}/data/kg/extractions.jsonl (run causalkg kg extract first)"
    r = cli("kg", "assemble", "--linked", FIX / "linked.jsonl")
    assert r.err.strip() == (f"error: concepts file not found: {in_tmp}/data/wikidata/concepts.jsonl "
                             "(run causalkg corpus build, or pass --concepts FILE)")
    r = cli("kg", "assemble", "--linked", FIX / "linked.jsonl", "--extractions", "x.jsonl")
    assert r.code == 2 and "give --extractions or --linked, not both" in r.err
    bad = in_tmp / "bad.jsonl"
    bad.write_text((FIX / "linked.jsonl").read_text().splitlines()[0] + "\n{not json\n", encoding="utf-8")
    r = cli("kg", "assemble", "--linked", bad, "--concepts", FIX / "concepts.jsonl")
    assert r.code == 1 and r.err.startswith(f"error: {bad}:2: not valid JSON")
    r = cli("kg", "assemble", "--linked", bad, "--concepts", FIX / "concepts.jsonl", "--lenient")
    assert r.code == 0 and "1 bad input lines skipped (--lenient)" in r.out
    r = cli("kg", "assemble", "--linked", FIX / "linked.jsonl", "--concepts", FIX / "concepts.jsonl", "--min-support", "0")
    assert r.code == 2 and "kg.min_support = 0 is out of range: must be an integer >= 1" in r.err


def test_assemble_with_the_real_linker_one_call_per_shard(linker, tmp_path):
    calls = []

    class Counting(type(linker)):
        def link(self, phrases, *a, **kw):
            # the page-event lookup of a shard ("the attacks" on the page "September 11 attacks") asks k=3
            if kw.get("k") != 3:
                calls.append(len(phrases))
            return super().link(phrases, *a, **kw)

    counting = Counting.__new__(Counting)
    counting.__dict__.update(linker.__dict__)
    cfg = _cfg(tmp_path, **{"kg.shard_size": 5, "kg.structured": []})
    r = A.assemble(cfg, extractions=FIX / "extractions.jsonl", corpus=FIX / "corpus.jsonl",
                   concepts=FIX / "concepts.jsonl", linker=counting)
    assert calls == [10, 10, 8]  # 14 extractions in shards of 5: cause + effect phrases per call
    c = r.counts
    assert c["link_extractions"] == 14
    assert c["link_linked"] + c["link_cause_unlinked"] + c["link_effect_unlinked"] + c["link_both_unlinked"] \
        + c["link_self_loops_dropped"] == 14
    assert c["link_linked"] >= 6
    edges = _by_id(read_jsonl(r.out / "causal_kg_pairs.jsonl", KGEdge))
    assert "Q7944_Q8070" in edges  # "earthquake ... tsunamis" links both ends
    m = edges["Q7944_Q8070"].mentions[0]
    assert m.url == "https://en.wikipedia.org/wiki/2004_Indian_Ocean_earthquake" and m.revision_id == 1001
    assert m.document_concept == "Q130754" and m.cause_candidates and m.cause.link_score >= linker.threshold
    # a pronoun links to nothing: that pair is dropped, never guessed
    assert not any(m.cause.text == "It" for e in edges.values() for m in e.mentions)
    # shards are kept; a rerun with the same inputs is skipped without linking
    assert sorted(p.name for p in (r.out / "linked").glob("shard-*.done.json")) == [
        "shard-00000.done.json", "shard-00001.done.json", "shard-00002.done.json"]
    again = A.assemble(cfg, extractions=FIX / "extractions.jsonl", corpus=FIX / "corpus.jsonl",
                       concepts=FIX / "concepts.jsonl", linker=counting)
    assert again.skipped and calls == [10, 10, 8]


def test_missing_linker_index_says_how_to_build_it(cli, in_tmp):
    (in_tmp / "data" / "kg").mkdir(parents=True)
    (in_tmp / "data" / "kg" / "extractions.jsonl").write_text((FIX / "extractions.jsonl").read_text(), encoding="utf-8")
    r = cli("kg", "assemble", "--concepts", FIX / "concepts.jsonl")
    assert r.code == 1
    assert r.err.strip() == f"error: no concept index in {in_tmp}/data/linking (run causalkg link build)"


KILLER = r"""
import os, signal, sys
from causalkg.core.config import load_config
from causalkg.kg.assemble import assemble
data, fix, when = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = load_config(search_cwd=False, overrides={"paths.data": data, "kg.shard_size": 3})
def hook(event, info):
    if (event == "shard" and when == "shard" and info["index"] == 1) or \
       (event == "output" and when == "output" and info["name"] == "nested"):
        os.kill(os.getpid(), signal.SIGKILL)
assemble(cfg, extractions=os.path.join(fix, "extractions.jsonl"), corpus=os.path.join(fix, "corpus.jsonl"),
         concepts=os.path.join(fix, "concepts.jsonl"), hook=hook)
print("finished")
"""


class Crash(Exception):
    pass


@pytest.mark.slow
def test_kill_during_assembly_then_rerun_gives_the_same_outputs(linker, tmp_path):
    from causalkg.linking.index import build_index
    from causalkg.linking.linker import Linker

    data = tmp_path / "data"
    cfg = _cfg(tmp_path, **{"kg.shard_size": 3})
    build_index(cfg, concepts_path=FIX / "concepts.jsonl")
    env = {**os.environ, "PYTHONPATH": str(REPO), "CAUSALKG_PROGRESS": "never"}
    inputs = dict(extractions=FIX / "extractions.jsonl", corpus=FIX / "corpus.jsonl", concepts=FIX / "concepts.jsonl")

    def run(when):
        return subprocess.run([sys.executable, "-c", KILLER, str(data), str(FIX), when], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    # 1. SIGKILL after the second of five linked shards
    first = run("shard")
    assert first.returncode == -9, first.stderr
    linked_dir = data / "kg" / "linked"
    assert sorted(p.name for p in linked_dir.glob("shard-*.done.json")) == ["shard-00000.done.json", "shard-00001.done.json"]
    assert not (data / "kg" / "manifest.json").exists()

    # 2. a crash after the first output file: the missing shards are linked (only those)
    calls = []

    def crash(event, info):
        calls.append((event, info.get("index", info.get("name"))))
        if event == "output" and info.get("name") == "pairs":
            raise Crash()

    with pytest.raises(Crash):
        A.assemble(cfg, **inputs, linker=Linker.load(cfg), hook=crash)
    assert [c for c in calls if c[0] == "shard"] == [("shard", 2), ("shard", 3), ("shard", 4)]
    assert not (data / "kg" / "manifest.json").exists()

    # 3. SIGKILL while writing the outputs (no linker is loaded: every shard is done)
    second = run("output")
    assert second.returncode == -9, second.stderr
    assert not (data / "kg" / "manifest.json").exists()

    # 4. the rerun finishes, from the checkpoints
    result = A.assemble(cfg, **inputs)
    assert not result.skipped and result.counts["link_extractions"] == 14
    assert not list((data / "kg").rglob(".*.tmp"))

    # an uninterrupted run elsewhere gives byte-identical files
    ref = A.assemble(_cfg(tmp_path / "ref", **{"kg.shard_size": 3}), **inputs, linker=linker)

    def files(out):  # the current generation's files (data/kg/current -> generations/<id>)
        return sorted(str(p.relative_to(out)) for p in out.rglob("*")
                      if p.is_file() and p.name not in ("manifest.json", ".readers.lock"))

    ref_gen, gen = (ref.out / "current").resolve(), (result.out / "current").resolve()
    assert files(ref_gen) == files(gen)
    for name in files(ref_gen):
        assert (ref_gen / name).read_bytes() == (gen / name).read_bytes(), name
        assert (result.out / name).read_bytes() == (gen / name).read_bytes()  # the documented paths
    assert ref.counts == result.counts


# --- issue 13: assertion flags, structured sources, confidence -------------------------------


def _issue13_inputs(tmp_path):
    """The fixture corpus with the Chernobyl page's real infobox cause and categories, and the
    fixture extractions plus two pairs a sentence does not assert (real sentences)."""
    import json

    docs = [json.loads(x) for x in (FIX / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    for d in docs:
        if d["title"] == "Chernobyl disaster":
            d["infobox"] = {"name": "Infobox news event", "fields": {
                "date": "26 April 1986",
                "cause": "Inadvertent explosion of core during emergency shutdown of reactor whilst undergoing power "
                         "failure experiment"}}
            d["categories"] = ["1986 industrial disasters", "Civilian nuclear power accidents", "Disasters in the Soviet Union"]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    xs = (FIX / "extractions.jsonl").read_text(encoding="utf-8").splitlines()
    s1 = "Several others may have been injured as well but no one was killed in the attack."
    s2 = "This excess ammonium perchlorate later caught fire and the magnitude of the resulting explosion destroyed the facility."
    extra = []
    for doc, s, c, e in (("3", s1, "the attack", "no one was killed"), ("2", s2, "the resulting explosion", "caught fire")):
        extra.append(json.dumps({"schema_version": "1", "doc_id": doc,
                                 "sentence": {"text": s, "start": 5000, "end": 5000 + len(s), "section": None},
                                 "cause": {"text": c, "start": 5000 + s.index(c), "end": 5000 + s.index(c) + len(c)},
                                 "effect": {"text": e, "start": 5000 + s.index(e), "end": 5000 + s.index(e) + len(e)},
                                 "score": 0.9, "extractor": "qa"}))
    ext = tmp_path / "extractions.jsonl"
    ext.write_text("\n".join(xs + extra) + "\n", encoding="utf-8")
    concepts = tmp_path / "concepts.jsonl"
    concepts.write_text((FIX / "concepts.jsonl").read_text(encoding="utf-8").rstrip("\n") + "\n" + json.dumps(
        {"schema_version": "1", "id": "Q3839081", "kind": "class", "label": "disaster", "aliases": ["disasters"]}) + "\n",
        encoding="utf-8")
    return ext, corpus, concepts


def test_structured_pages_linked_in_groups_give_the_same_mentions(tmp_path):
    """link_structured reads the records a group of pages at a time (bounded memory at full
    size): the mentions and counts are the same for groups of 1, 2, 3 pages as for one group.
    A mention's document concept comes from its page's record, not from the documents given."""
    import json

    from causalkg.core.errors import ConfigError
    from causalkg.kg.mentions import link_structured
    from causalkg.linking.linker import Linker

    _, corpus, concepts = _issue13_inputs(tmp_path)
    records = [json.loads(x) for x in corpus.read_text(encoding="utf-8").splitlines()]
    chernobyl = next(r for r in records if r.get("infobox"))
    resolved = {"id": "Q486", "label": "Chernobyl disaster", "labels": [], "resolved": True}
    records += [{**chernobyl, "id": f"{chernobyl['id']}-{i}", "document_concept": resolved}
                for i in range(4)]  # 5 pages with a pair, 4 of them resolved to a concept
    cfg = _cfg(tmp_path)
    lk = Linker.from_concepts(load_concepts(concepts).values(), cfg)

    def run(pages):
        found, counts = link_structured(records, lk, {}, sources=["wikipedia_infobox", "wikipedia_list"], k=5,
                                        pages=pages)
        return [m.model_dump_json() for m in found], counts

    whole = run(len(records))
    assert len(whole[0]) == 5 and whole[1].extractions == 5 and whole[1].linked == 5
    assert [json.loads(m)["document_concept"] for m in whole[0]] == [None] + ["Q486"] * 4  # no documents given
    for pages in (1, 2, 3):
        assert run(pages) == whole, pages
    with pytest.raises(ConfigError, match="pages must be at least 1, got 0"):
        run(0)


def test_assembly_drops_unasserted_pairs_reads_infoboxes_and_scores_confidence(tmp_path):
    from causalkg.linking.linker import Linker

    ext, corpus, concepts = _issue13_inputs(tmp_path)
    cfg = _cfg(tmp_path, **{"kg.min_confidence": 0.0})
    lk = Linker.from_concepts(load_concepts(concepts).values(), cfg)
    r = A.assemble(cfg, extractions=ext, corpus=corpus, concepts=concepts, linker=lk)
    c = r.counts
    assert c["link_extractions"] == 16 and c["link_unasserted_dropped"] == 2
    assert c["link_negated"] >= 1 and c["link_reversed"] >= 1
    assert c["link_structured_pairs"] == 1 and c["link_structured_linked"] == 1
    edges = _by_id(read_jsonl(r.out / "causal_kg_pairs.jsonl", KGEdge))
    # the infobox: explosion (cause field) -> the page's event, its class from the categories
    m = edges["Q179057_Q3839081"].mentions[0]
    assert m.source == m.extractor == "wikipedia_infobox" and m.model == "cause"
    assert m.sentence.text.startswith("Chernobyl disaster | cause = Inadvertent explosion")
    assert m.sentence.text[m.cause.start - m.sentence.start: m.cause.end - m.sentence.start] == m.cause.text
    assert m.assertion is None
    # prose mentions carry what was read about them; nothing negated or reversed got through
    prose = [m for e in edges.values() for m in e.mentions if m.source == "sentence"]
    assert prose and all(m.assertion is not None and not (m.assertion.negated or m.assertion.reversed) for m in prose)
    assert all(e.schema_version == "1.1" and 0.0 < e.confidence < 1.0 for e in edges.values())
    # kg.drop = [] keeps the pairs, flagged; kg.min_confidence filters edges
    cfg2 = _cfg(tmp_path, **{"kg.drop": [], "kg.structured": [], "paths.data": str(tmp_path / "d2")})
    r2 = A.assemble(cfg2, extractions=ext, corpus=corpus, concepts=concepts, linker=lk)
    assert r2.counts["link_unasserted_dropped"] == 0 and r2.counts["link_structured_pairs"] == 0
    top = max(e.confidence for e in edges.values() if e.mentions)
    cfg3 = _cfg(tmp_path, **{"kg.min_confidence": top, "paths.data": str(tmp_path / "d3")})
    r3 = A.assemble(cfg3, extractions=ext, corpus=corpus, concepts=concepts, linker=lk)
    kept = list(read_jsonl(r3.out / "causal_kg_pairs.jsonl", KGEdge))
    assert kept and len(kept) < len(edges) and all(e.confidence >= top for e in kept if e.mentions)
    assert r3.counts["aggregate_below_min_confidence"] == len(edges) - len(kept)


def test_the_page_event_is_named_by_its_head_noun_but_not_by_a_cut_short_name(linker):
    # On the page "2004 Indian Ocean earthquake", "the earthquake" is the page's event; a head
    # written with a capital is part of another name cut short by the extractor ("War" of "The
    # ensuing Philippine-American War" once linked to the Spanish–American War of its page).
    from causalkg.kg.inputs import DocInfo
    from causalkg.kg.mentions import LinkCounts, page_event_links

    docs = {"d": DocInfo(title="2004 Indian Ocean earthquake")}
    phrases = ["the earthquake", "Earthquake", "the tsunami"]
    results = linker.link(phrases, k=3)
    counts = LinkCounts()
    out = page_event_links(phrases, results, ["d"] * 3, docs, linker, None, counts)
    assert out[0][0].qid == "Q130754" and out[0][0].page_event
    assert out[1] == results[1] and out[1][0].qid == "Q7944"
    assert out[2] == results[2]
    assert counts.page_event_links == 1


# --- linking in parallel (issue 14): a process pool, the same bytes ---------------------------


def _kg_files(out: Path) -> dict[str, bytes]:
    """The linked checkpoints and the current generation's KG files, by name."""
    gen = (out / "current").resolve()
    files = {f"linked/{p.name}": p.read_bytes() for p in sorted((out / "linked").iterdir())}
    files.update({str(p.relative_to(gen)): p.read_bytes() for p in sorted(gen.rglob("*"))
                  if p.is_file() and p.name not in ("manifest.json", ".readers.lock")})
    return files


@pytest.mark.slow
def test_a_pool_of_two_linking_workers_gives_the_same_bytes_and_resumes(tmp_path, monkeypatch):
    from causalkg.linking.index import build_index

    # the fixture extractions; the corpus and concepts with the Chernobyl page's infobox cause,
    # the page resolved to its concept
    _, corpus, concepts = _issue13_inputs(tmp_path)
    corpus.write_text(corpus.read_text(encoding="utf-8").replace(
        '"id": null, "label": "Chernobyl disaster"', '"id": "Q486", "label": "Chernobyl disaster"'), encoding="utf-8")
    assert '"Q486"' in corpus.read_text(encoding="utf-8")
    # the corpus's pages in groups of one: three jobs after the shards
    monkeypatch.setattr(A, "STRUCTURED_PAGES", 1)
    inputs = dict(extractions=FIX / "extractions.jsonl", corpus=corpus, concepts=concepts)
    used = []
    pool = A._pool_link_all

    def counted(lazy, jobs, workers, state):
        used.append(workers)
        return pool(lazy, jobs, workers, state)

    monkeypatch.setattr(A, "_pool_link_all", counted)

    def cfg(w):  # one index (its manifest records the config it was built with), two outputs
        return _cfg(tmp_path, **{"kg.shard_size": 3, "run.workers": w, "kg.structured": ["wikipedia_infobox"]})

    build_index(cfg(1), concepts_path=concepts)
    results = {w: A.assemble(cfg(w), **inputs, out=tmp_path / f"w{w}") for w in (1, 2)}
    # 14 extractions in shards of 3: 5 shards, over POOL_MIN_SHARDS
    assert used == [2]  # one worker links in process, two in a pool
    one, two = _kg_files(results[1].out), _kg_files(results[2].out)
    assert sorted(one) == sorted(two) and "linked/shard-00004.jsonl" in one
    for name in one:
        assert one[name] == two[name], name
    assert results[1].counts == results[2].counts and results[2].counts["link_extractions"] == 14
    man = {w: json.loads((results[w].out / "manifest.json").read_text())["linking"] for w in (1, 2)}
    # the groups of pages too, shared out over the pool like the shards
    assert man[1] == {"engine": "local", "where": "process", "workers": 1, "shards": 5, "shards_resumed": 0,
                      "structured_groups": 3, "structured_resumed": 0, "structured": "process"}
    assert man[2] == {"engine": "local", "where": "pool", "workers": 2, "shards": 5, "shards_resumed": 0,
                      "structured_groups": 3, "structured_resumed": 0, "structured": "pool"}
    assert results[2].counts["link_structured_pairs"] == results[2].counts["link_structured_linked"] == 1
    infobox = json.loads(one["linked/structured-00001.jsonl"])  # the second page, Chernobyl's
    assert infobox["extractor"] == "wikipedia_infobox" and infobox["document_concept"] == "Q486"
    assert one["linked/structured-00000.jsonl"] == one["linked/structured-00002.jsonl"] == b""

    # a partial run (killed while linking: shards 1 to 4 not done, no KG of these inputs
    # published); the pool relinks only those, to the same bytes
    linked = results[2].out / "linked"
    for i in range(1, 5):
        (linked / f"shard-{i:05d}.jsonl").unlink()
        (linked / f"shard-{i:05d}.done.json").unlink()
    (results[2].out / "current" / "manifest.json").unlink()
    shards = []
    again = A.assemble(cfg(2), **inputs, out=tmp_path / "w2",
                       hook=lambda e, i: shards.append(i["index"]) if e == "shard" else 0)
    assert shards == [1, 2, 3, 4] and used == [2, 2]
    linking = json.loads((again.out / "manifest.json").read_text())["linking"]
    assert linking["shards_resumed"] == 1 and linking["structured_resumed"] == 3 and "structured" not in linking
    assert _kg_files(again.out) == one
    # killed after every shard was linked, before the pages' groups: only they are linked (three
    # jobs, in this process), with the same provenance as when the shards were linked alongside
    for p in linked.glob("structured-*"):
        p.unlink()
    (again.out / "current" / "manifest.json").unlink()
    events = []
    resumed = A.assemble(cfg(2), **inputs, out=tmp_path / "w2", hook=lambda e, i: events.append((e, i.get("index"))))
    assert [e for e in events if e[0] != "output"] == [("structured", 0), ("structured", 1), ("structured", 2)]
    linking = json.loads((resumed.out / "manifest.json").read_text())["linking"]
    assert (linking["shards_resumed"], linking["structured_resumed"], linking["structured"]) == (5, 0, "process")
    assert _kg_files(resumed.out) == one
    # force: every shard linked again, none taken over, the same bytes
    shards.clear()
    forced = A.assemble(cfg(2), **inputs, out=tmp_path / "w2", force=True,
                        hook=lambda e, i: shards.append(i["index"]) if e == "shard" else 0)
    assert sorted(shards) == [0, 1, 2, 3, 4] and used == [2, 2, 2]
    assert json.loads((forced.out / "manifest.json").read_text())["linking"]["shards_resumed"] == 0
    assert _kg_files(forced.out) == one


@pytest.mark.slow
def test_a_pool_worker_that_cannot_load_the_linker_reports_why(tmp_path, monkeypatch):
    from causalkg.core.errors import SourceError

    cfg = _cfg(tmp_path, **{"kg.shard_size": 3, "run.workers": 2})  # 5 shards: the pool; no index built
    used, pool = [], A._pool_link_all
    monkeypatch.setattr(A, "_pool_link_all", lambda *a: used.append(1) or pool(*a))

    with pytest.raises(SourceError, match=r"no concept index in .*linking \(run causalkg link build\)"):
        A.assemble(cfg, extractions=FIX / "extractions.jsonl", corpus=FIX / "corpus.jsonl",
                   concepts=FIX / "concepts.jsonl")
    assert used == [1]  # raised in a worker, reported as the in-process error
