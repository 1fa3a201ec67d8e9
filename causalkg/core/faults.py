"""Named fault points for the fault-injection tests: a process dies (SIGKILL, as ``kill -9``)
at a chosen point of a stage, so a test can kill at exactly the moment it means to.

``CAUSALKG_FAULT_AT=NAME`` kills the process the first time it reaches ``point(NAME)``;
``NAME#N`` the N-th time (1-based). Unset (always, outside tests), ``point`` does nothing.
Points are named ``stage.moment``: ``extract.shard-done``, ``assemble.output-written``,
``assemble.before-publish``, ``export.graph-staged``, and the steps of a generation switch
(``publish.renamed`` ... ``publish.pruning``, ``generations.PUBLISH_POINTS``) that every
generation writer passes ... (``grep -rn "faults.point"``).
"""

from __future__ import annotations

import os
import signal

ENV = "CAUSALKG_FAULT_AT"
_seen: dict[str, int] = {}


def point(name: str) -> None:
    """Die here when ``CAUSALKG_FAULT_AT`` names this point (and this occurrence)."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    want, _, nth = spec.partition("#")
    if want != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
