"""Generations: a stage's set of output files published all at once, never a mix.

A folder written as generations (``data/kg``, ``data/store``) looks like this::

    ROOT/generations/<id>/...           one complete set of outputs; never changed once published
    ROOT/generations/.building-<id>/    a set being written (a killed writer's is removed by the next)
    ROOT/current -> generations/<id>    the published set: a symlink replaced with rename(2)
    ROOT/.published                     the ids published so far, oldest first (JSON, atomic)
    ROOT/<name>  -> current/<name>      the documented paths (data/kg/causal_kg.jsonl), stable
    ROOT/.writer.lock                   flock(2) held by the one process writing a generation

A writer (``begin`` ... ``publish``) writes every file into the building folder, renames it
to its final name and then swaps ``current`` in one rename, so a reader that resolves
``current`` gets the old set or the new one. A reader (``reading``) resolves ``current``
once and holds a shared flock on the generation's ``.readers.lock`` while it reads;
``prune`` removes old generations only when it can take that lock exclusively, so nothing is
deleted under a reader. Locks die with their process: a kill -9 leaves no stale lock.

The published generation is whatever ``current`` names, never guessed from folder names; the
ones before it are those ``.published`` records. A folder in ``generations/`` that is neither
(a writer killed after renaming its folder but before the switch), and the building, trash and
temporary leftovers of killed writers, are swept by every writer (``begin``, ``publish``) and by
a run that finds its outputs up to date (``sweep``), so a kill at any point of a switch can
neither lose the published generation nor leave it to be pruned in favour of an unpublished one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from causalkg.core import faults
from causalkg.core.errors import SourceError
from causalkg.core.jsonl import sweep_stale_temps

GENERATIONS = "generations"
CURRENT = "current"
BUILDING_PREFIX = ".building-"
TRASH_PREFIX = ".trash-"
PUBLISHED = ".published"
LINK_TMP_SUFFIX = ".link"
WRITER_LOCK = ".writer.lock"
READERS_LOCK = ".readers.lock"
MANIFEST = "manifest.json"


class BusyError(SourceError):
    """Another process is writing the same generation folder."""


class MixedSetError(SourceError):
    """Files read together do not belong to one generation (their checksums disagree with
    the manifest beside them)."""


@dataclass
class Generation:
    """A generation being written: ``path`` is where its files go until ``publish``."""

    root: Path
    id: str
    path: Path

    @property
    def final(self) -> Path:
        return self.root / GENERATIONS / self.id


def new_id() -> str:
    """A sortable generation id: UTC time to the microsecond and a random suffix."""
    ns = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(ns // 1_000_000_000))
    return f"{stamp}.{(ns // 1000) % 1_000_000:06d}Z-{secrets.token_hex(3)}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def writer_lock(root: str | os.PathLike, what: str) -> Iterator[None]:
    """Hold ROOT's writer lock; BusyError when another live process holds it."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / WRITER_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BusyError(f"another {what} is writing {root} right now",
                            hint="wait for it to finish; a killed one releases its lock when it dies") from None
        yield
    finally:
        os.close(fd)  # closing releases the flock


def published_ids(root: str | os.PathLike) -> list[str]:
    """The ids of the generations published in ROOT, oldest first, ending with the current one:
    the ``.published`` record (ids whose folder is gone are left out) and ``current``. A root
    written before the record existed counts the folders named up to the current one (ids sort
    by time) as published: only a folder newer than ``current`` can be an unpublished one."""
    root = Path(root)
    gens = root / GENERATIONS
    cur = current(root)
    try:
        record = json.loads((root / PUBLISHED).read_text(encoding="utf-8"))
        ids = [str(x) for x in record["published"]]
    except (OSError, ValueError, KeyError, TypeError):
        ids = [g.name for g in generations(root) if cur is not None and g.name <= cur.name]
    out = [i for i in ids if (gens / i).is_dir() and (cur is None or i != cur.name)]
    if cur is not None:
        out.append(cur.name)
    return out


def _record_published(root: Path, ids: list[str]) -> None:
    tmp = root / f"{PUBLISHED}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"published": ids}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / PUBLISHED)
    _fsync_dir(root)


