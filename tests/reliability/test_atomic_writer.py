"""The atomic writer's guards: no empty file over a non-empty one without force, and the
temporary files of writers that are gone removed by the next write into the folder."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from causalkg.core.jsonl import EmptyOutputError, allowing_empty_outputs, atomic_write, sweep_stale_temps, write_jsonl


@pytest.mark.parametrize("name", ["out.jsonl", "out.jsonl.gz"])
def test_an_empty_result_does_not_replace_a_non_empty_file(tmp_path, name):
    path = tmp_path / name
    write_jsonl(path, [{"a": 1}])
    before = path.read_bytes()
    with pytest.raises(EmptyOutputError, match=r"refusing to replace .* with an empty file"):
        write_jsonl(path, [])
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left either
    with allowing_empty_outputs():
        write_jsonl(path, [])
    assert path.read_bytes() != before
    write_jsonl(tmp_path / "new.jsonl", [])  # an empty file where there was none is fine
    write_jsonl(path, [])  # and empty over empty


def test_temporary_files_of_dead_writers_are_swept_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # a process that has ended
    stale = tmp_path / f".out.jsonl.{dead_pid}.abc123.tmp"
    live = tmp_path / f".other.jsonl.{os.getpid()}.def456.tmp"
    unrelated = tmp_path / ".notes.tmp"
    for p in (stale, live, unrelated):
        p.write_text("half")
    with atomic_write(tmp_path / "x.jsonl") as fh:
        fh.write("{}\n")
    assert not stale.exists() and live.exists() and unrelated.exists()
    assert sweep_stale_temps(tmp_path, every_time=True) == []


def test_an_extraction_checkpoint_may_become_empty_the_output_may_not(cli, in_tmp):
    """Shards are checkpoints: a redone shard that extracts nothing replaces its old file. The
    output itself is guarded: a run that extracts nothing at all keeps the old one (--force
    writes it)."""
    import json

    def docs(first: str, second: str) -> None:
        (in_tmp / "in.jsonl").write_text(json.dumps({"id": "a", "text": first}) + "\n"
                                         + json.dumps({"id": "b", "text": second}) + "\n", encoding="utf-8")

    args = ("kg", "extract", "--extractor", "patterns", "--input", "in.jsonl", "--out", "out.jsonl",
            "--shard-size", "1", "--set", "extract.gate.kind=cues")  # no gate model is trained here
    docs("Heavy rain caused a flood in the valley.", "The earthquake caused a tsunami.")
    assert cli(*args).code == 0
    docs("The valley is green.", "The earthquake caused a tsunami.")  # shard 0 now extracts nothing
    r = cli(*args)
    assert r.code == 0, r.err
    assert [json.loads(x)["doc_id"] for x in (in_tmp / "out.jsonl").read_text().splitlines()] == ["b"]
    before = (in_tmp / "out.jsonl").read_bytes()
    docs("The valley is green.", "The sea is calm.")  # nothing at all
    r = cli(*args)
    assert r.code == 1 and "refusing to replace" in r.err and "--allow-shrink" in r.err
    assert (in_tmp / "out.jsonl").read_bytes() == before
    r = cli(*args, "--force")  # redo the work: not "accept an empty output"
    assert r.code == 1 and "refusing to replace" in r.err
    assert (in_tmp / "out.jsonl").read_bytes() == before
    assert cli(*args, "--allow-shrink").code == 0
    assert (in_tmp / "out.jsonl").read_bytes() == b""
