"""SQC-Score, its input: facts (causal edges, triples or plain text, each written as a sentence with
the parts the embedding matcher compares) grouped into units with their source texts, read from
JSONL with ``path:line`` errors. The measure itself is in ``evaluation.judging.sqc``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalkg.core.errors import ConfigError, SchemaError
from causalkg.core.jsonl import ReadStats, iter_json_lines


ALL_UNITS = "(all)"
DUPLICATE_MODES = ("drop", "count")

# --- facts and units -------------------------------------------------------------------------


@dataclass
class Fact:
    """One fact: ``text`` is the sentence shown to the grader and the NLI model; ``parts`` the
    components compared one by one by the embedding matcher (cause/effect, subject/relation/object)."""

    text: str
    kind: str  # edge | triple | text
    parts: dict[str, str] = field(default_factory=dict)
    raw: Any = None

    @property
    def key(self) -> str:
        """Normalised form for spotting duplicates: case, spacing and final punctuation ignored."""
        return re.sub(r"\s+", " ", self.text.casefold()).strip().rstrip(" .;!")


@dataclass
class Templates:
    edge: str = "{cause} causes {effect}."
    triple: str = "{subject} {relation} {object}."

    def __post_init__(self) -> None:
        for name, t, fields in (("edge", self.edge, ("cause", "effect")),
                                ("triple", self.triple, ("subject", "relation", "object"))):
            try:
                t.format(**{f: "x" for f in fields})
            except (KeyError, IndexError, ValueError) as exc:
                raise ConfigError(f"bad sqc_{name}_template {t!r}: {exc}",
                                  hint=f"use only the fields {', '.join('{' + f + '}' for f in fields)}") from None


def _end_text(value: Any) -> str | None:
    """The text of a cause or effect: a string, or a dict with ``label`` or ``text``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for k in ("label", "text"):
            if isinstance(value.get(k), str):
                return value[k]
    return None


def _clean(text: str) -> str:
    return " ".join(text.split())


def _part(text: str) -> str:
    """A fact's part as it goes into a sentence template: no final full stop of its own."""
    return _clean(text).rstrip(" .;")


def fact_from_record(value: Any, templates: Templates) -> Fact:
    """A Fact from a JSON value: a triple ``{"subject", "relation", "object"}`` (or a list of three
    strings, as in the reference's data), a causal edge ``{"cause", "effect"}`` whose ends are
    strings or ``{"label"|"text", ...}`` (the flat KG shape, extraction spans), or ``{"text"}``.
    Raises ValueError saying what is wrong."""
    if isinstance(value, list):
        if len(value) == 3 and all(isinstance(x, str) and x.strip() for x in value):
            value = {"subject": value[0], "relation": value[1], "object": value[2]}
        else:
            raise ValueError("a list fact must be three non-empty strings [subject, relation, object]")
    if not isinstance(value, dict):
        raise ValueError(f"a fact must be a JSON object, got {type(value).__name__}")
    if all(k in value for k in ("subject", "relation", "object")):
        parts = {k: value[k] for k in ("subject", "relation", "object")}
        if not all(isinstance(v, str) and v.strip() for v in parts.values()):
            raise ValueError("subject, relation and object must be non-empty strings")
        parts = {k: _part(v) for k, v in parts.items()}
        return Fact(_clean(templates.triple.format(**parts)), "triple", parts, value)
    if "cause" in value or "effect" in value:
        cause, effect = _end_text(value.get("cause")), _end_text(value.get("effect"))
        if not cause or not cause.strip() or not effect or not effect.strip():
            raise ValueError("a causal edge needs a cause and an effect, each a string or {\"label\"|\"text\": ...}")
        parts = {"cause": _part(cause), "effect": _part(effect)}
        return Fact(_clean(templates.edge.format(**parts)), "edge", parts, value)
    if isinstance(value.get("text"), str) and value["text"].strip():
        return Fact(_clean(value["text"]), "text", {}, value)
    raise ValueError("not a fact: expected subject/relation/object, cause/effect, or text")


@dataclass
class Unit:
    """A document or passage: its source text (None when unknown) and its facts."""

    id: str
    text: str | None
    predicted: list[Fact] = field(default_factory=list)
    gold: list[Fact] = field(default_factory=list)


def _dotted(value: dict, key: str) -> Any:
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _unit_of(value: Any, unit_key: str) -> str | None:
    if not isinstance(value, dict):
        return None
    for key in (unit_key, "doc_id"):
        got = _dotted(value, key)
        if got is not None and not isinstance(got, (dict, list)):
            return str(got)
    return None


