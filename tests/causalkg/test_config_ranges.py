"""Every numeric config key has a declared range, checked at load: a bad value is one line
naming the key, the value and the range, with exit 2, before anything runs."""

from __future__ import annotations

import math

import pytest

from causalkg.core.config import load_config, load_defaults
from causalkg.core.errors import ConfigError
from causalkg.core.ranges import RANGES, check_ranges, range_of


def _numeric_keys(node, prefix=""):
    for key, value in node.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _numeric_keys(value, f"{dotted}.")
        elif isinstance(value, bool):
            continue
        elif isinstance(value, (int, float)) or (isinstance(value, list) and value
                                                  and all(isinstance(v, (int, float)) for v in value)):
            yield dotted, value


NUMERIC = sorted(_numeric_keys(load_defaults()))


def _bad_values(dotted):
    rng = range_of(dotted)
    bad = [math.nan, math.inf]
    if rng.low is not None:
        bad.append(rng.low - 1 if not rng.low_exclusive else rng.low)
    if rng.high is not None:
        bad.append(rng.high + 1)
    return bad


def test_every_numeric_key_has_a_range_and_its_default_is_in_it():
    assert len(NUMERIC) > 100
    missing = [k for k, _ in NUMERIC if range_of(k) is None]
    assert missing == []
    check_ranges(load_defaults(), "defaults")  # raises on a default out of its own range
    # No entry names a key that does not exist (a stale range after a rename).
    names = {k for k, _ in NUMERIC} | {k.rsplit(".", 1)[0] + ".*" for k, _ in NUMERIC}
    assert sorted(set(RANGES) - names) == []


@pytest.mark.parametrize("dotted", [k for k, _ in NUMERIC])
def test_every_numeric_key_refuses_a_bad_value(dotted):
    default = dict(NUMERIC)[dotted]
    rng = range_of(dotted)
    for bad in _bad_values(dotted):
        value = [bad] if isinstance(default, list) else bad
        if isinstance(default, int) and not isinstance(default, bool) and math.isfinite(bad):
            value = int(bad)
        with pytest.raises(ConfigError) as exc:
            load_config(search_cwd=False, overrides={dotted: value})
        msg = str(exc.value)
        if rng.integer and not math.isfinite(bad):  # refused by the type check (nan is a float)
            assert msg.startswith(f"--set: {dotted} must be an integer, got number"), msg
        else:
            assert msg.startswith(f"--set: {dotted} = ") and f"must be {rng.describe()}" in msg, msg


def test_a_user_file_value_out_of_range_names_the_file(tmp_path):
    p = tmp_path / "my.toml"
    p.write_text("[kg]\nmin_confidence = 1.5\n")
    with pytest.raises(ConfigError) as exc:
        load_config(p)
    assert str(exc.value).startswith(f"{p}: kg.min_confidence = 1.5 is out of range: must be a finite number in [0, 1]")


@pytest.mark.parametrize("assignment, line", [
    ("kg.min_confidence=nan",
     "error: --set: kg.min_confidence = nan is out of range: must be a finite number in [0, 1]"),
    ("extract.qa.batch_size=-1", "error: --set: extract.qa.batch_size = -1 is out of range: must be an integer >= 1"),
    ("wikidata.max_retries=-1", "error: --set: wikidata.max_retries = -1 is out of range: must be an integer >= 0"),
    ("wikidata.backoff_base=-1",
     "error: --set: wikidata.backoff_base = -1.0 is out of range: must be a finite number >= 0"),
    ("web.port=70000", "error: --set: web.port = 70000 is out of range: must be an integer in [1, 65535]"),
])
def test_cli_refuses_bad_values_in_one_line(cli, in_tmp, assignment, line):
    r = cli("config", "show", "--set", assignment)
    assert r.code == 2
    assert r.err.strip() == f"{line} (see docs/configuration.md)"


def test_numeric_options_and_dry_run_are_checked_like_the_real_run(cli, in_tmp):
    (in_tmp / "docs.jsonl").write_text('{"id": "1", "text": "The storm caused floods."}\n')
    r = cli("kg", "extract", "--input", "docs.jsonl", "--limit", "-3", "--dry-run")
    assert r.code == 2 and r.err.strip() == "error: --limit -3 is out of range: must be an integer >= 0"
    r = cli("kg", "extract", "--input", "docs.jsonl", "--limit", "0", "--dry-run")
    assert r.code == 2 and r.err.strip() == "error: --limit 0 is out of range: must be an integer >= 1"
    r = cli("kg", "extract", "--input", "docs.jsonl", "--shard-size", "0", "--dry-run")
    assert r.code == 2 and r.err.strip() == "error: --shard-size 0 is out of range: must be an integer >= 1"
    for dry in (["--dry-run"], []):
        r = cli("kg", "extract", "--input", "docs.jsonl", "--extractor", "nosuch", *dry)
        assert r.code == 2, dry
        assert r.err.strip() == "error: unknown extractor 'nosuch' (choose one of: llm, patterns, qa, tagger)"
    r = cli("serve", "--port", "99999", "--dry-run")
    assert r.code == 2 and r.err.strip() == "error: --port 99999 is out of range: must be an integer in [0, 65535]"


def test_type_errors_use_the_right_article(cli, in_tmp):
    r = cli("config", "show", "--set", "kg.top=x")
    assert r.code == 2 and r.err.strip() == "error: --set: kg.top must be an integer, got string 'x'"
