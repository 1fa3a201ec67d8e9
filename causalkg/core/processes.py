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

Workers ignore SIGINT: Ctrl-C reaches the whole process group, and the parent alone decides
what an interrupt means (``causalkg.core.interrupts``). On an interrupt the parent takes the
results already finished (``WorkerPool.salvage``), then ends the workers at once
(``WorkerPool.stop``, ``stop_workers``) instead of waiting for the calls they are in.
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
    """Make this (worker) process end when ``parent_pid`` is no longer its parent, and leave
    SIGINT to the parent (which stops the workers itself)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _set_pdeathsig()
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid, interval), name="parent-watch", daemon=True).start()


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """End ``pool``'s worker processes now (SIGKILL: what they were doing is dropped) and shut
    the pool down, cancelling what was queued. For an interrupt: ``shutdown(wait=True)`` alone
    waits until every running call has finished."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.kill()
        except (OSError, ValueError):  # already gone, or already closed
            pass
    pool.shutdown(wait=True, cancel_futures=True)


class _StoppingPool(ProcessPoolExecutor):
    """A ``ProcessPoolExecutor`` whose ``with`` block, left by an interrupt (or a generator
    holding it closed before its end: nobody wants the results any more), stops the workers at
    once instead of waiting for their calls."""

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        if exc_type is not None and issubclass(exc_type, (KeyboardInterrupt, GeneratorExit)):
            stop_workers(self)
            return False
        return super().__exit__(exc_type, exc, tb)


def process_pool(max_workers: int, mp_context: Any = None) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` whose workers die with this process, ignore SIGINT, and are
    stopped at once when its ``with`` block ends in an interrupt."""
    return _StoppingPool(max_workers=max_workers, mp_context=mp_context,
                         initializer=die_with_parent, initargs=(os.getpid(),))


__all__ = ["WorkerPool", "die_with_parent", "process_pool", "stop_workers"]


# --- a pool of spawned processes, each holding one object built once (a model, a linker) ---

_OBJECT: Any = None  # this worker process's object (``_init_worker``)
_INIT_ERROR: list[BaseException] = []  # what building it raised, re-raised by the first call


def _init_worker(parent_pid: int, cls: Any, init: tuple, threads: int) -> None:
    global _OBJECT
    die_with_parent(parent_pid)
    if threads:
        try:  # the cores shared among the workers, not each worker's model using all of them
            import torch

            torch.set_num_threads(threads)
        except ImportError:  # pragma: no cover - torch is a dependency
            pass
    try:
        _OBJECT = cls(*init)
    except Exception as exc:  # noqa: BLE001 - raised by the first call, so the caller reports it as is
        _INIT_ERROR.append(exc)


def _call_worker(method: str, args: tuple) -> Any:
    if _INIT_ERROR:
        raise _INIT_ERROR[0]
    return getattr(_OBJECT, method)(*args)


class WorkerPool:
    """``workers`` spawned processes (they die with this one), each building ``cls(*init)`` once:
    the local engine's counterpart of ``causalkg.core.distributed.ActorPool``, with the same
    ``map_ordered``. Each worker's PyTorch (and ONNX Runtime, which follows it) gets
    ``threads`` threads (0: the CPU cores shared out among the workers). An exception raised
    while building the object or in a call is raised here, by the call; a worker that dies
    (killed, out of memory) raises ``SourceError`` ("a ``name`` died on ITEM", with ``hint``).

    On an interrupt the caller takes what ``map_ordered`` had finished but not yet yielded
    (``salvage``), then ``stop`` ends the workers without waiting for their calls."""

    def __init__(self, cls: type, init: tuple, workers: int, *, threads: int = 0, name: str = "worker process",
                 hint: str = "rerun with fewer workers (each holds its own models); finished work is kept and resumed"):
        import multiprocessing

        self.name, self.hint = name, hint
        self._pending: Any = []
        self.workers = max(1, int(workers))
        threads = threads or max(1, (os.cpu_count() or 1) // self.workers)
        ctx = multiprocessing.get_context("spawn")  # workers start clean: no copied threads or locks
        self.pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_init_worker,
                                        initargs=(os.getpid(), cls, init, threads))

    def call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on one worker's object (any worker: for what they all answer alike)."""
        return self._result(self.pool.submit(_call_worker, method, args), method)

    def map_ordered(self, method: str, items: Any, args: Any, *, what: Any = str) -> Any:
        """``(item, object.method(*args(item)))`` for each of ``items``, in their order, at most
        two calls in flight per worker."""
        from collections import deque

        pending: deque = deque()
        self._pending = pending
        it = iter(items)
        exhausted = False
        while True:
            while not exhausted and len(pending) < 2 * self.workers:
                item = next(it, None)
                if item is None:
                    exhausted = True
                    break
                pending.append((item, self.pool.submit(_call_worker, method, args(item))))
            if not pending:
                return
            item, fut = pending.popleft()
            yield item, self._result(fut, what(item))

    def _result(self, fut: Any, what: str) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        from causalkg.core.errors import SourceError

        try:
            return fut.result()
        except BrokenProcessPool as exc:
            raise SourceError(f"a {self.name} died on {what} ({exc})", hint=self.hint) from None

    def salvage(self) -> list[tuple[Any, Any]]:
        """``(item, result)`` of the calls of ``map_ordered`` that have finished but were not
        yet yielded (they wait behind an earlier item), in item order; the failed and the
        unfinished are left out. Taken once: what it returns is no longer pending."""
        done = []
        for item, fut in list(self._pending):
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                done.append((item, fut.result()))
        self._pending.clear()
        return done

    def stop(self) -> None:
        """End the workers now (their calls in progress are dropped) and shut the pool down."""
        self._pending.clear()
        stop_workers(self.pool)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
