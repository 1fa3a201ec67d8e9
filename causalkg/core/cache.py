"""An on-disk cache of expensive answers (SPARQL responses, LLM completions, model outputs).

Keys are SHA-256 digests of JSON-serialisable parts, e.g. ``(endpoint, query)`` or
``(model, prompt, params, try)``; values are JSON. Storage is one SQLite file per cache
(``<paths.cache>/<name>.sqlite``) in WAL mode, safe for threads and for processes. A value is
only stored once it is complete, so a killed run never leaves a half answer behind.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Sequence

from causalkg.core.manifest import fingerprint


class DiskCache:
    """``get(key_parts)`` / ``put(key_parts, value)``. ``hits`` and ``misses`` count lookups."""

    def __init__(self, path: str | os.PathLike, *, enabled: bool = True):
        self.path = Path(path)
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._conn = conn
        return self._conn

    @staticmethod
    def key(*parts: Any) -> str:
        return fingerprint(*parts)

    def get(self, *parts: Any) -> Any | None:
        """The cached value for these key parts, or None."""
        if not self.enabled:
            self.misses += 1
            return None
        k = self.key(*parts)
        with self._lock:
            row = self._connect().execute("SELECT value FROM cache WHERE key = ?", (k,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, value: Any, *parts: Any) -> None:
        """Store ``value`` (JSON-serialisable) under these key parts."""
        if not self.enabled:
            return
        k = self.key(*parts)
        text = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._connect().execute("INSERT OR REPLACE INTO cache (key, value) VALUES (?, ?)", (k, text))

    def __len__(self) -> int:
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM cache").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "DiskCache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def cached_scores(cache: DiskCache | None, kind: str, model_id: str, firsts: Sequence[str],
                  seconds: Sequence[str]) -> tuple[list[float | None], list[int]]:
    """Look each ``(first, second)`` pair up under ``(kind, model_id, first, second)``.

    Returns the scores in input order (None where not cached) and the indices still to compute.
    """
    if len(firsts) != len(seconds):
        raise ValueError(f"{kind}: the two input lists differ in length ({len(firsts)} and {len(seconds)})")
    out: list[float | None] = [None] * len(firsts)
    todo: list[int] = []
    for i, (a, b) in enumerate(zip(firsts, seconds)):
        hit = cache.get(kind, model_id, a, b) if cache is not None else None
        if hit is not None:
            out[i] = float(hit)
        else:
            todo.append(i)
    return out, todo
