from __future__ import annotations

import re

import pytest

from causalkg.core.config import load_config, parse_assignment
from causalkg.core.errors import ConfigError


def test_defaults_load_and_have_the_50_seed_classes():
    cfg = load_config(search_cwd=False)
    seeds = cfg.get("wikidata.seed_classes")
    assert len(seeds) == 50 and len(set(seeds)) == 50
    assert "Q7944" in seeds and "Q8070" in seeds
    assert cfg["wikidata"]["endpoint"] == "https://query.wikidata.org/sparql"


def test_user_file_overrides_and_resolves_paths_against_its_folder(tmp_path):
    p = tmp_path / "my.toml"
    p.write_text('[wikidata]\ntimeout = 30\n[paths]\ndata = "out"\n')
    cfg = load_config(p)
    assert cfg.get("wikidata.timeout") == 30.0  # an integer is accepted for a float key
    assert cfg.path("paths.data") == tmp_path / "out"


def test_unknown_key_names_it_and_suggests(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[wikidata]\nendpont = 'x'\n")
    with pytest.raises(ConfigError) as exc:
        load_config(p)
    assert "unknown config key wikidata.endpont" in str(exc.value)
    assert "did you mean wikidata.endpoint" in str(exc.value)


def test_wrong_type_is_refused(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[wikidata]\ntimeout = 'soon'\n")
    with pytest.raises(ConfigError, match="wikidata.timeout must be a number, got string"):
        load_config(p)


def test_set_overrides_parse_toml_values():
    assert parse_assignment("wikidata.timeout=5") == ("wikidata.timeout", 5)
    assert parse_assignment("wikidata.endpoint=http://x/sparql") == ("wikidata.endpoint", "http://x/sparql")
    assert parse_assignment('wikidata.languages=["en","de"]') == ("wikidata.languages", ["en", "de"])
    cfg = load_config(search_cwd=False, overrides={"wikidata.max_retries": 2})
    assert cfg.get("wikidata.max_retries") == 2
    with pytest.raises(ConfigError):
        parse_assignment("nodot=1")


def test_with_overrides_ignores_unset_flags():
    cfg = load_config(search_cwd=False)
    same = cfg.with_overrides({"wikidata.endpoint": None})
    assert same is cfg
    changed = cfg.with_overrides({"wikidata.endpoint": "http://127.0.0.1:1/sparql"})
    assert changed.get("wikidata.endpoint") == "http://127.0.0.1:1/sparql"
    assert cfg.get("wikidata.endpoint") != changed.get("wikidata.endpoint")


def test_broken_toml_is_a_config_error(tmp_path):
    p = tmp_path / "broken.toml"
    p.write_text("[wikidata\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(p)


def test_input_path_finds_bundled_files_from_any_directory(tmp_path, monkeypatch):
    from causalkg.core.config import CHECKOUT_ROOT

    monkeypatch.chdir(tmp_path)
    cfg = load_config(search_cwd=False)
    assert cfg.input_path("wikidata.snapshot") == CHECKOUT_ROOT / "snapshots/wikidata/wikidata-snapshot.nt.gz"
    assert cfg.input_path("wikidata.snapshot").is_file()
    # A file present under the working directory wins; outputs never fall back.
    (tmp_path / "snapshots" / "wikidata").mkdir(parents=True)
    (tmp_path / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz").write_bytes(b"")
    assert cfg.input_path("wikidata.snapshot") == tmp_path / "snapshots/wikidata/wikidata-snapshot.nt.gz"
    assert cfg.path("paths.data") == tmp_path / "data"
    assert cfg.with_overrides({"wikipedia.index": "none"}).input_path("wikipedia.index") is None


def test_causalkg_set_applies_between_the_file_and_set(monkeypatch, tmp_path):
    from causalkg.core.config import ENV_SET, load_config

    user = tmp_path / "causalkg.toml"
    user.write_text("[kg]\nmin_confidence = 0.1\ntop = 3\n", encoding="utf-8")
    monkeypatch.setenv(ENV_SET, "kg.min_confidence=0.2; kg.verifier.enabled=true\nkg.top = 7")
    cfg = load_config(user)
    assert cfg.get("kg.min_confidence") == 0.2 and cfg.get("kg.verifier.enabled") is True and cfg.get("kg.top") == 7
    assert ENV_SET in cfg.sources
    assert load_config(user, {"kg.min_confidence": 0.3}).get("kg.min_confidence") == 0.3  # --set wins


@pytest.mark.parametrize("value,message", [("kg.no_such_key=1", "CAUSALKG_SET: unknown config key kg.no_such_key"),
                                           ("kgtop", "CAUSALKG_SET 'kgtop': expected section.key=value"),
                                           ("kg.top=-1", "kg.top")])
def test_causalkg_set_errors_name_the_variable(monkeypatch, value, message):
    from causalkg.core.config import ENV_SET, load_config
    from causalkg.core.errors import ConfigError

    monkeypatch.setenv(ENV_SET, value)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(search_cwd=False)
