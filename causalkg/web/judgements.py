"""The judgements file (the only file ``causalkg serve`` writes) and the review queue.

``append`` adds one ``Judgement`` line to ``<paths.data>/judgements/judgements.jsonl``: the file
is opened with O_APPEND and the whole line goes out in one ``write`` call while holding both a
lock of this process and an exclusive ``flock`` on the file, then fsync before the server
answers. So two browsers (or two server processes) judging at once never interleave or lose a
line. A crash or a full disk leaves at worst a torn last line (no newline at its end):
``read_judgements`` skips and counts it, and the next ``append`` first moves it aside to
``judgements.jsonl.torn`` and cuts the file back to its last whole line, so the new judgement is
never glued onto the torn one.

The queue: every edge of the KG in one uniform random order, drawn once from a fixed seed
(``web.queue_seed``) over the edges sorted by (cause QID, effect QID), so the order does not
depend on the file's order and is the same on every server start. Edges already judged are
skipped. Judging the queue from the top therefore judges a simple random sample (without
replacement) of the KG's edges, and the precision measured on it (``causalkg eval precision
--human``) is an unbiased estimate of the whole KG's, with the Wilson interval as its error bar.
A rebuilt KG with other edges gets another order; edges judged before keep their judgements.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import random
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from causalkg.core.config import Config
from causalkg.core.contracts import Judgement, KGEdge, KGMention
from causalkg.core.errors import ConfigError
from causalkg.core.jsonl import TORN_SUFFIX, heal_torn_tail, iter_json_lines, ReadStats
from causalkg.core.layout import Layout
from causalkg.evaluation.wikicausal.human import edge_verdicts, latest, sentence_key

VERDICTS = ("correct", "wrong", "unsure")
MAX_NOTE = 2000
MAX_JUDGE = 80

_LOCK = threading.Lock()
log = logging.getLogger(__name__)


def judgements_path(cfg: Config) -> Path:
    """``<paths.data>/judgements/judgements.jsonl``."""
    return Layout.from_config(cfg).judgements


def make_judgement(edge: KGEdge, mention: KGMention | None, verdict: str, judge: str, note: str = "",
                   *, source: str = "edge", via: KGEdge | None = None) -> Judgement:
    """A validated Judgement of ``edge`` as ``mention`` states it. ``via``: the instance edge
    whose sentence it is, when ``edge`` is a class edge lifted from it (the judge was asked
    about the instance claim first); recorded as ``via_edge``. Raises ConfigError on a bad
    verdict or an empty judge name (the page shows the message)."""
    if verdict not in VERDICTS:
        raise ConfigError(f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    judge = " ".join((judge or "").split())[:MAX_JUDGE]
    if not judge:
        raise ConfigError("say who you are: the judge's name is required")
    note = (note or "").strip()[:MAX_NOTE]
    return Judgement(
        cause=edge.cause.id[0], effect=edge.effect.id[0],
        sentence=mention.sentence.text if mention is not None else "",
        verdict=verdict, judge=judge, note=note,
        time=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        cause_label=edge.cause.label, effect_label=edge.effect.label,
        cause_text=mention.cause.text if mention is not None else None,
        effect_text=mention.effect.text if mention is not None else None,
        edge_id=edge.edge_id, mention_id=mention.mention_id if mention is not None else None,
        doc_id=str(mention.doc_id) if mention is not None else None,
        revision_id=mention.revision_id if mention is not None else None, source=source,
        **({"via_edge": via.edge_id} if via is not None else {}),
    )


def append(path: str | os.PathLike, judgement: Judgement) -> int:
    """Append one judgement line, on disk whole (fsync'd) when this returns; see the module
    docstring for why nothing is lost. Returns the bytes of a torn last line moved aside to
    ``<path>.torn`` first (0 nearly always; logged as a warning when not)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(judgement.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    with _LOCK:
        created = not p.exists()
        fd = os.open(p, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                moved = heal_torn_tail(fd, p)
                written = os.write(fd, data)
                if written != len(data):  # a short write (disk full): say so, never half-silently
                    raise OSError(f"only {written} of {len(data)} bytes of a judgement were written to {p}")
                os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        if created:  # the new file's name must survive a crash too
            dfd = os.open(p.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    if moved:
        torn = Path(f"{p}{TORN_SUFFIX}")
        count = sum(1 for _ in torn.open("rb"))
        log.warning("%s ended in a torn line (%d bytes without a newline, from a write cut short): moved to %s "
                    "(%d torn line%s there) before recording the new judgement", p, moved, torn, count,
                    "" if count == 1 else "s")
    return moved


def read_judgements(path: str | os.PathLike) -> tuple[list[Judgement], ReadStats]:
    """Every valid line of the file (bad lines are skipped and counted in the returned stats; a
    last line cut by a crash in ``stats.torn``). An absent file has no judgements."""
    stats = ReadStats(path=str(path))
    if not Path(path).is_file():
        return [], stats
    out = []
    for lineno, rec in iter_json_lines(path, lenient=True, stats=stats, skip_torn=True):
        try:
            out.append(Judgement.model_validate(rec))
            stats.records += 1
        except ValueError as exc:
            stats.note_skip(f"{path}:{lineno}: {exc}")
    return out, stats


def undo_last(path: str | os.PathLike, judge: str) -> tuple[Judgement, Judgement]:
    """Undo ``judge``'s last judgement by appending a line (the file is never rewritten): the
    verdict that judge had on the same (edge, sentence) before it, or ``withdrawn`` when there
    was none, with ``source`` "undo". Returns (the undoing line, the line undone). One step
    only: a judge whose last line is an undo has nothing left to undo (ConfigError)."""
    judge = " ".join((judge or "").split())[:MAX_JUDGE]
    if not judge:
        raise ConfigError("say who you are: undo needs the judge's name")
    lines, _ = read_judgements(path)
    mine = [j for j in lines if j.judge == judge]
    if not mine or mine[-1].source == "undo":
        raise ConfigError(f"nothing to undo: {judge} has no judgement left to take back")
    last = mine[-1]
    key = (last.cause, last.effect, sentence_key(last.sentence))
    before = [j for j in mine[:-1] if (j.cause, j.effect, sentence_key(j.sentence)) == key]
    undo = last.model_copy(update={
        "verdict": before[-1].verdict if before else "withdrawn",
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "note": f"undoes the {last.verdict} of {last.time}", "source": "undo"})
    append(path, undo)
    return undo, last


def judged_pairs(judgements: Iterable[Judgement]) -> set[tuple[str, str]]:
    """The (cause, effect) pairs with a verdict in force (a withdrawn one does not count)."""
    return {(j.cause, j.effect) for j in latest(judgements)}


def for_edge(judgements: Iterable[Judgement], edge: KGEdge) -> list[Judgement]:
    pair = (edge.cause.id[0], edge.effect.id[0])
    return [j for j in judgements if (j.cause, j.effect) == pair]


def for_sentence(judgements: Iterable[Judgement], edge: KGEdge, sentence: str) -> list[Judgement]:
    """The verdicts in force on an edge as one sentence states it (each judge's last)."""
    key = sentence_key(sentence)
    return [j for j in latest(for_edge(judgements, edge)) if sentence_key(j.sentence) == key]


def queue_order(edges: Iterable[KGEdge], seed: int) -> list[KGEdge]:
    """Every edge in the seeded uniform random order (see the module docstring)."""
    ordered = sorted(edges, key=lambda e: (int(e.cause.id[0][1:]), int(e.effect.id[0][1:])))
    random.Random(seed).shuffle(ordered)
    return ordered


def queue(edges: Iterable[KGEdge], judgements: Iterable[Judgement], seed: int) -> list[KGEdge]:
    """The edges nobody has judged yet, in queue order."""
    done = judged_pairs(judgements)
    return [e for e in queue_order(edges, seed) if (e.cause.id[0], e.effect.id[0]) not in done]


__all__ = ["VERDICTS", "append", "undo_last", "edge_verdicts", "for_edge", "judgements_path", "make_judgement", "queue",
           "queue_order", "read_judgements"]
