"""Interrupts: SIGINT and SIGTERM end a command the same way, with one line and a known exit code.

``stop_on_signals`` (the CLI wraps every command in it) turns both signals, in the main thread,
into ``Interrupted``, a ``KeyboardInterrupt`` that remembers which signal came. SIGTERM's default
action ends a process on the spot, with no ``finally`` run: worker pools were left for the
resource tracker to clean up (its "leaked semaphore" warning) and nothing said what was kept.
As an exception it unwinds like Ctrl-C: the pools stop their workers, the shards already
finished stay on disk, and the stage adds what it kept (``Interrupted.of(exc, detail)``), which
the CLI prints as its one line before exiting 128 + the signal number (130, 143).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class Interrupted(KeyboardInterrupt):
    """A command stopped by a signal. ``signum``: SIGINT or SIGTERM; ``detail``: what the
    stage finished and kept, and how to go on (empty when the stage had nothing to say)."""

    def __init__(self, signum: int = signal.SIGINT, detail: str = "") -> None:
        super().__init__(detail)
        self.signum = int(signum)
        self.detail = detail

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by a signal: 128 + its number."""
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:  # pragma: no cover - only the two signals are handled
            return f"signal {self.signum}"

    @classmethod
    def of(cls, exc: BaseException, detail: str) -> "Interrupted":
        """The interrupt ``exc`` (a plain KeyboardInterrupt is SIGINT) with the stage's ``detail``."""
        return cls(getattr(exc, "signum", signal.SIGINT), detail)

    def line(self) -> str:
        """The one line the CLI prints."""
        head = f"interrupted ({self.signal_name})"
        return f"{head}: {self.detail}" if self.detail else head


def _raise(signum: int, frame: object) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise ``Interrupted`` in the main thread; the
    previous handlers come back after it. Outside the main thread (a server's request thread,
    a test runner's worker) nothing changes, since Python lets only the main thread set them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


__all__ = ["Interrupted", "stop_on_signals"]
