"""``--set`` before the command, after it, and several times: every one applies, in order."""

from __future__ import annotations

import json

import pytest


def shown(cli, *args: str) -> dict:
    r = cli(*args, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.parametrize("argv", [
    ["--set", "llm.timeout=7", "--set", "llm.model=m2", "config", "show"],
    ["config", "show", "--set", "llm.timeout=7", "--set", "llm.model=m2"],
    ["--set", "llm.timeout=7", "config", "show", "--set", "llm.model=m2"],
    ["--set", "llm.model=m2", "config", "show", "--set", "llm.timeout=7"],
    ["--set", "llm.timeout=1", "--set", "llm.model=m2", "config", "show", "--set", "llm.timeout=7"],
    ["--set", "llm.model=m1", "config", "show", "--set", "llm.model=m2", "--set", "llm.timeout=7"],
])
def test_every_set_applies_wherever_it_is(cli, in_tmp, argv):
    cfg = shown(cli, *argv)
    assert cfg["llm"]["timeout"] == 7 and cfg["llm"]["model"] == "m2"


def test_the_last_set_of_a_key_wins_across_positions(cli, in_tmp):
    assert shown(cli, "--set", "llm.model=before", "config", "show", "--set", "llm.model=after")["llm"]["model"] == "after"
    assert shown(cli, "--set", "llm.model=a", "--set", "llm.model=b", "config", "show")["llm"]["model"] == "b"
    assert shown(cli, "config", "show", "--set", "llm.model=a", "--set", "llm.model=b")["llm"]["model"] == "b"


def test_a_set_before_the_command_moves_where_a_stage_writes(cli, in_tmp):
    """``paths.data`` given before the command must not be dropped by a ``--set`` after it
    (it was, and the stage wrote into the default data folder)."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    snapshot = repo / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
    r = cli("--set", "paths.data=elsewhere", "corpus", "build", "--only", "wikidata", "--source", "snapshot",
            "--set", f"wikidata.snapshot={json.dumps(str(snapshot))}")
    assert r.code == 0, r.err
    assert (in_tmp / "elsewhere" / "wikidata" / "manifest.json").exists()
    assert not (in_tmp / "data").exists()


def test_a_bad_set_in_either_position_is_one_error_line(cli, in_tmp):
    for argv in (["--set", "nonsense", "config", "show"], ["config", "show", "--set", "nonsense"]):
        r = cli(*argv)
        assert r.code == 2 and r.err.startswith("error: ") and len(r.err.strip().splitlines()) == 1, r.err
