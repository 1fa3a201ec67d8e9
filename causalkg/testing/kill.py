"""Kill tests: run ``causalkg`` as a real process, stop it at an exact point
(a ``write:GLOB`` pause of ``causalkg.core.faults``), kill -9 it, and look at what
is left in /proc. Every wait is a bounded poll on an observable state, never a fixed sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from causalkg.core import faults

BOUND = 300.0  # seconds any wait may take before the test fails (far above what it needs)


def wait_for(condition: Callable[[], bool], what: str, bound: float = BOUND, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + bound
    while not condition():
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"the process ended (exit {proc.returncode}) before {what}:\n{out}")
        if time.monotonic() > end:
            raise AssertionError(f"no {what} within {bound:g}s")
        time.sleep(0.02)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    rest = raw[raw.rindex(")") + 2:].split()
    return rest[0], int(rest[1])


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None:
                children.setdefault(st[1], []).append(int(entry))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out and alive(c):
                out.add(c)
                todo.append(c)
    return out


def pause_env(pause: str, marker: Path) -> dict[str, str]:
    """The environment that holds the N-th atomic write of a file named like ``pause``
    (``GLOB`` or ``GLOB#N``) just before its rename, creating ``marker`` when it gets there."""
    pattern, _, nth = pause.partition("#")
    return {faults.ENV: faults.spec(f"write:{pattern}", nth=int(nth or 1), action="pause"), faults.MARKER: str(marker)}


def causalkg(args: list[str], cwd: Path, *, pause: str | None = None, marker: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "CAUSALKG_PROGRESS": "never", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop(faults.ENV, None)
    if pause is not None:
        assert marker is not None
        env.update(pause_env(pause, marker))
    return subprocess.Popen([sys.executable, "-m", "causalkg.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def run_to_end(args: list[str], cwd: Path) -> str:
    proc = causalkg(args, cwd)
    out, _ = proc.communicate(timeout=BOUND)
    assert proc.returncode == 0, out
    return out


def kill_at(args: list[str], cwd: Path, pause: str, *, need_children: int = 0) -> set[int]:
    """Run until the write named by ``pause`` is about to be renamed (and, with
    ``need_children``, that many processes run below it), then kill -9 the process. Returns
    the processes that were below it at that moment."""
    marker = cwd / f".paused-{os.getpid()}"
    marker.unlink(missing_ok=True)
    proc = causalkg(args, cwd, pause=pause, marker=marker)
    try:
        wait_for(marker.exists, f"pause at {pause}", proc=proc)
        if need_children:
            wait_for(lambda: len(descendants(proc.pid)) >= need_children, f"{need_children} child processes", proc=proc)
        below = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=BOUND)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        marker.unlink(missing_ok=True)
    return below
