"""The Ray engine (run.engine = "ray", causalkg.core.distributed) on a local cluster confined to
loopback: same bytes as the local engine for dump reading (corpus build) and extraction, a
failed actor call retried and reported, a driver that stopped half-way resumed from the
finished shards, and kg assemble's linking on an actor pool giving the local engine's bytes.

Ray listens on every interface even when told 127.0.0.1, so the cluster runs in a network
namespace that has only loopback: the outer test runs the tests of ``ray_inner.py`` in a
child process under ``unshare --net`` (tests run as root), with ``lo`` brought up, node IP
127.0.0.1, no dashboard, usage stats off, Ray's temp folder inside the test's tmp folder and 2
CPUs. It is skipped, saying why, only when no such namespace can be made."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[2]
INNER = Path(__file__).with_name("ray_inner.py")  # not collected by itself: run here, in the namespace


HANG_GUARD = 3600  # seconds; see test_ray_engine_confined


def _kill_leftovers(tmp: Path) -> None:
    """Kill any process still running from the test's folder: a driver started in a session of
    its own (the killed-driver test) and its local cluster survive a killed child."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(tmp) + os.sep in cmdline and int(proc.name) != os.getpid():
            try:
                os.kill(int(proc.name), signal.SIGKILL)
            except OSError:
                pass


def _namespace_problem() -> str | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip (util-linux, iproute2) is not installed"
    probe = subprocess.run(["unshare", "--net", "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot make a network namespace (unshare --net needs root or user namespaces): {probe.stderr.strip()}"
    return None


@pytest.mark.slow
def test_ray_engine_confined(tmp_path_factory):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'causalkg[ray]')")
    problem = _namespace_problem()
    if problem:
        pytest.skip(f"Ray test not run: {problem}")
    tmp = tmp_path_factory.mktemp("r")  # short: Ray's socket paths must stay under 107 bytes
    env = {**os.environ, "CAUSALKG_RAY_CHILD": "1", "CAUSALKG_RAY_TMP": str(tmp), "RAY_USAGE_STATS_ENABLED": "0"}
    cmd = (f"ip link set lo up && exec {sys.executable} -m pytest -q -x -p no:randomly -p no:cacheprovider "
           f"{INNER}")
    # Its own session: a hung child is killed with everything it started (Ray's daemons, the
    # killed-driver test's driver), never left running. HANG_GUARD is not a speed test: the child
    # takes about 100 s on 2 idle cores and up to about 21 minutes with three suites beside it.
    child = subprocess.Popen(["unshare", "--net", "sh", "-c", cmd], env=env, cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = child.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"the Ray tests did not end in {HANG_GUARD} s (killed):\n{out[-4000:]}{err[-2000:]}")
    finally:
        _kill_leftovers(tmp)
    proc = subprocess.CompletedProcess(child.args, child.returncode, out, err)
    report = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, report
    assert "6 passed" in proc.stdout and "skipped" not in proc.stdout.splitlines()[-1], report
    # the child saw only loopback
    assert json.loads((tmp / "interfaces.json").read_text()) == ["lo"]
