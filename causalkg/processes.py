"""Worker processes that die with their parent.

A ``ProcessPoolExecutor`` worker waits on a queue whose write end it holds itself, so when the
parent is killed (kill -9, the OOM killer) nothing wakes it: workers and the resource tracker
lived on for ever. ``process_pool`` gives every worker ``die_with_parent`` as its initializer:

- on Linux the kernel sends the worker SIGKILL when its parent dies (``prctl`` with
  ``PR_SET_PDEATHSIG``, through ctypes);
- everywhere, a daemon thread checks every second that the parent is still the one that
  started the worker and ends the worker when it is not (the fallback elsewhere, and the
  cover for the moment before prctl took effect).

The resource tracker then sees its last user gone and exits by itself.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int, interval: float) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(interval)


def die_with_parent(parent_pid: int, interval: float = 1.0) -> None:
    """Make this (worker) process end when ``parent_pid`` is no longer its parent."""
    _set_pdeathsig()
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid, interval), name="parent-watch", daemon=True).start()


def process_pool(max_workers: int, mp_context: Any = None) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` whose workers die with this process."""
    return ProcessPoolExecutor(max_workers=max_workers, mp_context=mp_context,
                               initializer=die_with_parent, initargs=(os.getpid(),))


__all__ = ["die_with_parent", "process_pool"]
