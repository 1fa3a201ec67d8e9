"""Configuration: one TOML file of checked-in defaults, a user file over it, flags over both.

The defaults live in ``causalkg/core/defaults.toml`` (read it: every key is documented there).
A user file (``--config FILE``, or ``causalkg.toml`` in the working directory when present)
may set any of those keys and no others; ``--set section.key=value`` and each command's own
flags override both. Types are checked against the defaults, so a typo or a string where a
number belongs fails at start-up with the key named, not half-way through a run.

The resolved configuration is a plain, JSON-serialisable dict; it goes into every output
folder's ``manifest.json``. Nothing here is kept in module globals: a ``Config`` is created
by the CLI (or by the caller of the Python API) and passed down.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, TypeVar

from causalkg.core.errors import ConfigError
from causalkg.core.ranges import check_ranges

DEFAULTS_PATH = Path(__file__).with_name("defaults.toml")
# The checkout the package runs from: bundled inputs (``snapshots/...``) are found there when
# the working directory is elsewhere.
CHECKOUT_ROOT = Path(__file__).resolve().parents[2]
USER_CONFIG_NAME = "causalkg.toml"


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _type_name(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "table"}.get(
        type(value), type(value).__name__
    )


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _check_type(key: str, default: Any, value: Any, origin: str) -> Any:
    """Return ``value`` coerced to the type of ``default`` where that is lossless, else fail."""
    if default is None:
        return value  # keys whose default is unset accept any type
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, str):
        if isinstance(value, str):
            return value
    elif isinstance(default, list):
        if isinstance(value, list):
            return value
    elif isinstance(default, dict):
        if isinstance(value, dict):
            return value
    raise ConfigError(
        f"{origin}: {key} must be {_article(_type_name(default))}, got {_type_name(value)} {value!r}"
    )


# Keys of earlier versions, refused with the name that replaced them: the flat [eval] section
# of 59 prefixed keys became one section per family (eval.sqc_matcher -> eval.sqc.matcher).
_EVAL_FAMILIES = ("recall", "report", "precision", "sqc", "consistency", "soft", "elo", "meta", "align")

# ... and the flat [extract] section of prefixed keys became one block per component: the
# earlier key under extract. -> its name now under extract. (one table, read both ways).
_TRAIN_KEYS = ("data", "base_model", "steps", "batch_size", "learning_rate", "warmup", "seed", "max_seq_length",
               "eval_every", "selection_questions", "freeze_embeddings", "dtype", "reversed_share")
EXTRACT_RENAMED: dict[str, str] = {
    "gate": "gate.kind",
    **{f"gate_{k}": f"gate.{k}" for k in ("model", "threshold", "batch_size", "first_pass", "first_pass_keep")},
    **{f"gate_train_{k}": f"gate.train.{k}" for k in ("data", "c", "mix", "steps", "batch_size", "learning_rate")},
    "gate_encoder": "gate.train.encoder",
    "gate_target_recall": "gate.train.target_recall",
    "qa_model": "qa.model",
    "batch_size": "qa.batch_size",
    **{k: f"qa.{k}" for k in ("max_anchors", "questions_anchored", "question_cause", "question_effect",
                              "max_seq_length", "doc_stride", "max_question_tokens", "max_answer_tokens", "min_score",
                              "null_threshold", "null_threshold_from_model", "max_causes", "max_effects",
                              "anchored_needs_causal_sentence", "drop_reversed_anchored")},
    **{f"train_{k}": f"qa.train.{k}" for k in _TRAIN_KEYS},
    **{f"tagger_{k}": f"tagger.{k}" for k in ("model", "batch_size", "max_seq_length", "max_relations", "min_score")},
    **{f"tagger_train_{k}": f"tagger.train.{k}" for k in ("data", "sources", "base_model", "steps", "batch_size",
                                                          "learning_rate", "frozen_layers", "eval_every")},
    **{f"llm_{k}": f"llm.{k}" for k in ("prompt", "max_attempts", "passage_chars")},
}
# Earlier keys that several trainers read: each trainer has its own key now.
_EXTRACT_SHARED = {"train_warmup": ("gate", "tagger"), "train_seed": ("gate", "tagger"),
                   "train_dtype": ("gate",), "train_freeze_embeddings": ("tagger",)}


def renamed_key(dotted: str) -> str | None:
    """The current name of a key an earlier version used (``eval.sqc_matcher`` ->
    ``eval.sqc.matcher``, ``extract.gate_threshold`` -> ``extract.gate.threshold``), or None
    when ``dotted`` is not such a key."""
    section, _, key = dotted.partition(".")
    if "." in key:
        return None
    if section == "extract":
        new = EXTRACT_RENAMED.get(key)
        return f"extract.{new}" if new is not None else None
    if section != "eval":
        return None
    if key in ("wordnet_dir", "wordnet_source"):
        return f"eval.soft.{key}"
    family, _, rest = key.partition("_")
    if family in _EVAL_FAMILIES and rest:
        return f"eval.{family}.{rest}"
    return None


def _renamed_error(origin: str, dotted: str, new: str) -> ConfigError:
    section, key = new.rsplit(".", 1)
    hint = f"rename it: [{section}] {key} = ... (or --set {new}=...)"
    old = dotted.partition(".")[2]
    if dotted.startswith("extract.") and old in _EXTRACT_SHARED:
        others = ", ".join(f"extract.{c}.train.{key}" for c in _EXTRACT_SHARED[old])
        hint += f"; the other trainers that read it have their own: {others}"
    return ConfigError(f"{origin}: config key {dotted} is now {new}", hint=hint)


def section_names() -> set[str]:
    """The dotted names of the sections of ``defaults.toml`` (``paths``, ``eval.sqc``, ...):
    the tables written as ``[a.b]`` headers, as opposed to table-valued keys."""
    names = set()
    for line in DEFAULTS_PATH.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\[([A-Za-z0-9_.-]+)\]\s*(#.*)?$", line)
        if m:
            names.add(m.group(1))
    return names


def _merge(defaults: dict, overrides: Mapping, origin: str, prefix: str = "") -> dict:
    out = copy.deepcopy(defaults)
    for key, value in overrides.items():
        dotted = f"{prefix}{key}"
        if key not in defaults:
            new = renamed_key(dotted)
            if new is not None and _has_key(new):
                raise _renamed_error(origin, dotted, new)
            close = difflib.get_close_matches(key, list(defaults), n=1)
            hint = f"did you mean {prefix}{close[0]}?" if close else "see causalkg/core/defaults.toml for the keys"
            raise ConfigError(f"{origin}: unknown config key {dotted}", hint=hint)
        default = defaults[key]
        if isinstance(default, dict) and default and not isinstance(value, dict):
            # a key that became a section (extract.gate = "cues" -> extract.gate.kind)
            new = renamed_key(dotted)
            if new is not None and _has_key(new):
                raise _renamed_error(origin, dotted, new)
        # A table of free-form entries (default {}) takes any keys; a table with keys is checked.
        if isinstance(default, dict) and default and isinstance(value, dict):
            out[key] = _merge(default, value, origin, prefix=f"{dotted}.")
        else:
            out[key] = _check_type(dotted, default, value, origin)
    return out


def _has_key(dotted: str) -> bool:
    node: Any = load_defaults()
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def parse_assignment(text: str, origin: str = "--set") -> tuple[str, Any]:
    """Parse one ``--set section.key=value``; the value is read as TOML, or as a bare string."""
    if "=" not in text:
        raise ConfigError(f"{origin} {text!r}: expected section.key=value")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or "." not in key:
        raise ConfigError(f"{origin} {text!r}: expected section.key=value")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def _nest(dotted: Mapping[str, Any]) -> dict:
    nested: dict = {}
    for key, value in dotted.items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return nested


@dataclass(frozen=True)
class Config:
    """A resolved configuration. Read with ``cfg["section"]["key"]`` or ``cfg.get("section.key")``.

    ``base_dir`` is where relative paths are resolved: the folder of the user config file, or
    the working directory when there is none.
    """

    data: dict
    base_dir: Path = field(default_factory=Path.cwd)
    sources: tuple[str, ...] = ()

    def __getitem__(self, section: str) -> dict:
        try:
            return self.data[section]
        except KeyError:
            raise ConfigError(f"no config section [{section}]") from None

    def __contains__(self, section: str) -> bool:
        return section in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def get(self, dotted: str, default: Any = ...) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                if default is not ...:
                    return default
                raise ConfigError(f"no config key {dotted}")
            node = node[part]
        return node

    def path(self, dotted: str) -> Path:
        """The config value at ``dotted`` as a path, relative ones resolved against ``base_dir``."""
        value = self.get(dotted)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{dotted} must be a non-empty path, got {value!r}")
        p = Path(os.path.expanduser(value))
        return p if p.is_absolute() else self.base_dir / p

    def input_path(self, dotted: str) -> Path | None:
        """Like ``path`` for an input file; None when the value is empty or "none".

        A relative path missing under ``base_dir`` is looked up in the checkout the package runs
        from, so the bundled snapshots are found from any working directory. Outputs use
        ``path``, never this: they must not land in the checkout by accident.
        """
        value = self.get(dotted)
        if value in ("", None) or (isinstance(value, str) and value.lower() == "none"):
            return None
        p = self.path(dotted)
        raw = Path(os.path.expanduser(str(value)))
        if not p.exists() and not raw.is_absolute() and (CHECKOUT_ROOT / raw).exists():
            return CHECKOUT_ROOT / raw
        return p

    def with_overrides(self, overrides: Mapping[str, Any], origin: str = "option") -> "Config":
        """A new Config with dotted keys overridden (``None`` values are ignored: flag not given)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if not given:
            return self
        merged = _merge(self.data, _nest(given), origin)
        check_ranges(merged, origin)
        return Config(merged, self.base_dir, self.sources + (origin,))

    def to_dict(self) -> dict:
        return copy.deepcopy(self.data)

    def to_json(self) -> str:
        return json.dumps(self.data, sort_keys=True, ensure_ascii=False)