def _sweep_leftovers(root: Path) -> list[Path]:
    """Remove (writer lock held) what killed writers left: building and trash folders, the
    record's and the links' temporary files, and generation folders never published. Returns
    what was removed."""
    gens = root / GENERATIONS
    if not gens.is_dir():
        return []
    published = set(published_ids(root))
    removed = []
    for p in gens.iterdir():
        name = p.name
        if name.startswith((BUILDING_PREFIX, TRASH_PREFIX)):
            pass
        elif p.is_dir() and not name.startswith(".") and name not in published:
            trash = p.with_name(f"{TRASH_PREFIX}{name}")  # renamed first: a kill mid-delete leaves trash
            os.rename(p, trash)
            p = trash
        else:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()
        removed.append(gens / name)
    for p in root.iterdir():  # a link swap killed between symlink(2) and rename(2); a record's temporary
        if (p.name.startswith(".") and p.name.endswith(LINK_TMP_SUFFIX) and p.is_symlink()) or (
                p.name.startswith(PUBLISHED + ".") and p.name.endswith(".tmp")):
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
    return removed


def sweep(root: str | os.PathLike, keep: int = 2, *, scratch: tuple[str, ...] = ()) -> list[Path]:
    """What a run that writes nothing (its outputs are up to date) does for ROOT: take the
    writer lock if no other writer holds it, remove what killed writers left (see
    ``_sweep_leftovers``; also the ``.tmp`` files of dead writers in ROOT, and ROOT's folders
    whose names start with one of ``scratch``) and the published generations beyond ``keep``.
    Another writer at work is left alone. Returns what was removed."""
    root = Path(root)
    if not (root / GENERATIONS).is_dir():
        return []
    try:
        with writer_lock(root, "writer"):
            removed = _sweep_leftovers(root) + sweep_stale_temps(root, every_time=True)
            for p in root.iterdir():
                if scratch and p.name.startswith(scratch) and p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(p)
            return removed + prune(root, keep)
    except BusyError:
        return []


def begin(root: str | os.PathLike) -> Generation:
    """Start a generation (call with the writer lock held): removes what killed writers left
    (building and trash folders, unpublished generations), and creates an empty building folder."""
    root = Path(root)
    gens = root / GENERATIONS
    gens.mkdir(parents=True, exist_ok=True)
    _sweep_leftovers(root)
    gid = new_id()
    path = gens / f"{BUILDING_PREFIX}{gid}"
    path.mkdir()
    try:
        (path / READERS_LOCK).touch()
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)  # a full disk or no file handles: leave nothing
        raise
    return Generation(root, gid, path)


def _swap_link(link: Path, target: str) -> None:
    """Point ``link`` at ``target`` in one rename; a real file there is replaced, a real folder
    is moved aside first (a folder written before generations existed)."""
    tmp = link.with_name(f".{link.name}.{secrets.token_hex(4)}{LINK_TMP_SUFFIX}")
    os.symlink(target, tmp)
    if link.is_dir() and not link.is_symlink():
        aside = link.with_name(f"{TRASH_PREFIX}{link.name}-{secrets.token_hex(4)}")
        os.rename(link, aside)
        os.replace(tmp, link)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(tmp, link)


PUBLISH_POINTS = ("publish.renamed", "publish.switched", "publish.linked", "publish.recorded", "publish.pruning")


def publish(gen: Generation, links: Iterable[str] = (), keep: int = 2) -> Path:
    """Make ``gen`` the current generation: rename its folder to its final name, swap
    ``current`` to it, make sure each name of ``links`` is a stable ``ROOT/name ->
    current/name`` link, record it in ``.published``, and prune older generations beyond
    ``keep`` and every unpublished leftover. Returns the final path.

    A kill at any step (``PUBLISH_POINTS`` are the fault points between them) leaves
    ``current`` naming a whole generation, the old one or the new one; the next run sweeps
    the rest."""
    final = gen.final
    before = published_ids(gen.root)
    os.rename(gen.path, final)
    _fsync_dir(final.parent)
    faults.point("publish.renamed")
    _swap_link(gen.root / CURRENT, f"{GENERATIONS}/{gen.id}")
    _fsync_dir(gen.root)
    faults.point("publish.switched")
    for name in links:
        link = gen.root / name
        want = f"{CURRENT}/{name}"
        if not (link.is_symlink() and os.readlink(link) == want):
            _swap_link(link, want)
    _fsync_dir(gen.root)
    faults.point("publish.linked")
    _record_published(gen.root, [i for i in before if i != gen.id] + [gen.id])
    faults.point("publish.recorded")
    gen.path = final
    _sweep_leftovers(gen.root)
    prune(gen.root, keep)
    return final


def current(root: str | os.PathLike) -> Path | None:
    """The current generation's folder, or None when ROOT has no published generation."""
    root = Path(root)
    link = root / CURRENT
    try:
        target = os.readlink(link)
    except (FileNotFoundError, OSError):
        return None
    return (root / target) if not os.path.isabs(target) else Path(target)


