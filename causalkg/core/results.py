"""The one shape every command's result has: ``to_table(fmt)`` in ``text``, ``md``, ``csv`` or
``json``, ``str(result)`` (the text), ``to_dict()`` (JSON-ready data).

Each command defines its result class beside its function (``kg/cli/extract.py`` holds
``extract``, ``Extraction`` and the ``kg extract`` parser), unless the stage's step returns a
``Result`` itself (``kg.assembly.Assembly``); the class subclasses ``Result``
and says how its rows or lines look. A result that is only a table of rows is a
``TableResult`` (rows and columns, nothing else to write). The CLI prints exactly
``to_table(--format)``, so a Python user and a shell user see the same thing.

The library object a command's worker returned stays available as ``result.detail`` (an
``ExtractResult``, a ``RecallReport``, ...); attributes a result class does not define are
looked up there, so ``ck.recall(...).rows()`` works as it does on the report.

Where it sits: in the core, beside the table renderer it uses (``core.tables``); it imports no
stage.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from causalkg.core.errors import ConfigError
from causalkg.core.tables import render_table

FORMATS: tuple[str, ...] = ("text", "md", "csv", "json")
"""The output formats of every result and of every command's ``--format``."""


def check_format(fmt: str) -> str:
    """``fmt`` when it is one of ``FORMATS``; ConfigError otherwise."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}", hint=f"choose one of: {', '.join(FORMATS)}")
    return fmt


def plain(value: Any) -> Any:
    """``value`` made JSON-ready: paths as strings, dataclasses and mappings as dicts, NaN as None."""
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def dumps(data: Any) -> str:
    """``data`` as indented JSON (``plain`` first)."""
    return json.dumps(plain(data), indent=2, ensure_ascii=False, default=str)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None, fmt: str, floatfmt: str = ".4f") -> str:
    """``rows`` rendered by ``core.tables.render_table``, NaN cells shown empty."""
    clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
    return render_table(clean, columns, fmt, floatfmt=floatfmt)


def lines_block(lines: Sequence[str], fmt: str) -> str:
    """Narrative lines: as they are for text and md; as a one-column table for csv."""
    if fmt == "csv":
        return table([{"line": line} for line in lines], ["line"], "csv")
    return "\n".join(lines)


def path_or_none(p: Any) -> Path | None:
    """``Path(p)``, or None when ``p`` is empty."""
    return Path(p) if p else None


@dataclass
class Result:
    """Base of every command's result: ``to_table(fmt)``, ``__str__``, ``to_dict()``.

    Subclasses implement ``_render(fmt)`` for ``text``, ``md`` and ``csv``; ``json`` is
    ``to_dict()`` unless a subclass keeps a documented JSON shape of its own (``_json``).
    """

    detail: Any = field(default=None, repr=False, compare=False, kw_only=True)

    formats: ClassVar[tuple[str, ...]] = FORMATS

    def to_table(self, fmt: str = "text") -> str:
        """The result rendered as ``fmt`` (``text``, ``md``, ``csv`` or ``json``)."""
        check_format(fmt)
        if fmt == "json":
            return dumps(self._json())
        return self._render(fmt)

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data (the library object in ``detail`` left out)."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "detail"}

    def _json(self) -> Any:
        return self.to_dict()

    def _render(self, fmt: str) -> str:
        rows = [{"key": k, "value": json.dumps(v, ensure_ascii=False, default=str) if isinstance(v, (dict, list)) else v}
                for k, v in self.to_dict().items()]
        return table(rows, ["key", "value"], fmt)

    def __str__(self) -> str:
        return self.to_table("text")

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes the dataclass lacks: look them up on the library object.
        if name.startswith("__"):
            raise AttributeError(name)
        detail = self.__dict__.get("detail")
        if detail is None:
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")
        return getattr(detail, name)


@dataclass
class TrainingResult(Result):
    """What a trainer did (``train_qa``, ``train_gate``, ``train_tagger``, ``train_verifier``):
    trained, in the lines ``_trained_lines`` writes, or skipped, and why. A subclass adds the
    fields its lines need after these three (``seconds``, ``validation``, ...)."""

    output: Path = Path()
    skipped: bool = False
    reason: str = ""

    @classmethod
    def from_run(cls, run: Any, **extra: Any) -> "TrainingResult":
        """The result of a trainer's own result ``run``: each field of this class read from it
        (the output as a Path, mappings copied), ``extra`` over them, ``run`` kept as ``detail``."""
        values = {}
        for f in dataclasses.fields(cls):
            if f.name == "detail" or f.name in extra:
                continue
            value = getattr(run, f.name)
            values[f.name] = Path(value) if f.name == "output" else dict(value) if isinstance(value, Mapping) else value
        return cls(**values, **extra, detail=run)

    def _trained_lines(self) -> list[str]:
        raise NotImplementedError

    def _render(self, fmt: str) -> str:
        if self.skipped:
            return lines_block([f"nothing to do: {self.reason}"], fmt)
        return lines_block(self._trained_lines(), fmt)


@dataclass
class TableResult(Result):
    """A result that is a table: ``rows()`` under ``COLUMNS`` (None: the first row's keys), in
    every format; json is the list of rows. ``note()``, when it returns text, is printed under
    the text and md tables (not in csv or json)."""

    COLUMNS: ClassVar[Sequence[str] | None] = None
    FLOATFMT: ClassVar[str] = ".4f"

    def rows(self) -> list[dict[str, Any]]:
        return list(self.detail.rows())

    def columns(self) -> Sequence[str] | None:
        return self.COLUMNS

    def note(self) -> str:
        return ""

    def _json(self) -> Any:
        return json.loads(table(self.rows(), self.columns(), "json"))

    def _render(self, fmt: str) -> str:
        text = table(self.rows(), self.columns(), fmt, self.FLOATFMT)
        note = self.note() if fmt != "csv" else ""
        return f"{text}\n\n{note}" if note else text


__all__ = ["FORMATS", "check_format", "Result", "TableResult"]
