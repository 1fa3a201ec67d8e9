"""JSONL reading with validation, and atomic writing.

Every stage boundary is a JSONL file. Readers here validate each line (as JSON, then against a
pydantic model when one is given) and fail with ``path:line: what is wrong``. With
``lenient=True`` bad lines are skipped, counted in ``ReadStats`` and reported by the caller;
nothing is dropped silently.

Writers never leave a half-written file under the final name: they write to a temporary file
in the same folder, fsync it, and rename it over the target (``atomic_write``). Files ending in
``.gz`` are compressed transparently on both sides. Two guards, for every stage at once:

- an empty result never replaces a non-empty file (``EmptyOutputError``) unless allowed:
  ``allow_empty=True``, or inside ``allowing_empty_outputs()`` (what the CLI's
  ``--allow-shrink`` does; ``--force`` only redoes the work), so a run that read nothing (an
  unreadable input) cannot wipe good outputs;
- temporary files are named ``.<target>.<pid>.<random>.tmp``: a killed run's leftovers are
  removed by the next write into the same folder once their process is gone.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import io
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from causalkg.core import faults
from causalkg.core.errors import CausalKGError, SchemaError

M = TypeVar("M", bound=BaseModel)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


@dataclass
class ReadStats:
    """What a reader saw: lines read, records returned, bad lines skipped (lenient mode)."""

    path: str = ""
    lines: int = 0
    records: int = 0
    skipped: int = 0
    torn: int = 0  # a last line cut short by a crash, skipped (``skip_torn``)
    errors: list[str] = field(default_factory=list)  # the first few skipped lines' messages

    def note_skip(self, message: str) -> None:
        self.skipped += 1
        if len(self.errors) < 20:
            self.errors.append(message)

    def summary(self) -> str:
        text = f"{self.path}: {self.records} records from {self.lines} lines"
        if self.skipped:
            text += f", {self.skipped} bad lines skipped (--lenient)"
        if self.torn:
            text += ", a torn last line (no newline: a write cut short) skipped"
        return text


def format_validation_error(exc: ValidationError) -> str:
    """One line per problem, ``field.path: message``, joined by ``; ``."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(record)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def open_text(path: str | os.PathLike, mode: str = "r") -> IO[str]:
    """Open a text file, gzip-compressed when the name ends in .gz."""
    p = str(path)
    if p.endswith(".gz"):
        return gzip.open(p, mode + "t", encoding="utf-8")  # type: ignore[return-value]
    return open(p, mode, encoding="utf-8", newline="\n" if "w" in mode else None)


def loads(data: bytes | str) -> Any:
    """Parse one JSON document: orjson (about 3x faster than ``json``) with ``json`` as the
    fallback for what orjson refuses but Python writes (NaN, Infinity)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        value = json.loads(data)
    # orjson refuses lone surrogates ("\ud800"), json takes them; they are not Unicode text and
    # fail later, when the string is written out as UTF-8: refuse them here, on this line.
    if _has_surrogate(value):
        raise ValueError("a lone surrogate escape (\\ud800-\\udfff) in a string: not valid Unicode")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _json_problem(line: bytes, exc: ValueError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.start + 1})"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (column {exc.colno})"
    return str(exc)


def _open_bytes(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for reading bytes, gzip-decompressed when the name ends in .gz."""
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")  # type: ignore[return-value]


@dataclass(frozen=True)
class LineSpan:
    """A run of whole lines of a file: from byte ``start``, which begins line number ``line``,
    to byte ``end`` (offsets into the uncompressed text of a ``.gz``)."""

    line: int
    start: int
    end: int


def line_spans(path: str | os.PathLike, lines: int) -> Iterator[LineSpan]:
    """The file cut into runs of ``lines`` lines (the last may be shorter), read once without
    parsing: for work on parts of a large JSONL in other processes (``iter_json_lines(span=)``)."""
    if lines < 1:
        raise ValueError(f"line_spans: lines must be at least 1, got {lines}")
    with _open_bytes(path) as fh:
        line, start, pos, n = 1, 0, 0, 0
        for raw in fh:
            pos += len(raw)
            n += 1
            if n == lines:
                yield LineSpan(line, start, pos)
                line, start, n = line + n, pos, 0
        if n:
            yield LineSpan(line, start, pos)


