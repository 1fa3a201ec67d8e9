"""Named fault points for the fault-injection tests: a process dies (SIGKILL, as ``kill -9``)
at a chosen point of a stage, so a test can kill at exactly the moment it means to.

``CAUSALKG_FAULT_AT=NAME`` kills the process the first time it reaches ``point(NAME)``;
``NAME#N`` the N-th time (1-based). Unset (always, outside tests), ``point`` does nothing.
Points are named ``stage.moment``: ``extract.shard-done``, ``assemble.output-written``,
``assemble.before-publish``, ``export.graph-staged``, and the steps of a generation switch
(``publish.renamed`` ... ``publish.pruning``, ``generations.PUBLISH_POINTS``) that every
generation writer passes ... (``grep -rn "faults.point"``).
``NAME=ERRNO`` (``assemble.output-written=ENOSPC``) raises that ``OSError`` there instead, naming
the path the point was given: the error tests make a full disk or a read-only folder this way.
"""

from __future__ import annotations

import errno
import os
import signal

ENV = "CAUSALKG_FAULT_AT"
_seen: dict[str, int] = {}


def point(name: str, path: str | os.PathLike | None = None) -> None:
    """Die here when ``CAUSALKG_FAULT_AT`` names this point (and this occurrence), or raise the
    ``OSError`` it names (``NAME=ENOSPC``) for ``path``."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    spec, _, code = spec.partition("=")
    want, _, nth = spec.partition("#")
    if want != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] >= int(nth or 1):
        if code:
            number = getattr(errno, code)
            raise OSError(number, os.strerror(number), None if path is None else os.fspath(path))
        os.kill(os.getpid(), signal.SIGKILL)
