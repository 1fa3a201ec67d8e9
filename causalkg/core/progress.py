"""Progress: a tqdm bar on a terminal, a plain line now and then elsewhere, nothing with --quiet.

``CAUSALKG_PROGRESS``, else the ``mode`` a caller passes, else ``run.progress`` of the command
(``--quiet`` is ``never`` over all of them) is one of

- ``auto``: a bar when stderr is a terminal (and ``CI`` is unset), else plain lines;
- ``always`` (or ``bars``): a bar, wherever stderr goes;
- ``lines``: plain lines;
- ``never``: nothing (what ``--quiet`` sets for its command).

A plain line is what the bar would say, without the bar: ``DESC: N/TOTAL UNIT (P%) [elapsed<ETA,
RATE]``. One is written each ``CAUSALKG_PROGRESS_INTERVAL`` seconds (default 30) while work goes
on, and a last one when it ends if any was written, so a log file or CI output shows a long
stage moving and a short one adds nothing. A bar only observes: what the work computes does
not depend on it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterable, Iterator, TypeVar

from tqdm import tqdm  # the plain bar: tqdm.auto wants ipywidgets in notebooks

T = TypeVar("T")

ENV = "CAUSALKG_PROGRESS"
DEFAULT_ENV = "CAUSALKG_PROGRESS_DEFAULT"  # run.progress of the running command (progress_for_command)
INTERVAL_ENV = "CAUSALKG_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 30.0


def progress_style(mode: str | None = None) -> str:
    """What progress looks like here: ``"bar"``, ``"lines"`` or ``"off"`` (see the module)."""
    mode = (os.environ.get(ENV) or mode or os.environ.get(DEFAULT_ENV) or "auto").lower()
    if mode in ("always", "bars", "bar"):
        return "bar"
    if mode == "lines":
        return "lines"
    if mode == "never":
        return "off"
    return "bar" if sys.stderr.isatty() and not os.environ.get("CI") else "lines"


def progress_enabled(mode: str | None = None) -> bool:
    """Whether bars are drawn (a terminal, or ``always``); plain lines do not count."""
    return progress_style(mode) == "bar"


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL)))
    except ValueError:
        return DEFAULT_INTERVAL


class _Lines(tqdm):
    """A tqdm that writes its state as a plain line (no bar, no carriage return) each
    ``mininterval`` seconds, and a closing line when it wrote any."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._lines_written = 0
        self._last_n: Any = None
        super().__init__(*args, **kwargs)

    def _line(self) -> str:
        d = dict(self.format_dict)
        d.update(ncols=None, bar_format=("{desc}: {n_fmt}/{total_fmt} {unit} ({percentage:.0f}%) "
                                         "[{elapsed}<{remaining}, {rate_fmt}{postfix}]") if d.get("total")
                 else "{desc}: {n_fmt} {unit} [{elapsed}, {rate_fmt}{postfix}]")
        return self.format_meter(**d)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        if msg == "":  # tqdm clearing its line on close: a line mode has nothing to clear
            return False
        self.fp.write(self._line() + "\n")
        self.fp.flush()
        self._lines_written += 1
        self._last_n = self.n
        return True

    def close(self) -> None:
        if self.disable:
            return
        if self._lines_written and self.n != self._last_n:
            self.display()
        self.leave = False  # tqdm's own closing redraw would repeat the line
        super().close()


def progress(iterable: Iterable[T] | None = None, *, mode: str | None = None, **kwargs: Any) -> tqdm:
    """Progress over ``iterable`` or updated by hand (``update``, ``close``, as a context
    manager), on stderr, in the style ``progress_style(mode)`` says. Pass ``total``, ``desc``,
    ``unit`` as to tqdm."""
    style = progress_style(mode)
    if style == "lines":
        interval = _interval()
        kwargs.pop("dynamic_ncols", None)
        kwargs.update(mininterval=interval, delay=interval, miniters=1, leave=False)
        return _Lines(iterable, file=sys.stderr, **kwargs)
    kwargs.setdefault("dynamic_ncols", True)
    kwargs.setdefault("leave", False)
    return tqdm(iterable, disable=style != "bar", file=sys.stderr, **kwargs)


@contextlib.contextmanager
def progress_for_command(quiet: bool = False, configured: str | None = None) -> Iterator[None]:
    """Within one command: no progress at all with ``quiet`` (over ``CAUSALKG_PROGRESS`` and any
    caller's ``mode``); else ``configured`` (``run.progress``) for the bars that name no mode.
    Kept in the environment, so the command's worker processes see it too; put back afterwards."""
    saved = {k: os.environ.get(k) for k in (ENV, DEFAULT_ENV)}
    if quiet:
        os.environ[ENV] = "never"
    if configured:
        os.environ[DEFAULT_ENV] = str(configured)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


__all__ = ["progress", "progress_enabled", "progress_style", "progress_for_command"]