def iter_json_lines(
    path: str | os.PathLike, *, lenient: bool = False, stats: ReadStats | None = None, span: LineSpan | None = None,
    skip_torn: bool = False,
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, parsed_json)`` for each non-blank line of a JSONL file, or of its
    lines in ``span`` (``line_spans``; numbered as in the whole file).

    Raises SchemaError naming ``path:line`` on a line that is not JSON (unless lenient).
    ``skip_torn``: a last line without its newline that is not JSON (an append cut short by a
    crash or a full disk) is skipped and counted in ``stats.torn`` instead, lenient or not.
    """
    stats = stats if stats is not None else ReadStats()
    stats.path = str(path)
    if not Path(path).exists():
        raise SchemaError(f"{path}: no such file")
    with _open_bytes(path) as fh:
        lines: Iterable[bytes] = fh
        first = 1
        if span is not None:
            fh.seek(span.start)
            lines, first = _bytes_up_to(fh, span.end - span.start), span.line
        for lineno, line in enumerate(lines, first):
            stats.lines = lineno
            if not line.strip():
                continue
            try:
                value = loads(line)
            except ValueError as exc:  # JSONDecodeError, and UnicodeDecodeError for bad UTF-8
                message = f"{path}:{lineno}: not valid JSON: {_json_problem(line, exc)}"
                if skip_torn and not line.endswith(b"\n"):  # only the last line lacks its newline
                    stats.torn += 1
                    stats.errors.append(f"{path}:{lineno}: a torn last line ({len(line)} bytes without a newline: "
                                        "a write cut short) skipped")
                    continue
                if not lenient:
                    raise SchemaError(message) from None
                stats.note_skip(message)
                continue
            yield lineno, value


def _bytes_up_to(fh: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The lines of ``fh`` that start within its next ``size`` bytes."""
    for line in fh:
        if size <= 0:
            return
        size -= len(line)
        yield line


class RecordProblem(Exception):
    """What is wrong with one record, raised by a ``read_jsonl`` converter (reported ``path:line``)."""


def read_jsonl(
    path: str | os.PathLike,
    model: type[M] | None = None,
    *,
    lenient: bool = False,
    stats: ReadStats | None = None,
    check: Callable[[Any], str | None] | None = None,
    skip_torn: bool = False,
    convert: Callable[[Any], Any] | None = None,
) -> Iterator[Any]:
    """Stream the records of a JSONL file, validated (``skip_torn``: see ``iter_json_lines``).

    ``model``: a pydantic model each line must satisfy (records are yielded as model instances);
    without one, the parsed JSON values are yielded. ``check``: an extra function returning an
    error message (or None) for a record. ``convert``: turns each record into what is yielded; it
    may raise ``RecordProblem`` (or a pydantic ``ValidationError``) for a bad record. Errors raise
    SchemaError with ``path:line:`` unless ``lenient``, in which case the line is skipped and
    counted in ``stats``.
    """
    stats = stats if stats is not None else ReadStats()
    for lineno, value in iter_json_lines(path, lenient=lenient, stats=stats, skip_torn=skip_torn):
        try:
            record = model.model_validate(value) if model is not None else value
            problem = check(record) if check is not None else None
            if problem is None and convert is not None:
                record = convert(record)
        except ValidationError as exc:
            problem = format_validation_error(exc)
        except RecordProblem as exc:
            problem = str(exc)
        if problem:
            message = f"{path}:{lineno}: {problem}"
            if not lenient:
                raise SchemaError(message)
            stats.note_skip(message)
            continue
        stats.records += 1
        yield record


TORN_SUFFIX = ".torn"


