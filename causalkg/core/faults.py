"""The one fault-injection hook of the reliability tests: a process dies (SIGKILL, as
``kill -9``), raises an ``OSError``, or stops and waits, at exactly the point a test names.

``CAUSALKG_FAULT_AT=POINT[#N][=ACTION]`` acts the N-th time (1-based, default the first) the
process reaches ``point(POINT)``. Unset (always, outside tests), ``point`` does nothing.

Points are named ``stage.moment``: ``extract.shard-done``, ``assemble.output-written``,
``assemble.before-publish``, ``export.graph-staged``, the steps of a generation switch
(``publish.renamed`` ... ``publish.pruning``, ``generations.PUBLISH_POINTS``), and
``write:NAME`` just before every atomic write renames its finished temporary file onto NAME
(``grep -rn "faults.point"``). POINT may be a glob (``write:*.jsonl``).

ACTION is one of:

- nothing: SIGKILL this process there;
- an errno name (``assemble.output-written=ENOSPC``): raise that ``OSError`` for the path the
  point was given, as a full disk or a read-only folder would;
- ``pause``: create the file ``CAUSALKG_FAULT_MARKER`` names (holding ``PID PATH``) and wait
  there for ever, so a test can send a signal or ``kill -9`` at that exact moment.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import signal
import time

ENV = "CAUSALKG_FAULT_AT"
MARKER = "CAUSALKG_FAULT_MARKER"
_seen: dict[str, int] = {}


def spec(point_name: str, *, nth: int = 1, action: str = "") -> str:
    """The ``CAUSALKG_FAULT_AT`` value that acts the ``nth`` time ``point_name`` is reached."""
    return point_name + (f"#{nth}" if nth != 1 else "") + (f"={action}" if action else "")


def point(name: str, path: str | os.PathLike | None = None) -> None:
    """Act here when ``CAUSALKG_FAULT_AT`` names this point (and this occurrence): kill the
    process, raise the ``OSError`` it names for ``path``, or pause."""
    value = os.environ.get(ENV)
    if not value:
        return
    wanted, _, action = value.partition("=")
    pattern, _, nth = wanted.partition("#")
    if not fnmatch.fnmatchcase(name, pattern):
        return
    _seen[wanted] = _seen.get(wanted, 0) + 1
    if _seen[wanted] < int(nth or 1):
        return
    if action == "pause":
        marker = os.environ.get(MARKER)
        if not marker:
            raise RuntimeError(f"{ENV}={value} needs {MARKER} (the file to create when the pause is reached)")
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {'' if path is None else os.fspath(path)}\n")
        while True:
            time.sleep(60)
    if action:
        number = getattr(errno, action)
        raise OSError(number, os.strerror(number), None if path is None else os.fspath(path))
    os.kill(os.getpid(), signal.SIGKILL)
