"""Resumable shards (causalkg.core.shards): what counts as done, and when a folder is started afresh."""

from __future__ import annotations

from causalkg.core.shards import STAMP_NAME, Shards


def _write(shards: Shards, key: str, text: str, **record) -> None:
    shards.path(key).write_text(text, encoding="utf-8")
    shards.finish(key, record)


def test_a_finished_shard_is_found_again_by_the_same_run(tmp_path):
    s = Shards(tmp_path / "w", "fp1")
    assert s.reset and s.done("00000") is None and s.keys() == []
    _write(s, "00000", "a\n", fingerprint="x", counts={"n": 1})
    again = Shards(tmp_path / "w", "fp1")
    assert not again.reset
    assert again.done("00000") == {"fingerprint": "x", "counts": {"n": 1}}
    assert again.done("00000", {"fingerprint": "x"}) is not None
    assert again.done("00000", {"fingerprint": "y"}) is None  # the shard's own inputs changed
    assert again.path("00000").read_text(encoding="utf-8") == "a\n"
    assert again.keys() == ["00000"]
    assert Shards.count_done(tmp_path / "w", "fp1") == 1 and Shards.count_done(tmp_path / "w", "fp2") == 0


def test_data_without_its_record_is_not_done(tmp_path):
    """A run killed between a shard's data and its record: the shard is redone."""
    s = Shards(tmp_path / "w", "fp")
    s.path("00001").write_text("half\n", encoding="utf-8")
    assert s.done("00001") is None and s.keys() == []
    (tmp_path / "w" / "00002.done.json").write_text("{not json", encoding="utf-8")
    assert s.done("00002") is None


def test_another_run_or_force_starts_afresh(tmp_path):
    s = Shards(tmp_path / "w", "fp1")
    _write(s, "00000", "a\n")
    other = Shards(tmp_path / "w", "fp2")
    assert other.reset and other.keys() == [] and not other.path("00000").exists()
    assert Shards.stamped(tmp_path / "w") == "fp2"
    _write(other, "00000", "b\n")
    forced = Shards(tmp_path / "w", "fp2", force=True)
    assert forced.reset and forced.keys() == []
    (tmp_path / "w" / STAMP_NAME).write_text("garbage", encoding="utf-8")
    assert Shards.stamped(tmp_path / "w") is None and Shards(tmp_path / "w", "fp2").reset


def test_keep_only_drops_the_shards_of_a_longer_input(tmp_path):
    s = Shards(tmp_path / "w", "fp")
    for k in ("00000", "00001", "00002"):
        _write(s, k, k)
    s.keep_only(["00000", "00001"])
    assert s.keys() == ["00000", "00001"]
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == [
        "00000.done.json", "00000.jsonl", "00001.done.json", "00001.jsonl", STAMP_NAME]
