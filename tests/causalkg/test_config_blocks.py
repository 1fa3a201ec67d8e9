"""The [extract] section in blocks, one per component: the flat keys of earlier versions are
refused with the new name, in a user file and with --set, from the one table of renames."""

from __future__ import annotations

import pytest

from causalkg.cli import main
from causalkg.core.config import EXTRACT_RENAMED, flat_items, load_config, load_defaults, renamed_key
from causalkg.core.config import block as block_of
from causalkg.core.errors import ConfigError

DEFAULTS = dict(flat_items(load_defaults()))


def test_every_renamed_key_names_a_key_of_the_defaults():
    assert len(EXTRACT_RENAMED) == 60
    for old, new in EXTRACT_RENAMED.items():
        assert f"extract.{new}" in DEFAULTS, (old, new)
        assert f"extract.{old}" not in DEFAULTS, old
    # one new name per old one: no two earlier keys became the same key
    assert len(set(EXTRACT_RENAMED.values())) == len(EXTRACT_RENAMED)


@pytest.mark.parametrize("old", sorted(EXTRACT_RENAMED))
def test_an_old_flat_key_is_refused_naming_the_new_one(old, tmp_path):
    new = f"extract.{EXTRACT_RENAMED[old]}"
    value = DEFAULTS[new]
    assert renamed_key(f"extract.{old}") == new
    with pytest.raises(ConfigError) as e:
        load_config(search_cwd=False, overrides={f"extract.{old}": value})
    assert e.value.message == f"--set: config key extract.{old} is now {new}"
    toml = tmp_path / "causalkg.toml"
    toml.write_text(f"[extract]\n{old} = {_toml(value)}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"causalkg.toml: config key extract\.{old} is now") as e:
        load_config(toml)
    section, key = new.rsplit(".", 1)
    assert f"[{section}] {key} = ..." in e.value.hint


def _toml(value):
    import json
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return "[" + ", ".join("{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in d.items()) + " }"
                               for d in value) + "]"
    return json.dumps(value)


def test_the_new_names_load_and_keep_the_values(tmp_path):
    toml = tmp_path / "causalkg.toml"
    toml.write_text('[extract.gate]\nthreshold = 0.4\nkind = "cues"\n\n[extract.qa.train]\nsteps = 5\n', encoding="utf-8")
    cfg = load_config(toml, overrides={"extract.tagger.batch_size": 8})
    assert cfg.get("extract.gate.threshold") == 0.4 and cfg["extract"]["gate"]["kind"] == "cues"
    assert cfg["extract"]["qa"]["train"]["steps"] == 5 and cfg.get("extract.tagger.batch_size") == 8
    assert cfg.get("extract.gate.model") == "models/causal-gate"  # the rest of the block stays as it was


def test_the_gate_kind_given_where_the_gate_block_now_is_is_refused():
    with pytest.raises(ConfigError, match=r"config key extract\.gate is now extract\.gate\.kind"):
        load_config(search_cwd=False, overrides={"extract.gate": "cues"})


def test_a_key_several_trainers_read_names_each_trainers_own():
    with pytest.raises(ConfigError, match=r"extract\.train_seed is now extract\.qa\.train\.seed") as e:
        load_config(search_cwd=False, overrides={"extract.train_seed": 3})
    assert "extract.gate.train.seed" in e.value.hint and "extract.tagger.train.seed" in e.value.hint
    # each has the value the one shared key had
    for key in ("warmup", "seed"):
        assert DEFAULTS[f"extract.gate.train.{key}"] == DEFAULTS[f"extract.qa.train.{key}"] == \
            DEFAULTS[f"extract.tagger.train.{key}"]
    assert DEFAULTS["extract.gate.train.dtype"] == DEFAULTS["extract.qa.train.dtype"]
    assert DEFAULTS["extract.tagger.train.freeze_embeddings"] == DEFAULTS["extract.qa.train.freeze_embeddings"]


def test_the_cli_refuses_an_old_key_in_one_line(capsys):
    assert main(["--set", "extract.gate_threshold=0.5", "config", "show"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --set: config key extract.gate_threshold is now extract.gate.threshold "
                   "(rename it: [extract.gate] threshold = ... (or --set extract.gate.threshold=...))"]
    assert main(["--set", "extract.gate.threshold=0.5", "config", "show", "--format", "json"]) == 0
    assert '"threshold": 0.5' in capsys.readouterr().out


def test_each_component_block_is_its_section_typed():
    """``block`` builds each component's frozen dataclass from its resolved section: the fields
    are exactly the section's keys (sub-sections left out), the values the configuration's."""
    import dataclasses

    from causalkg.core.config import block
    from causalkg.kg.settings import BLOCKS, GateSettings, QASettings

    cfg = load_config(search_cwd=False, overrides={"extract.gate.threshold": 0.25, "extract.qa.max_causes": 3})
    for section, cls in BLOCKS.items():
        settings = block(cfg, section, cls)
        as_dict = dataclasses.asdict(settings)
        assert as_dict == {k: v for k, v in cfg.get(section).items() if f"{section}.{k}" not in BLOCKS}, section
    gate = block(cfg, "extract.gate", GateSettings)
    assert gate.threshold == 0.25 and gate.kind == "learned"
    assert block(cfg, "extract.qa", QASettings).max_causes == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        gate.threshold = 0.5  # type: ignore[misc]


def test_a_block_out_of_step_with_defaults_toml_fails_naming_the_keys():
    from dataclasses import dataclass

    from causalkg.core.config import block

    @dataclass(frozen=True)
    class Short:
        kind: str
        model: str
        colour: str

    cfg = load_config(search_cwd=False)
    with pytest.raises(TypeError, match=r"Short does not match \[extract\.gate\]: keys without a field "
                                        r"\['batch_size', 'first_pass', 'first_pass_keep', 'threshold'\], "
                                        r"fields without a key \['colour'\]"):
        block(cfg, "extract.gate", Short)
    with pytest.raises(ConfigError, match=r"no config section \[extract\.nothing\]"):
        block(cfg, "extract.nothing", Short)


def test_each_extractor_is_built_from_its_own_block_not_the_whole_config():
    """The extractors take their block (a frozen dataclass) and the few run keys they use; only
    their ``from_config`` / registry factory reads the Config."""
    import inspect

    from causalkg.kg.extractors.llm import LLMExtractor
    from causalkg.kg.extractors.patterns import PatternExtractor
    from causalkg.kg.extractors.qa import QAExtractor
    from causalkg.kg.extractors.tagger import TaggerExtractor

    for cls, settings in ((QAExtractor, "QASettings"), (TaggerExtractor, "TaggerSettings"), (LLMExtractor, "LLMSettings"),
                          (PatternExtractor, None)):
        params = inspect.signature(cls.__init__).parameters
        assert "cfg" not in params, cls.__name__
        if settings:
            assert params[list(params)[1]].annotation == settings, cls.__name__
    from causalkg.kg.settings import LLMSettings

    class Client:  # what LLMExtractor asks of a client before any request: its model name
        model = "m"

    cfg = load_config(search_cwd=False)
    llm = LLMExtractor(block_of(cfg, "extract.llm", LLMSettings), Client())
    assert llm.passage_chars == cfg.get("extract.llm.passage_chars") and llm.candidates_only