def heal_torn_tail(fd: int, path: str | os.PathLike) -> int:
    """Make an append-only JSONL end in a newline before the next append, losing nothing.

    ``fd``: the file ``path`` opened for reading and writing, its writer's lock held. When the
    file does not end in a newline (a crash or a full disk cut the last append short), the torn
    tail, the bytes after the last newline, is appended as one line to ``<path>.torn`` beside it
    (fsync'd), then the file is cut back to its last whole line (fsync'd), so the next line
    written starts a line of its own instead of being glued onto the torn one. Returns the
    number of bytes moved aside (0 when the file is empty or ends in a newline)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    start, pos = 0, size
    while pos > 0:  # the last newline, read backwards in blocks
        n = min(1 << 16, pos)
        pos -= n
        i = os.pread(fd, n, pos).rfind(b"\n")
        if i >= 0:
            start = pos + i + 1
            break
    tail = os.pread(fd, size - start, start)
    aside = os.open(f"{os.fspath(path)}{TORN_SUFFIX}", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        data = memoryview(tail + b"\n")
        while data:
            data = data[os.write(aside, data):]
        os.fsync(aside)
    finally:
        os.close(aside)
    os.ftruncate(fd, start)
    os.fsync(fd)
    return len(tail)


def to_json_line(record: Any) -> str:
    """One compact JSON line (no trailing newline). Pydantic models drop unset optional fields."""
    if isinstance(record, BaseModel):
        return record.model_dump_json(exclude_none=False)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


class EmptyOutputError(CausalKGError):
    """A stage produced an empty file where a non-empty one exists: refused, the old file kept."""


_allow_empty: contextvars.ContextVar[bool] = contextvars.ContextVar("causalkg_allow_empty", default=False)


@contextlib.contextmanager
def allowing_empty_outputs(allow: bool = True) -> Iterator[None]:
    """Inside this block ``atomic_write`` may replace a non-empty file with an empty one, and
    a stage may replace an output with a smaller one it would otherwise refuse (the CLI enters
    it for ``--allow-shrink``; see ``shrink_allowed``)."""
    token = _allow_empty.set(bool(allow))
    try:
        yield
    finally:
        _allow_empty.reset(token)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


_swept: set[str] = set()


def sweep_stale_temps(folder: str | os.PathLike, *, every_time: bool = False) -> list[Path]:
    """Remove the temporary files (``.<name>.<pid>.<random>.tmp``) that writers which are no
    longer running left in ``folder`` (a killed run). Files of live processes are kept. Done
    once per folder and process unless ``every_time``. Returns the removed paths."""
    key = os.path.abspath(folder)
    if key in _swept and not every_time:
        return []
    _swept.add(key)
    removed: list[Path] = []
    try:
        names = os.listdir(key)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        parts = name[:-4].rsplit(".", 2)  # ".<target>", "<pid>", "<random>"
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        if _pid_alive(int(parts[1])):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(key, name))
            removed.append(Path(key) / name)
    return removed


def _is_empty(tmp_name: str, gz: bool) -> bool:
    if os.path.getsize(tmp_name) == 0:
        return True
    if gz:
        with contextlib.suppress(OSError, EOFError), gzip.open(tmp_name, "rb") as fh:
            return fh.read(1) == b""
    return False


def _has_content(target: Path) -> bool:
    try:
        if target.stat().st_size == 0:
            return False
    except OSError:
        return False
    return not _is_empty(str(target), str(target).endswith(".gz"))


def shrink_allowed() -> bool:
    """Whether the caller is inside ``allowing_empty_outputs()`` (``--allow-shrink``)."""
    return _allow_empty.get()


def temp_dir_beside(out: str | os.PathLike) -> Path:
    """A fresh, empty folder beside ``out`` (``.<name>.tmp-<pid>``) to build ``out``'s new
    contents in; :func:`replace_dir` then puts it in ``out``'s place."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    return tmp


def replace_dir(tmp: str | os.PathLike, out: str | os.PathLike) -> None:
    """Put the finished folder ``tmp`` in ``out``'s place with two renames (the old folder aside,
    the new one in), then remove the old one: a reader sees the old folder or the new one, never
    a mix of both."""
    tmp, out = Path(tmp), Path(out)
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_dir(out: str | os.PathLike) -> Iterator[Path]:
    """Build the folder ``out`` atomically: yields an empty temporary folder beside it, which
    replaces ``out`` (:func:`replace_dir`) when the block ends without an exception; on one,
    ``out`` is left as it was and the temporary folder removed."""
    tmp = temp_dir_beside(out)
    try:
        yield tmp
        replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", *, allow_empty: bool | None = None) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success fsync and rename it to ``path``.

    On an exception the temporary file is removed and ``path`` is left as it was.
    ``mode`` is "w" (text, UTF-8) or "wb". A ``.gz`` target is gzip-compressed.
    An empty result does not replace a non-empty ``path`` (``EmptyOutputError``, ``path``
    kept) unless ``allow_empty`` (default: inside ``allowing_empty_outputs()``).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temps(target.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; outputs follow the umask like open() does
    raw = os.fdopen(fd, "wb")
    try:
        # mtime=0 keeps gzip output byte-identical across reruns; closing the GzipFile writes
        # its trailer but leaves ``raw`` open (it was passed in as fileobj).
        binary: IO = (
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
            if str(target).endswith(".gz")
            else raw
        )
        if "b" in mode:
            yield binary
        else:
            text = io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
            yield text
            text.flush()
            text.detach()
        if binary is not raw:
            binary.close()
        raw.flush()
        os.fsync(raw.fileno())
        raw.close()
        allowed = _allow_empty.get() if allow_empty is None else allow_empty
        if not allowed and _is_empty(tmp_name, binary is not raw) and _has_content(target):
            raise EmptyOutputError(
                f"refusing to replace {target} ({target.stat().st_size} bytes) with an empty file: "
                "the run produced nothing; the existing file is kept",
                hint="check the inputs, or rerun with --allow-shrink to write the empty result")
        faults.point(f"write:{target.name}", target)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(Exception):
            raw.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> int:
    """Write records (dicts or pydantic models) as JSONL, atomically. Returns the count."""
    n = 0
    with atomic_write(path) as fh:
        for record in records:
            fh.write(to_json_line(record))
            fh.write("\n")
            n += 1
    return n


def write_json(path: str | os.PathLike, value: Any) -> None:
    """Write one pretty-printed JSON document atomically."""
    with atomic_write(path) as fh:
        json.dump(value, fh, ensure_ascii=False, indent=2, sort_keys=False)
        fh.write("\n")
