"""The data layout: every stage's paths follow paths.data; empty path settings take the layout's place."""

from __future__ import annotations

from pathlib import Path

from causalkg.core.config import load_config
from causalkg.core.layout import Layout, default_paths, extract_input, extract_output, kg_dir


def test_every_place_is_under_paths_data(tmp_path):
    cfg = load_config(overrides={"paths.data": str(tmp_path / "elsewhere")}, search_cwd=False)
    lay = Layout.from_config(cfg)
    root = tmp_path / "elsewhere"
    assert lay.concepts == root / "wikidata" / "concepts.jsonl"
    assert lay.base_kg == root / "wikidata" / "base_kg.jsonl"
    assert lay.corpus == root / "corpus" / "corpus.jsonl"
    assert lay.linking_manifest == root / "linking" / "manifest.json"
    assert lay.extractions == root / "kg" / "extractions.jsonl"
    assert lay.kg_pairs == root / "kg" / "causal_kg_pairs.jsonl"
    assert lay.kg_nested == root / "kg" / "causal_kg.jsonl"
    assert lay.store_dir == root / "store"
    assert lay.eval_out("soft") == root / "eval" / "soft"
    assert kg_dir(cfg) == root / "kg"
    assert set(default_paths(cfg)) == {"extractions", "corpus", "concepts", "base_kg", "linking_manifest"}
    assert all(p.is_relative_to(root) for p in default_paths(cfg).values())


def test_extract_paths_follow_paths_data_unless_set(tmp_path):
    cfg = load_config(overrides={"paths.data": str(tmp_path / "d")}, search_cwd=False)
    assert extract_input(cfg) == tmp_path / "d" / "corpus" / "corpus.jsonl"
    assert extract_output(cfg) == tmp_path / "d" / "kg" / "extractions.jsonl"
    assert default_paths(cfg)["extractions"] == extract_output(cfg)  # assemble reads what extract writes
    mine = load_config(overrides={"paths.data": str(tmp_path / "d"), "extract.input": str(tmp_path / "in.jsonl"),
                                  "extract.output": "out/x.jsonl"}, search_cwd=False)
    assert extract_input(mine) == tmp_path / "in.jsonl"
    assert extract_output(mine) == Path.cwd() / "out" / "x.jsonl"
    assert default_paths(mine)["extractions"] == extract_output(mine)


def test_no_stage_spells_the_data_folders_itself():
    """The stage folders name their paths through causalkg.core.layout, not by joining strings onto paths.data."""
    repo = Path(__file__).resolve().parents[2]
    offenders = []
    for stage in ("corpus", "linking", "kg", "evaluation", "web"):
        for f in (repo / stage).rglob("*.py"):
            text = f.read_text(encoding="utf-8")
            for needle in ('cfg.path("paths.data") / "', "data / \"kg\"", "data / \"corpus\"", "data / \"wikidata\""):
                if needle in text:
                    offenders.append(f"{f.relative_to(repo)}: {needle}")
    assert offenders == []
