"""Resumable shards: the checkpoints of every long stage, in one shape.

A long stage (``kg extract``, the Wikipedia part of ``corpus build``, the linking step of
``kg assemble``) cuts its input into shards, writes each shard's result to its own file, and
concatenates them at the end. ``Shards`` keeps that folder honest:

- the folder is stamped with the fingerprint of the run (inputs and settings that change every
  shard); a folder stamped with another fingerprint, or ``force``, is emptied first, so no shard of
  another run is ever reused;
- a shard counts as done only when its record ``<key>.done.json`` exists, was written after its
  data (both atomically), and matches what the caller checks (``done(key, expect={...})``); a run
  killed half-way leaves no record, so the shard is redone;
- ``keep_only`` drops the shards of an earlier, longer input.

The final outputs are built from the shard files in key order, so they do not depend on whether
a shard was resumed or redone. No state is kept outside the folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping

from causalkg.core.jsonl import atomic_write

DONE_SUFFIX = ".done.json"
STAMP_NAME = "shards.json"


class Shards:
    """The checkpoint folder of one run. ``fingerprint`` names the run; ``force`` starts afresh."""

    def __init__(self, folder: str | Path, fingerprint: str, *, force: bool = False) -> None:
        self.folder = Path(folder)
        self.fingerprint = fingerprint
        self.reset = force or self.stamped(self.folder) != fingerprint
        if self.reset:
            shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.reset:
            with atomic_write(self.folder / STAMP_NAME) as fh:
                json.dump({"fingerprint": fingerprint}, fh)

    @staticmethod
    def stamped(folder: str | Path) -> str | None:
        """The fingerprint a checkpoint folder was made for (None: no folder, or unreadable)."""
        try:
            return json.loads((Path(folder) / STAMP_NAME).read_text(encoding="utf-8")).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            return None

    @classmethod
    def count_done(cls, folder: str | Path, fingerprint: str, prefix: str = "") -> int:
        """How many shards (with keys starting with ``prefix``) of the run ``fingerprint`` a folder
        holds, without touching it (plans)."""
        if cls.stamped(folder) != fingerprint:
            return 0
        return sum(1 for _ in Path(folder).glob(f"{prefix}*{DONE_SUFFIX}"))

    def path(self, key: str, suffix: str = ".jsonl") -> Path:
        """The data file of shard ``key``."""
        return self.folder / f"{key}{suffix}"

    def _record(self, key: str) -> Path:
        return self.folder / f"{key}{DONE_SUFFIX}"

    def done(self, key: str, expect: Mapping[str, Any] | None = None) -> dict | None:
        """The record of a finished shard, or None when it is not done, or done with other values
        for any of the ``expect`` keys (a shard fingerprint, a size)."""
        try:
            record = json.loads(self._record(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or any(record.get(k) != v for k, v in (expect or {}).items()):
            return None
        return record

    def finish(self, key: str, record: Mapping[str, Any]) -> None:
        """Mark shard ``key`` done, after its data file is written. ``record`` must be JSON."""
        with atomic_write(self._record(key)) as fh:
            json.dump(dict(record), fh, ensure_ascii=False)

    def keys(self) -> list[str]:
        """The keys of the finished shards, sorted."""
        return sorted(p.name[: -len(DONE_SUFFIX)] for p in self.folder.glob(f"*{DONE_SUFFIX}"))

    def keep_only(self, keys: Iterable[str]) -> None:
        """Remove every shard (data and record) whose key is not in ``keys``."""
        keep = set(keys)
        for p in self.folder.iterdir():
            if p.name == STAMP_NAME or p.name.startswith("."):
                continue
            key = p.name[: -len(DONE_SUFFIX)] if p.name.endswith(DONE_SUFFIX) else p.name.split(".", 1)[0]
            if key not in keep:
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink()


__all__ = ["Shards", "DONE_SUFFIX", "STAMP_NAME"]
