"""Causal epistemic consistency, its input: cause-effect pairs from the flat KG JSONL or the
δ-CAUSAL CSV, validated on read with ``path:line`` errors, and a seeded sample of them.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from causalkg.core.contracts import FlatPair
from causalkg.core.errors import SchemaError
from causalkg.core.jsonl import ReadStats, format_validation_error, iter_json_lines
from causalkg.evaluation.judging.consistency_metrics import DELTA_CAUSAL_COLUMNS, N_ITEMS


# --- input: cause-effect pairs ---------------------------------------------------------------


@dataclass
class CausalPair:
    """A cause-effect pair with (optionally) one supporter, one defeater and the ten intermediates."""

    id: str
    cause: str
    effect: str
    supporter: str | None = None
    defeater: str | None = None
    intermediates: list[str] | None = None  # in intended order, when already generated
    meta: dict[str, Any] = field(default_factory=dict)


def _clean(text: Any) -> str:
    return " ".join(str(text).split()) if text is not None else ""


def _pair_from_json(value: Any, where: str) -> CausalPair:
    if not isinstance(value, dict):
        raise SchemaError(f"{where}: expected a JSON object, got {type(value).__name__}")
    cause, effect = value.get("cause"), value.get("effect")
    if isinstance(cause, dict) or isinstance(effect, dict):  # a KG edge in the flat WikiCausal shape
        try:
            edge = FlatPair.model_validate(value)
        except ValidationError as exc:
            raise SchemaError(f"{where}: not a KG edge: {format_validation_error(exc)}") from None
        if not edge.cause.label or not edge.effect.label:
            raise SchemaError(f"{where}: a KG edge needs cause.label and effect.label")
        pid = str(value.get("id") or f"{edge.cause.id[0]}->{edge.effect.id[0]}")
        return CausalPair(pid, _clean(edge.cause.label), _clean(edge.effect.label),
                          meta={"cause_id": edge.cause.id, "effect_id": edge.effect.id, "source": "kg"})
    if not isinstance(cause, str) or not isinstance(effect, str) or not cause.strip() or not effect.strip():
        raise SchemaError(f"{where}: needs non-empty 'cause' and 'effect' strings (or a KG edge)")
    inter = value.get("intermediates")
    if inter is not None:
        if isinstance(inter, list) and inter and isinstance(inter[0], dict):
            inter = [x.get("text") for x in inter]
        if not (isinstance(inter, list) and len(inter) == N_ITEMS and all(isinstance(x, str) and x.strip() for x in inter)):
            raise SchemaError(f"{where}: 'intermediates' must be a list of {N_ITEMS} non-empty strings in intended order")
        inter = [_clean(x) for x in inter]
    sup, dfe = value.get("supporter"), value.get("defeater")
    for name, v in (("supporter", sup), ("defeater", dfe)):
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise SchemaError(f"{where}: '{name}' must be a non-empty string when given")
    pid = value.get("id")
    return CausalPair(
        str(pid) if pid is not None else f"line-{where.rsplit(':', 1)[-1]}", _clean(cause), _clean(effect),
        _clean(sup) if sup else None, _clean(dfe) if dfe else None, inter,
        meta={k: v for k, v in value.items() if k in ("domain", "keyword", "source")},
    )


def read_pairs(path: str | Path, *, lenient: bool = False, stats: ReadStats | None = None) -> list[CausalPair]:
    """Cause-effect pairs from a delta-CAUSAL CSV (columns ID, cause, long_term_effect, defeater,
    supporter, ...) or a JSONL file: ``{"id", "cause", "effect", "supporter", "defeater"}`` lines,
    lines that also carry ``intermediates`` (a previous run's ``pairs.jsonl``), or KG edges in the
    flat shape (no supporter or defeater: the generator writes them first).

    Raises SchemaError with ``path:line:`` on a bad line (skipped and counted when lenient).
    """
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    stats.path = str(path)
    if not path.exists():
        raise SchemaError(f"{path}: no such file")
    pairs: list[CausalPair] = []
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in DELTA_CAUSAL_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SchemaError(f"{path}:1: not a delta-CAUSAL CSV: missing column(s) {', '.join(missing)}")
            for row in reader:
                lineno = reader.line_num
                stats.lines = lineno
                empty = [c for c in DELTA_CAUSAL_COLUMNS if not (row.get(c) or "").strip()]
                if empty:
                    msg = f"{path}:{lineno}: empty {', '.join(empty)}"
                    if not lenient:
                        raise SchemaError(msg)
                    stats.note_skip(msg)
                    continue
                pairs.append(CausalPair(
                    row["ID"].strip(), _clean(row["cause"]), _clean(row["long_term_effect"]),
                    _clean(row["supporter"]), _clean(row["defeater"]),
                    meta={"domain": row.get("domain"), "keyword": row.get("keyword"), "source": "delta-causal"},
                ))
                stats.records += 1
        return pairs
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats):
        try:
            pair = _pair_from_json(value, f"{path}:{lineno}")
        except SchemaError as exc:
            if not lenient:
                raise
            stats.note_skip(str(exc))
            continue
        pairs.append(pair)
        stats.records += 1
    ids = [p.id for p in pairs]
    if len(set(ids)) != len(ids):
        seen: dict[str, int] = {}
        for p in pairs:  # KG edges may repeat a (cause, effect): keep ids unique for the report
            n = seen.get(p.id, 0)
            seen[p.id] = n + 1
            if n:
                p.id = f"{p.id}#{n}"
    return pairs


def sample_pairs(pairs: list[CausalPair], limit: int, seed: int) -> list[CausalPair]:
    """A seeded random sample of ``limit`` pairs (all when ``limit`` <= 0), kept in file order."""
    if limit <= 0 or limit >= len(pairs):
        return list(pairs)
    keep = sorted(random.Random(seed).sample(range(len(pairs)), limit))
    return [pairs[i] for i in keep]
