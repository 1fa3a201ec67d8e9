"""Reading causal KGs for evaluation, in both WikiCausal shapes, as a stream of pairs.

Stage 4 (evaluation) reads the KGs that stage 3 (``kg``) writes and the Base KG that stage 1
(``corpus``) builds, and also any KG in the WikiCausal formats (the CauseNet KGs, other systems'
output). Two shapes are accepted, as the reference scripts accept them:

- the nested base-KG shape (``BaseKGLine``): ``{"event": {"id", "label"}, "consequences":
  [{"id", "label", "examples": [{"cause": {"id", "label"}, "effect": {...}}]}]}``; each
  (event, consequence) is a *class* pair and each example an *instance* pair;
- the flat shape (``FlatPair``): ``{"cause": {"label", "id": [..]}, "effect": {...}}``; the pair
  is (``cause.id[0]``, ``effect.id[0]``), counted as a *class* pair as the reference does, and
  the other ids are kept as candidates (for ``--any-id``).

A line in neither shape, or one that breaks its shape's contract (``causalkg.core.contracts``), is an
error naming ``path:line``; with ``lenient`` it is skipped and counted instead. Flat lines are
checked by a fast structural test first (recall must read a million pairs in seconds) and fall
back to the pydantic model, whose message is the one reported, so the accepted set is exactly
the models'.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, NamedTuple

from pydantic import ValidationError

from causalkg.core.contracts import BaseKGLine, FlatPair
from causalkg.core.errors import SchemaError
from causalkg.core.jsonl import ReadStats, format_validation_error, iter_json_lines

NESTED = "nested"
FLAT = "flat"
CLASS = "class"
INSTANCE = "instance"

# The contract's QID pattern, matched in full (``$`` in Python would also allow a trailing "\n").
_QID_FULL = re.compile(r"Q[1-9][0-9]*")


class KGPair(NamedTuple):
    """One cause -> effect pair read from a KG line.

    ``kind`` is ``class`` or ``instance``; ``cause``/``effect`` the QIDs the reference uses
    (``id[0]`` for flat lines); ``cause_ids``/``effect_ids`` every candidate id (one for nested
    lines); ``group`` the event class of the nested line it came from (None for flat lines);
    ``shape`` the line's shape; ``lineno`` the line number.
    """

    kind: str
    cause: str
    effect: str
    cause_label: str | None
    effect_label: str | None
    cause_ids: tuple[str, ...]
    effect_ids: tuple[str, ...]
    group: str | None
    group_label: str | None
    shape: str
    lineno: int


@dataclass
class KGReadStats(ReadStats):
    """``ReadStats`` plus how many lines of each shape were read and how many pairs they gave."""

    shapes: Counter = field(default_factory=Counter)
    pairs: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        text = super().summary()
        shapes = ", ".join(f"{n} {s}" for s, n in sorted(self.shapes.items()))
        return f"{text} ({shapes})" if shapes else text


def _flat_ok(value: dict, valid: set) -> bool:
    """True when ``value`` certainly satisfies ``FlatPair`` (false means: ask pydantic).

    Written out flat, without helper calls: recall runs it once per line of a KG that may hold
    millions of lines. It is never more lenient than the model. ``valid`` memoises the ids
    already checked against the QID pattern (a KG repeats the same few thousand ids)."""
    cause = value.get("cause")
    effect = value.get("effect")
    if type(cause) is not dict or type(effect) is not dict:
        return False
    label = cause.get("label")
    if label is not None and type(label) is not str:
        return False
    label = effect.get("label")
    if label is not None and type(label) is not str:
        return False
    ids = cause.get("id")
    if type(ids) is not list or not ids:
        return False
    for i in ids:
        if i not in valid:
            if type(i) is not str or _qid_fullmatch(i) is None:
                return False
            valid.add(i)
    ids = effect.get("id")
    if type(ids) is not list or not ids:
        return False
    for i in ids:
        if i not in valid:
            if type(i) is not str or _qid_fullmatch(i) is None:
                return False
            valid.add(i)
    return True


_qid_fullmatch = _QID_FULL.fullmatch


def _shape_of(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    if "event" in value:
        return NESTED
    if "cause" in value:
        return FLAT
    return None


def _shape_problem(value: Any) -> str:
    if not isinstance(value, dict):
        return f"a KG line must be a JSON object, got {type(value).__name__}"
    keys = ", ".join(sorted(value)) or "none"
    return (
        'neither KG shape: expected the base-KG shape {"event", "consequences"} or the flat shape '
        f'{{"cause", "effect"}}; found keys: {keys}'
    )


def pairs_of_nested(line: BaseKGLine, lineno: int) -> Iterator[KGPair]:
    """The pairs of one nested line: each (event, consequence) class pair, then its examples."""
    ev = line.event
    src = ev.id
    for c in line.consequences:
        tgt = c.id
        yield KGPair(CLASS, src, tgt, ev.label, c.label, (src,), (tgt,), src, ev.label, NESTED, lineno)
        for e in c.examples:
            ec, ee = e.cause.id, e.effect.id
            yield KGPair(INSTANCE, ec, ee, e.cause.label, e.effect.label, (ec,), (ee,), src, ev.label,
                         NESTED, lineno)


def _pair_of_flat(value: dict, lineno: int) -> KGPair:
    cause, effect = value["cause"], value["effect"]
    cids, eids = tuple(cause["id"]), tuple(effect["id"])
    return KGPair(CLASS, cids[0], eids[0], cause.get("label"), effect.get("label"), cids, eids, None, None,
                  FLAT, lineno)


def iter_kg_records(
    path: str | os.PathLike,
    *,
    lenient: bool = False,
    stats: KGReadStats | None = None,
    require: str | None = None,
) -> Iterator[tuple[int, str, Any]]:
    """Stream ``(line_number, shape, record)`` for each valid line of a KG file.

    ``record`` is a ``BaseKGLine`` for the nested shape and, for the flat shape, the line's dict
    (checked to satisfy ``FlatPair``: ``record["cause"]["id"]`` is a non-empty list of QIDs).
    ``require``: ``"nested"`` to accept only the base-KG shape (for Base KGs). Raises SchemaError
    ``path:line: ...`` on a bad line unless ``lenient`` (then it is skipped and counted in
    ``stats``); SchemaError when the file does not exist.
    """
    from causalkg.core.generations import check_member

    # A KG file of an assembled KG is read from one generation and checked against its manifest.
    path = check_member(path)
    stats = stats if stats is not None else KGReadStats()
    shapes = stats.shapes
    valid_ids: set = set()
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        # The common case first: a flat line that passes the fast check.
        if type(value) is dict and "event" not in value and "cause" in value and "effect" in value \
                and require is None and _flat_ok(value, valid_ids):
            stats.records += 1
            shapes[FLAT] += 1
            yield lineno, FLAT, value
            continue
        shape = _shape_of(value)
        problem: str | None = None
        record: Any = None
        if shape is None:
            problem = _shape_problem(value)
        elif require is not None and shape != require:
            problem = (f"expected the base-KG shape {{\"event\", \"consequences\"}}, found a {shape}-shape line"
                       if require == NESTED else f"expected the {require} shape, found a {shape}-shape line")
        elif shape == NESTED:
            if "consequences" not in value:
                problem = 'base-KG shape line without "consequences"'
            else:
                try:
                    record = BaseKGLine.model_validate(value)
                except ValidationError as exc:
                    problem = format_validation_error(exc)
        elif "effect" not in value:
            problem = 'flat-shape line without "effect"'
        else:
            try:
                record = FlatPair.model_validate(value).model_dump()
            except ValidationError as exc:
                problem = format_validation_error(exc)
        if problem is not None:
            message = f"{path}:{lineno}: {problem}"
            if not lenient:
                raise SchemaError(message)
            stats.note_skip(message)
            continue
        stats.records += 1
        shapes[shape] += 1
        yield lineno, shape, record


def iter_kg_pairs(
    path: str | os.PathLike,
    *,
    lenient: bool = False,
    stats: KGReadStats | None = None,
    require: str | None = None,
) -> Iterator[KGPair]:
    """Stream the pairs of a KG file in file order (a nested line's class pair, then its examples).

    Same arguments and errors as ``iter_kg_records``; ``stats.pairs`` counts pairs by kind.
    """
    stats = stats if stats is not None else KGReadStats()
    for lineno, shape, record in iter_kg_records(path, lenient=lenient, stats=stats, require=require):
        if shape == FLAT:
            stats.pairs[CLASS] += 1
            yield _pair_of_flat(record, lineno)
        else:
            for p in pairs_of_nested(record, lineno):
                stats.pairs[p.kind] += 1
                yield p


def read_document_concepts(path: str | os.PathLike, *, lenient: bool = False,
                           stats: ReadStats | None = None) -> set[str]:
    """The QIDs of the concepts the documents of a corpus JSONL are about.

    Reads only ``document_concept.id`` of each ``CorpusDocument`` line (a corpus can be large);
    unresolved documents (id null) are skipped. Raises SchemaError ``path:line`` on a line
    without a ``document_concept`` object (unless ``lenient``: then it is counted in ``stats``).
    """
    ids: set[str] = set()
    stats = stats if stats is not None else ReadStats()
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        concept = value.get("document_concept") if isinstance(value, dict) else None
        if not isinstance(concept, dict):
            message = f"{path}:{lineno}: not a corpus document: no \"document_concept\" object"
            if not lenient:
                raise SchemaError(message)
            stats.note_skip(message)
            continue
        stats.records += 1
        qid = concept.get("id")
        if isinstance(qid, str) and _QID_FULL.fullmatch(qid):
            ids.add(qid)
    return ids