def _read_facts(path: str | Path, templates: Templates, unit_key: str, lenient: bool,
                stats: ReadStats) -> list[tuple[str, Fact]]:
    out: list[tuple[str, Fact]] = []
    with_unit = without_unit = 0
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        try:
            fact = fact_from_record(value, templates)
        except ValueError as exc:
            msg = f"{path}:{lineno}: {exc}"
            if not lenient:
                raise SchemaError(msg) from None
            stats.note_skip(msg)
            continue
        unit = _unit_of(value, unit_key)
        if unit is None:
            without_unit += 1
        else:
            with_unit += 1
        if with_unit and without_unit:
            raise SchemaError(f"{path}:{lineno}: some facts name their unit ({unit_key} or doc_id) and some do not",
                              hint="give every fact a unit, or none (the whole file is then one unit)")
        out.append((unit if unit is not None else ALL_UNITS, fact))
        stats.records += 1
    return out


def _read_texts(path: str | Path, lenient: bool, stats: ReadStats) -> dict[str, str]:
    texts: dict[str, str] = {}
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        uid = value.get("id", value.get("unit")) if isinstance(value, dict) else None
        text = value.get("text") if isinstance(value, dict) else None
        if uid is None or not isinstance(text, str):
            msg = f"{path}:{lineno}: a text line needs \"id\" (or \"unit\") and \"text\""
            if not lenient:
                raise SchemaError(msg)
            stats.note_skip(msg)
            continue
        texts[str(uid)] = text
        stats.records += 1
    return texts


def read_units(
    *,
    units: str | Path | None = None,
    predicted: str | Path | None = None,
    gold: str | Path | None = None,
    texts: str | Path | None = None,
    templates: Templates | None = None,
    unit_key: str = "unit",
    lenient: bool = False,
) -> tuple[list[Unit], list[ReadStats]]:
    """The units to grade, from one ``units`` JSONL (``{"unit", "text", "predicted": [...], "gold": [...]}``
    per line) or from ``predicted`` and ``gold`` fact files (each fact naming its unit by
    ``unit_key``, else ``doc_id``) with an optional ``texts`` JSONL (``{"id", "text"}``: corpus
    documents qualify). Returns the units in first-seen order and the readers' stats.
    Raises ConfigError on a bad combination of inputs, SchemaError on bad lines."""
    templates = templates or Templates()
    all_stats: list[ReadStats] = []
    if units is not None:
        if predicted is not None or gold is not None:
            raise ConfigError("give either --units or --predicted with --gold, not both")
        st = ReadStats()
        all_stats.append(st)
        out: list[Unit] = []
        seen: set[str] = set()
        for lineno, value in iter_json_lines(units, lenient=lenient, stats=st):
            try:
                if not isinstance(value, dict):
                    raise ValueError("a unit line must be a JSON object")
                uid = value.get("unit", value.get("id"))
                if uid is None:
                    raise ValueError("a unit needs \"unit\" (or \"id\")")
                if str(uid) in seen:
                    raise ValueError(f"unit {uid!r} appears twice")
                text = value.get("text")
                if text is not None and not isinstance(text, str):
                    raise ValueError("\"text\" must be a string")
                lists = {}
                for side in ("predicted", "gold"):
                    items = value.get(side, [])
                    if not isinstance(items, list):
                        raise ValueError(f"\"{side}\" must be a list of facts")
                    try:
                        lists[side] = [fact_from_record(x, templates) for x in items]
                    except ValueError as exc:
                        raise ValueError(f"{side}: {exc}") from None
            except ValueError as exc:
                msg = f"{units}:{lineno}: {exc}"
                if not lenient:
                    raise SchemaError(msg) from None
                st.note_skip(msg)
                continue
            seen.add(str(uid))
            out.append(Unit(str(uid), text, lists["predicted"], lists["gold"]))
            st.records += 1
        return out, all_stats
    if predicted is None or gold is None:
        raise ConfigError("SQC needs --units FILE, or --predicted FILE and --gold FILE")
    sp, sg = ReadStats(), ReadStats()
    all_stats += [sp, sg]
    preds = _read_facts(predicted, templates, unit_key, lenient, sp)
    golds = _read_facts(gold, templates, unit_key, lenient, sg)
    text_map: dict[str, str] = {}
    if texts is not None:
        stt = ReadStats()
        all_stats.append(stt)
        text_map = _read_texts(texts, lenient, stt)
    by_id: dict[str, Unit] = {}
    for side, items in (("predicted", preds), ("gold", golds)):
        for uid, fact in items:
            unit = by_id.setdefault(uid, Unit(uid, text_map.get(uid)))
            getattr(unit, side).append(fact)
    if texts is not None and by_id and not any(u.text for u in by_id.values()):
        raise SchemaError(f"{texts}: no text for any unit (ids such as {next(iter(by_id))!r} not found)")
    return list(by_id.values()), all_stats
