"""A mistyped command or option gets a "did you mean", like a mistyped config key."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("args, tail", [
    (["kgg"], "invalid choice: 'kgg' (choose from 'config', 'registry', 'corpus', 'link', 'kg', 'eval', 'serve'); "
              "did you mean 'kg'?"),
    (["kg", "asemble"], "did you mean 'assemble'?"),
    (["kg", "extract", "--limt", "3"], "unrecognized arguments: --limt 3; did you mean --limit?"),
    (["kg", "extract", "--dry-rn"], "unrecognized arguments: --dry-rn; did you mean --dry-run?"),
    (["config", "show", "--qiet"], "unrecognized arguments: --qiet; did you mean --quiet?"),
])
def test_mistyped_commands_and_options_get_a_suggestion(cli, in_tmp, args, tail):
    r = cli(*args)
    assert r.code == 2
    last = r.err.strip().splitlines()[-1]
    assert last.endswith(tail), last


def test_read_only_commands_list_only_options_that_mean_something(cli, in_tmp):
    r = cli("kg", "query", "--help")
    assert r.code == 0
    assert "--engine" not in r.out and "--force" not in r.out
    assert "--format {text,md,csv,json}  answer format: text (aligned), md, csv or json (default text)" in r.out
    for command in ("query", "stats", "summary"):
        r = cli("kg", command, "--force")
        assert r.code == 2
        assert r.err.strip().splitlines()[-1].endswith(f"--force means nothing to causalkg kg {command}")
