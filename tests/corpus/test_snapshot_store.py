"""The snapshot's store on disk (wikidata.snapshot_store): the same corpus files as the store
in memory, reused by the next run, and a clear error for an unknown mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.corpus.build import build_wikidata
from causalkg.corpus.snapshot import SnapshotEngine
from causalkg.core.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
FILES = ("event_classes.jsonl", "concepts.jsonl", "base_kg.jsonl")


def _build(tmp_path: Path, name: str, mode: str) -> dict:
    data = tmp_path / name
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(data), "paths.cache": str(data / "cache"),
                                                   "wikidata.snapshot_store": mode})
    res = build_wikidata(cfg, source="snapshot")
    return {"res": res, "files": {f: (data / "wikidata" / f).read_bytes() for f in FILES}, "cache": data / "cache"}


def test_the_store_on_disk_gives_the_files_the_store_in_memory_gives(tmp_path):
    mem = _build(tmp_path, "mem", "memory")
    disk = _build(tmp_path, "disk", "disk")
    assert disk["files"] == mem["files"]
    assert all(disk["files"][f] for f in FILES)
    assert list((disk["cache"] / "wikidata-snapshot").glob("*.store/.loaded"))
    assert not (mem["cache"] / "wikidata-snapshot").exists()


def test_the_store_on_disk_is_loaded_in_slices_and_reused(tmp_path, monkeypatch):
    import causalkg.corpus.snapshot as S

    monkeypatch.setattr(S, "LOAD_SLICE_LINES", 1000)  # the bundled snapshot in many bulk loads
    whole = SnapshotEngine(SNAPSHOT)
    first = SnapshotEngine(SNAPSHOT, cache_dir=tmp_path, store="disk")
    assert first.on_disk and not first.reused and first.triples == whole.triples > 1000
    del first  # closes the store (one process holds it at a time)
    again = SnapshotEngine(SNAPSHOT, cache_dir=tmp_path, store="disk")
    assert again.reused and again.triples == whole.triples
    del again
    # auto: on disk only above the size limit; without a cache folder always in memory
    assert not SnapshotEngine(SNAPSHOT, cache_dir=tmp_path, store="auto", disk_mb=2.0).on_disk
    assert SnapshotEngine(SNAPSHOT, cache_dir=tmp_path, store="auto", disk_mb=0.001).on_disk
    assert not SnapshotEngine(SNAPSHOT, store="disk").on_disk


def test_an_unknown_store_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="wikidata.snapshot_store must be one of auto, memory, disk"):
        SnapshotEngine(SNAPSHOT, store="ssd")
