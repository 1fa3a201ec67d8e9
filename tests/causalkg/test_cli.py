from __future__ import annotations

import json
import re


def test_help_lists_every_stage(cli):
    r = cli("--help")
    assert r.code == 0
    # The command names as listed (one per line under "commands:"), not substrings of the text:
    # "kg" is in "causalkg" and "link" in "linking".
    listed = r.out.split("commands:", 1)[1]
    names = re.findall(r"^ {4}(\S+) {2,}\S", listed, flags=re.M)
    assert {"config", "corpus", "link", "kg", "eval"} <= set(names)
    assert len(names) == len(set(names))


def test_config_show_resolves_set_overrides(cli, in_tmp):
    r = cli("config", "show", "--set", "wikidata.timeout=12", "--format", "json")
    assert r.code == 0
    assert json.loads(r.out)["wikidata"]["timeout"] == 12.0


def test_config_errors_are_one_line_with_exit_2(cli, in_tmp):
    r = cli("config", "show", "--set", "wikidata.timout=12")
    assert r.code == 2
    assert r.err.strip() == "error: --set: unknown config key wikidata.timout (did you mean wikidata.timeout?)"
    (in_tmp / "causalkg.toml").write_text("[wikidata]\ntimeout = 'x'\n")
    r = cli("config", "show")
    assert r.code == 2 and r.err.startswith("error: causalkg.toml: wikidata.timeout must be a number")


def test_config_show_toml_reparses(cli, in_tmp):
    import tomllib

    r = cli("config", "show")  # text: TOML
    parsed = tomllib.loads(r.out)
    assert parsed["wikidata"]["seed_classes"][0] == "Q180684"
    assert parsed["eval"]["sqc"]["matcher"] == "embedding:all-MiniLM-L6-v2"  # nested sections stay sections
    old = cli("config", "show", "--format", "toml")  # the old name of the text format still works
    assert old.out == r.out and "--format toml is deprecated; use --format text" in old.err