def generations(root: str | os.PathLike) -> list[Path]:
    """Published generation folders, oldest first."""
    gens = Path(root) / GENERATIONS
    if not gens.is_dir():
        return []
    return sorted(p for p in gens.iterdir() if p.is_dir() and not p.name.startswith("."))


def prune(root: str | os.PathLike, keep: int = 2) -> list[Path]:
    """Remove published generations beyond the ``keep`` published last (the current one is
    always kept; the order is the order of publication, not of the folders' names), skipping
    any a reader holds. Returns the removed folders."""
    root = Path(root)
    gens = root / GENERATIONS
    cur = current(root)
    ids = [i for i in published_ids(root) if cur is None or i != cur.name]
    old = [gens / i for i in ids[: max(0, len(ids) - max(0, keep - 1))]]
    removed = []
    for g in old:
        try:
            fd = os.open(g / READERS_LOCK, os.O_RDONLY)
        except FileNotFoundError:
            fd = None
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a reader is in it: the next writer prunes it
            trash = g.with_name(f"{TRASH_PREFIX}{g.name}")
            os.rename(g, trash)
            faults.point("publish.pruning")
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(g)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


@contextlib.contextmanager
def reading(root: str | os.PathLike, *, attempts: int = 20) -> Iterator[Path]:
    """The folder to read ROOT's outputs from, held so that no writer prunes it meanwhile.

    A generation folder: its current generation (a shared flock on it while the block runs).
    A folder of outputs written without generations: ROOT itself.
    """
    root = Path(root)
    for _ in range(attempts):
        gen = current(root)
        if gen is None:
            yield root
            return
        try:
            fd = os.open(gen / READERS_LOCK, os.O_RDONLY)
        except FileNotFoundError:
            if current(root) == gen:  # not a swap under us: the link points at nothing
                raise SourceError(f"{root / CURRENT} points to {gen}, which is missing",
                                  hint="rebuild it (with --force)") from None
            continue  # switched between readlink and open: resolve again
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if not (gen / READERS_LOCK).is_file():
                continue  # pruned between open and lock
            yield gen
            return
        finally:
            os.close(fd)
    raise SourceError(f"cannot get a stable view of {root}: its generations change faster than they can be read")


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(folder: str | os.PathLike, names: Iterable[str] | None = None, *, what: str = "outputs") -> dict:
    """Check that files of ``folder`` belong to the set its manifest describes: the manifest's
    ``generation`` matches the folder (when it is a generation) and each file's SHA-256 is the
    one recorded in the manifest's ``checksums`` (``names``: only these; default all). Returns
    the manifest; raises MixedSetError naming the first file that does not belong."""
    folder = Path(folder)
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MixedSetError(f"no manifest in {folder}: cannot tell whether its {what} belong together",
                            hint="rebuild it") from None
    except json.JSONDecodeError as exc:
        raise MixedSetError(f"{path} is unreadable ({exc})", hint="rebuild it") from None
    gid = manifest.get("generation")
    if folder.parent.name == GENERATIONS and gid != folder.name:
        raise MixedSetError(f"{path} belongs to generation {gid!r}, not to {folder.name!r}", hint="rebuild it")
    sums = manifest.get("checksums") or {}
    wanted = list(sums) if names is None else list(names)
    for rel in wanted:
        p = folder / rel
        if rel not in sums:
            raise MixedSetError(f"{p} is not listed in {path}: the {what} in {folder} are a mix of two builds",
                                hint="rebuild it with --force")
        if not p.is_file():
            raise MixedSetError(f"{p} is missing: the {what} in {folder} are incomplete", hint="rebuild it with --force")
        if file_sha256(p) != sums[rel]:
            raise MixedSetError(f"{p} does not match the manifest beside it (generation {gid or 'none'}): "
                                f"the {what} in {folder} are a mix of two builds", hint="rebuild it with --force")
    return manifest


def check_member(path: str | os.PathLike, *, stages: tuple[str, ...] = ("kg.assemble",)) -> Path:
    """The real path of a file read on its own (``data/kg/causal_kg.jsonl`` resolves into the
    current generation), checked against the manifest beside it when that manifest was written
    by one of ``stages`` and lists the file. A file of the user's own (no such manifest) is
    returned as it is. Raises MixedSetError when the file does not match its manifest."""
    p = Path(path)
    if not p.is_file():
        return p
    real = Path(os.path.realpath(p))
    folder = real.parent
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return real
    if not isinstance(manifest, dict) or manifest.get("stage") not in stages:
        return real
    if real.name in (manifest.get("checksums") or {}):
        verify(folder, [real.name], what="KG files")
    return real
