"""Aggregation from disk (kg/mentionstore.py, kg.aggregate.aggregate_on_disk): the edges are
headers over an SQLite file of mentions, and the KG files written from them are the bytes the
in-memory edges give; kg assemble keeps no mention in memory and leaves no scratch file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import KGMention
from causalkg.core.jsonl import read_jsonl
from causalkg.kg import assemble as A
from causalkg.kg.aggregate import AggregateCounts, aggregate, aggregate_on_disk, apply_confidence
from causalkg.kg.assemble import _options
from causalkg.kg.inputs import load_concepts
from causalkg.kg.kgfiles import iter_nested_texts, nested_lines, write_outputs
from causalkg.kg.mentionstore import MentionStore

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"


@pytest.fixture(scope="module")
def concepts():
    return load_concepts(FIX / "concepts.jsonl")


@pytest.fixture(scope="module")
def gold():
    return list(read_jsonl(FIX / "linked.jsonl", KGMention))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_on_disk_edges_write_the_same_files_as_edges_with_their_mentions(gold, concepts, tmp_path):
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data")})
    opts = _options(cfg)
    stream = gold + gold[:3]  # repeated mentions are counted and kept once
    counts_mem = AggregateCounts()
    full = aggregate(stream, concepts, counts=counts_mem)
    # a threshold that drops some edges, so the headers' drop rule is exercised too
    scored = apply_confidence([e.model_copy(deep=True) for e in full], 0.0)
    scores = sorted({e.confidence for e in scored})
    threshold = scores[len(scores) // 2]
    full = apply_confidence(full, threshold, counts_mem)
    write_outputs(full, concepts, tmp_path / "mem", opts, verify=True)

    counts_disk = AggregateCounts()
    with MentionStore(tmp_path / "m.sqlite") as store:
        kg = aggregate_on_disk(iter(stream), concepts, store, counts=counts_disk)
        assert all(e.mentions == [] for e in kg.edges)  # headers: the mentions stay in the file
        kg.edges = apply_confidence(kg.edges, threshold, counts_disk, features_of=kg.features)
        assert [e.edge_id for e in kg.edges] == [e.edge_id for e in full]
        assert [kg.full(e) for e in kg.edges] == full
        lines = nested_lines(full, concepts)
        assert nested_lines(kg.edges, concepts, kg) == lines and len(lines) >= 2
        # the file's text, written one consequence at a time, is each whole line's JSON
        texts = ["".join(pieces) for pieces in iter_nested_texts(kg.edges, concepts, kg)]
        assert texts == [json.dumps(x, ensure_ascii=False, separators=(",", ":")) for x in lines]
        assert any(len(x["consequences"]) >= 2 for x in lines)
        write_outputs(kg.edges, concepts, tmp_path / "disk", opts, verify=True, source=kg)
        assert kg.documents() == len({m.doc_id for e in full for m in e.mentions})
    assert counts_disk == counts_mem
    assert counts_disk.duplicate_mentions == 3 and counts_disk.below_min_confidence > 0
    assert _files(tmp_path / "disk") == _files(tmp_path / "mem")


def test_the_store_orders_an_edges_mentions_as_the_kg_does(gold, concepts):
    """Own mentions come back by (document, sentence, cause span, effect span, id) whatever the
    order they were stored in."""
    with MentionStore() as fwd, MentionStore() as rev:
        for m in gold:
            fwd.add(m)
        for m in reversed(gold):
            rev.add(m)
        keys = [k for k, _ in fwd.edge_keys()]
        assert sorted(keys) == sorted(k for k, _ in rev.edge_keys())
        for key in keys:
            got = fwd.mentions(key)
            assert got == rev.mentions(key)
            assert got == sorted(got, key=lambda m: (m.doc_id, m.sentence.start, m.cause.start, m.cause.end,
                                                     m.effect.start, m.effect.end, m.mention_id))


def test_assemble_leaves_no_scratch_and_counts_mentions_read_from_a_file(tmp_path):
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data")})
    out = tmp_path / "data" / "kg"
    stale = out / ".aggregate-killed"
    stale.mkdir(parents=True)
    (stale / "mentions.sqlite").write_bytes(b"left by a killed run")
    res = A.assemble(cfg, linked=FIX / "linked.jsonl", concepts=FIX / "concepts.jsonl")
    assert not res.skipped and res.counts["edges"] == 13
    assert list(out.glob(".aggregate-*")) == []
    manifest = json.loads((out / "manifest.json").read_text())
    lines = sum(1 for _ in (FIX / "linked.jsonl").open())
    # the mentions are read as aggregation consumes them: the counts are taken afterwards
    assert manifest["counts"]["link_linked"] == manifest["counts"]["input_records"] == lines
    assert manifest["counts"]["mentions"] == 10 and res.top and res.top[0].mentions
