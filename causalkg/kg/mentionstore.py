"""Linked mentions on disk, by edge: what aggregation and the KG writers read one edge at a time.

``kg assemble`` streams the linked mentions (``linked/shard-*.jsonl``) into a ``MentionStore``,
an SQLite file in a scratch folder beside the KG, instead of holding them in memory. The
aggregation (``kg/aggregate.py``) then builds each edge from SQL reads: its distinct sentences,
its scores in the order the in-memory rules read them, its confidence features, and at last its
mentions, one edge (or one nested line) at a time. Memory then grows with the number of edges
and concepts, not with the number of mentions or documents: a run at 68,391 documents holds what
a run at 1,000 holds, plus the edge headers.

- ``MentionStore(path)``: ``None`` for an in-memory database (``aggregate()`` on a list);
- ``add(m)``: store a mention once per (cause, effect, mention id), the first one met kept;
- ``edge_keys()``: the (cause QID, effect QID) of every direct edge, in first-met order;
- ``sentences(keys)``, ``scores(key, own)``, ``summary(keys)``, ``mentions(key)``: per-edge reads.

The scratch file is not a contract: it lives only while one assemble runs.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from causalkg.core.contracts import KGMention
from causalkg.core.jsonl import to_json_line
from causalkg.kg.polarity import cue_between

Key = tuple[str, str]
Sentence = tuple[str, int, int]

_SCHEMA = """
CREATE TABLE m (
    id INTEGER PRIMARY KEY,
    c TEXT NOT NULL, e TEXT NOT NULL, mid TEXT NOT NULL,
    doc TEXT NOT NULL, ss INTEGER NOT NULL, se INTEGER NOT NULL,
    cs INTEGER NOT NULL, ce INTEGER NOT NULL, es INTEGER NOT NULL, ee INTEGER NOT NULL,
    score REAL NOT NULL, link REAL NOT NULL,
    exact INTEGER NOT NULL, structured INTEGER NOT NULL, temporal INTEGER NOT NULL, cue INTEGER NOT NULL,
    json TEXT NOT NULL
);
CREATE UNIQUE INDEX m_edge ON m (c, e, mid);
"""
# The order of an edge's own mentions in the KG: document, sentence start, cause span, effect
# span, mention id. SQLite compares TEXT by its UTF-8 bytes, which orders strings as Python
# does (by code point).
_OWN_ORDER = "doc, ss, cs, ce, es, ee, mid"


@dataclass
class MentionSummary:
    """What the confidence features read from an edge's mentions (``kg/confidence.py``)."""

    n: int = 0
    score: float = float("-inf")
    link: float = float("-inf")
    exact: bool = False
    structured: bool = False
    temporal: int = 0
    cue: bool = False  # some mention has a causal cue between its spans (a structured one counts)

    def add(self, other: "MentionSummary") -> None:
        self.n += other.n
        self.score = max(self.score, other.score)
        self.link = max(self.link, other.link)
        self.exact = self.exact or other.exact
        self.structured = self.structured or other.structured
        self.temporal += other.temporal
        self.cue = self.cue or other.cue

    @classmethod
    def of(cls, m: KGMention) -> "MentionSummary":
        """The summary of one mention: what the store keeps of it and the features read."""
        return cls(1, float(m.score), float(min(m.cause.link_score, m.effect.link_score)),
                   m.cause.match == "exact" and m.effect.match == "exact",
                   getattr(m, "source", "sentence") != "sentence",
                   int(m.assertion is not None and bool(m.assertion.temporal)), mention_has_cue(m))


def mention_has_cue(m: KGMention) -> bool:
    """A causal cue ties the mention's spans (``kg.polarity.cue_between``); a mention of a
    structured source (an infobox field, a Causes list) states its relation by its place."""
    if getattr(m, "source", "sentence") != "sentence":
        return True
    off = m.sentence.start
    return cue_between(m.sentence.text, (m.cause.start - off, m.cause.end - off), (m.effect.start - off, m.effect.end - off))


class MentionStore:
    """Linked mentions in SQLite (a file, or memory when ``path`` is None), by edge."""

    def __init__(self, path: str | Path | None = None, *, cache_mb: int = 64) -> None:
        self.path = Path(path) if path is not None else None
        self.db = sqlite3.connect(str(path) if path is not None else ":memory:")
        # A scratch database: nothing to recover after a crash (the linked shards are the record).
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute(f"PRAGMA cache_size = -{int(cache_mb) * 1024}")
        self.db.execute("PRAGMA temp_store = FILE")
        self.db.executescript(_SCHEMA)
        self.added = 0
        self.duplicates = 0

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "MentionStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ---

    def add(self, m: KGMention) -> bool:
        """Store ``m`` unless its edge already has a mention of its id; True when stored."""
        s = MentionSummary.of(m)
        cur = self.db.execute(
            "INSERT OR IGNORE INTO m (c, e, mid, doc, ss, se, cs, ce, es, ee, score, link, exact, structured, "
            "temporal, cue, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (m.cause.qid, m.effect.qid, m.mention_id, m.doc_id, m.sentence.start, m.sentence.end,
             m.cause.start, m.cause.end, m.effect.start, m.effect.end, s.score, s.link, int(s.exact),
             int(s.structured), s.temporal, int(s.cue), to_json_line(m)))
        if cur.rowcount == 1:
            self.added += 1
            return True
        self.duplicates += 1
        return False

    def commit(self) -> None:
        self.db.commit()

    # --- reading, by edge ---

    def edge_keys(self) -> Iterator[tuple[Key, int]]:
        """Every direct edge's (cause, effect) and its number of mentions, in the order its
        first mention was stored."""
        rows = self.db.execute("SELECT c, e, COUNT(*), MIN(id) AS first FROM m GROUP BY c, e ORDER BY first")
        for c, e, n, _ in rows:
            yield (c, e), n

    def sentences(self, keys: Iterable[Key]) -> set[Sentence]:
        """The distinct (document, sentence start, sentence end) behind the edges ``keys``."""
        out: set[Sentence] = set()
        for c, e in keys:
            out.update(self.db.execute("SELECT DISTINCT doc, ss, se FROM m WHERE c = ? AND e = ?", (c, e)))
        return out

    def scores(self, key: Key, *, own: bool) -> list[tuple[float, float, str, int, int]]:
        """(score, lower link score, document, sentence start, end) of an edge's mentions: in
        the order of its own mentions (``own``), else in the order they were stored."""
        order = _OWN_ORDER if own else "id"
        return list(self.db.execute(f"SELECT score, link, doc, ss, se FROM m WHERE c = ? AND e = ? ORDER BY {order}",
                                    key))

    def summary(self, keys: Iterable[Key]) -> MentionSummary:
        """The confidence features' inputs over the mentions of the edges ``keys``."""
        out = MentionSummary()
        for key in keys:
            n, score, link, exact, structured, temporal, cue = self.db.execute(
                "SELECT COUNT(*), MAX(score), MAX(link), MAX(exact), MAX(structured), SUM(temporal), MAX(cue) FROM m "
                "WHERE c = ? AND e = ?", key).fetchone()
            if n:
                out.add(MentionSummary(n, score, link, bool(exact), bool(structured), int(temporal), bool(cue)))
        return out

    def mentions(self, key: Key) -> list[KGMention]:
        """An edge's own mentions, in the KG's order (``_OWN_ORDER``)."""
        rows = self.db.execute(f"SELECT json FROM m WHERE c = ? AND e = ? ORDER BY {_OWN_ORDER}", key)
        return [KGMention.model_validate_json(j) for (j,) in rows]
