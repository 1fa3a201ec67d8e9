"""causalkg.core.interrupts and the pools' side of it: SIGINT or SIGTERM to the parent alone ends
a worker pool at once (its workers are busy for ever here), with 128 + the signal as exit code
and no resource-tracker warning; the results finished behind a running call are salvaged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from causalkg.core.interrupts import Interrupted, stop_on_signals
from causalkg.core.processes import WorkerPool
from causalkg.testing.kill import BOUND, alive, descendants, wait_for

from tests.causalkg.pool_blocker import Blocker
from tests.conftest import REPO


def test_the_line_and_the_exit_code_name_the_signal():
    stop = Interrupted.of(Interrupted(signal.SIGTERM), "3 of 8 shards done")
    assert stop.exit_code == 143 and stop.line() == "interrupted (SIGTERM): 3 of 8 shards done"
    plain = Interrupted.of(KeyboardInterrupt(), "")  # Ctrl-C before any handler of ours
    assert plain.exit_code == 130 and plain.line() == "interrupted (SIGINT)"
    assert isinstance(plain, KeyboardInterrupt)  # every "except KeyboardInterrupt" still sees it


def test_the_handlers_raise_interrupted_and_are_put_back():
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals():
        with pytest.raises(Interrupted) as err:
            signal.raise_signal(signal.SIGTERM)
    assert err.value.signum == signal.SIGTERM and err.value.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_parent_alone_stops_busy_workers_at_once(tmp_path, sig):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.causalkg.pool_blocker", str(tmp_path)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # both workers are inside a call that never returns
        wait_for(lambda: (tmp_path / "started-0").exists() and (tmp_path / "started-1").exists(),
                 "both workers busy", proc=proc)
        below = descendants(proc.pid)
        os.kill(proc.pid, sig)  # the parent only, not its process group
        # before, the parent waited for the calls to end (never, here)
        out, err = proc.communicate(timeout=BOUND)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert err == f"interrupted ({signal.Signals(sig).name}): the pool was stopped\n"  # no tracker warning
    assert out == ""
    wait_for(lambda: not any(alive(p) for p in below), "the workers' end")
    assert not (tmp_path / "release").exists()  # nothing let the calls finish: they were stopped


def test_salvage_takes_the_results_finished_behind_a_running_call_then_stop_ends_it(tmp_path):
    pool = WorkerPool(Blocker, (str(tmp_path), (0,)), 2, threads=1)
    seen: list = []

    def consume() -> None:
        try:
            seen.extend(pool.map_ordered("run", iter([0, 1, 2]), lambda i: (i,)))
        except Exception as exc:  # noqa: BLE001 - the stopped pool's error, expected here
            seen.append(type(exc).__name__)

    reader = threading.Thread(target=consume, daemon=True)
    try:
        reader.start()
        wait_for(lambda: (tmp_path / "started-0").exists(), "item 0 running")
        # items 1 and 2 are finished, but wait behind item 0 (taken out, awaited), which never ends
        wait_for(lambda: len(pool._pending) == 2 and all(f.done() for _, f in list(pool._pending)),
                 "items 1 and 2 finished", bound=120)
        assert pool.salvage() == [(1, 1), (2, 2)]
        pool.stop()
        reader.join(BOUND)
        assert not reader.is_alive() and seen == ["SourceError"]  # item 0 died with its worker
    finally:
        (tmp_path / "release").touch()
        pool.close()
