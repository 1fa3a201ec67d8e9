"""Progress bars: tqdm on a terminal, silence in pipes and CI.

``run.progress`` in the config (or ``CAUSALKG_PROGRESS``) is ``auto`` (bars only when stderr is
a terminal and ``CI`` is unset), ``always`` or ``never``.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, TypeVar

from tqdm import tqdm  # the plain bar: tqdm.auto wants ipywidgets in notebooks

T = TypeVar("T")


def progress_enabled(mode: str | None = None) -> bool:
    mode = (os.environ.get("CAUSALKG_PROGRESS") or mode or "auto").lower()
    if mode == "always":
        return True
    if mode == "never":
        return False
    return sys.stderr.isatty() and not os.environ.get("CI")


def progress(iterable: Iterable[T] | None = None, *, mode: str | None = None, **kwargs: Any) -> tqdm:
    """A tqdm bar (disabled when progress is off). Pass ``total``, ``desc``, ``unit`` as to tqdm."""
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("leave", False)
    return tqdm(iterable, disable=not progress_enabled(mode), file=sys.stderr, **kwargs)