def load_defaults() -> dict:
    return _read_toml(DEFAULTS_PATH)


def load_config(
    path: str | os.PathLike | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    search_cwd: bool = True,
) -> Config:
    """Resolve the configuration: defaults, then the user file, then dotted ``overrides``.

    ``path`` names a user TOML file; when it is None and ``search_cwd`` is true,
    ``./causalkg.toml`` is used if it exists. Raises ConfigError on unknown keys, wrong
    types, unreadable files.
    """
    data = load_defaults()
    sources = [str(DEFAULTS_PATH)]
    base_dir = Path.cwd()
    user_path: Path | None = Path(path) if path is not None else None
    if user_path is None and search_cwd and Path(USER_CONFIG_NAME).is_file():
        user_path = Path(USER_CONFIG_NAME)
    if user_path is not None:
        data = _merge(data, _read_toml(user_path), str(user_path))
        check_ranges(data, str(user_path))
        sources.append(str(user_path))
        base_dir = user_path.resolve().parent
    cfg = Config(data, base_dir, tuple(sources))
    env = env_overrides()
    if env:
        cfg = cfg.with_overrides(env, origin=ENV_SET)
    if overrides:
        cfg = cfg.with_overrides(overrides, origin="--set")
    return cfg


ENV_SET = "CAUSALKG_SET"
"""An environment variable of ``section.key=value`` assignments (separated by ``;`` or new lines),
applied over the user file and under ``--set`` and flags: one setting for every command of a shell
or a CI job, and for the processes they start."""


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The assignments of ``CAUSALKG_SET`` (empty when it is unset or blank); a malformed one
    raises ConfigError naming the variable."""
    raw = (os.environ if environ is None else environ).get(ENV_SET, "")
    out: dict[str, Any] = {}
    for part in re.split(r"[;\n]", raw):
        if part.strip():
            key, value = parse_assignment(part.strip(), origin=ENV_SET)
            out[key] = value
    return out


B = TypeVar("B")


def block(cfg: Config, dotted: str, cls: type[B]) -> B:
    """The resolved section ``dotted`` (``extract.gate``) as ``cls``, a frozen dataclass whose
    fields are exactly the section's keys; its own sections (``extract.gate.train``) are left out.
    The dataclass declares names and types only: the defaults stay written once, in defaults.toml.

    Raises ConfigError when ``dotted`` is not a section of defaults.toml, TypeError when the
    dataclass's fields and the section's keys differ (the dataclass is out of step with the file).
    """
    sections = section_names()
    if dotted not in sections:
        raise ConfigError(f"no config section [{dotted}]")
    values = cfg.get(dotted)
    keys = {k for k in values if f"{dotted}.{k}" not in sections}
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    if fields != keys:
        raise TypeError(f"{cls.__name__} does not match [{dotted}]: keys without a field {sorted(keys - fields)}, "
                        f"fields without a key {sorted(fields - keys)}")
    return cls(**{k: copy.deepcopy(values[k]) for k in fields})


PathLike = str | os.PathLike
CfgLike = Config | PathLike | None
"""What a command takes as ``cfg``: a Config, a TOML path, or None."""


def resolve_config(cfg: CfgLike = None, overrides: Mapping[str, Any] | None = None,
                   *, origin: str = "API") -> Config:
    """A ``Config`` from what a caller of a command passed as ``cfg``: a Config, a TOML path, or
    None (the defaults and ``./causalkg.toml``); ``overrides`` (dotted keys, ``None`` values
    ignored) go over it, recorded with ``origin``. Raises ConfigError for anything else."""
    if cfg is None or isinstance(cfg, (str, os.PathLike)):
        cfg = load_config(cfg)
    elif not isinstance(cfg, Config):
        raise ConfigError(f"cfg must be a Config, a TOML path or None, got {type(cfg).__name__}",
                          hint="use causalkg.load_config(...)")
    return cfg.with_overrides(dict(overrides or {}), origin=origin)


def flat_items(data: Mapping[str, Any], sections: "set[str] | None" = None, prefix: str = "") -> list[tuple[str, Any]]:
    """``(dotted key, value)`` for every setting; sections (``eval.sqc``) are walked into."""
    if sections is None:
        sections = section_names()
    out: list[tuple[str, Any]] = []
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and name in sections:
            out += flat_items(v, sections, f"{name}.")
        else:
            out.append((name, v))
    return out


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(data: Mapping[str, Any], sections: "set[str] | None" = None, prefix: str = "") -> str:
    """``data`` as TOML text. ``sections``: the dotted names written as ``[a.b]`` tables (default:
    the sections of ``causalkg/core/defaults.toml``); other table values are written inline."""
    if sections is None:
        sections = section_names()
    lines: list[str] = []
    nested: list[tuple[str, Mapping[str, Any]]] = []
    for section, values in data.items():
        name = f"{prefix}{section}"
        lines.append(f"[{name}]")
        for k, v in values.items():
            if isinstance(v, dict) and f"{name}.{k}" in sections:
                nested.append((f"{name}.{k}", v))
            else:
                lines.append(f"{k} = {_toml_value(v)}")
        lines.append("")
        for sub, v in nested:
            lines.append(to_toml({sub.rsplit(".", 1)[1]: v}, sections, prefix=sub.rsplit(".", 1)[0] + "."))
        nested.clear()
    return "\n".join(lines)


__all__ = ["Config", "load_config", "resolve_config"]
