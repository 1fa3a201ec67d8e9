"""The operating system's errors reach the user as one line: a full disk (a small tmpfs), a
read-only folder (a read-only bind mount), a refused path and too many open files. The line names
the path and what to do, the exit status is 1, the published KG is the previous one, and no
unfinished generation is left behind. Tracebacks only with --debug.

The mounts need root (the test machine has it); where ``mount`` is refused those tests skip, and
the same errors are raised at a named point instead (``CAUSALKG_FAULT_AT=NAME=ERRNO``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.reliability.conftest import assemble_args, ck, project, tree


def _kg(root: Path) -> dict[str, bytes]:
    return tree(root / "data" / "kg" / "current")


def _unfinished(root: Path) -> list[str]:
    gens = root / "data" / "kg" / "generations"
    return [p.name for p in gens.iterdir() if p.name.startswith(".building-")] if gens.is_dir() else []


def _one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


@contextlib.contextmanager
def _mounted(*args: str, target: Path):
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount refused here: {done.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=True)


@pytest.fixture
def built(tmp_path):
    """A project whose KG was assembled once (kg.lift = none): the previous, published KG."""
    root = project(tmp_path / "p")
    done = ck(root, *assemble_args("--lift", "none"))
    assert done.returncode == 0, done.stderr
    return root


@pytest.mark.parametrize("code, words", [
    ("ENOSPC", "No space left on device: {path}; the previous outputs are unchanged (free space on that disk"),
    ("EACCES", "Permission denied: {path}; the previous outputs are unchanged (make that path writable"),
    ("EROFS", "Read-only file system: {path}; the previous outputs are unchanged (that file system is read-only"),
    ("EMFILE", "Too many open files: {path}; the previous outputs are unchanged (too many open files: raise"),
])
def test_each_errno_while_writing_the_kg_is_one_line_and_publishes_nothing(built, code, words):
    before = _kg(built)
    done = ck(built, *assemble_args(), fault=f"assemble.output-written#2={code}")
    assert done.returncode == 1
    line = _one_line(done)
    gen = line.split(": ", 2)[2].split(";", 1)[0]
    assert "/data/kg/generations/.building-" in gen
    assert line.startswith("error: " + words.format(path=gen)), line
    assert _kg(built) == before
    assert _unfinished(built) == []
    debug = ck(built, "--debug", *assemble_args(), fault=f"assemble.output-written#2={code}")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_a_full_disk_is_one_line_and_the_previous_kg_stays(tmp_path):
    with _mounted("-t", "tmpfs", "-o", "size=8m", "tmpfs", target=tmp_path / "disk") as disk:
        root = project(disk)
        assert ck(root, *assemble_args("--lift", "none")).returncode == 0
        before = _kg(root)
        # Fill the disk, leaving a few blocks: the next KG cannot be written.
        st = os.statvfs(disk)
        with open(disk / "filler", "wb") as fh:
            fh.truncate(0)
            os.posix_fallocate(fh.fileno(), 0, max(0, st.f_bavail * st.f_frsize - 64 * 1024))
        done = ck(root, *assemble_args())
        assert done.returncode == 1, done.stderr
        line = _one_line(done)
        assert f"No space left on device (writing under {root / 'data'})" in line and "free space on that disk" in line, line
        assert _kg(root) == before
        assert _unfinished(root) == []


def test_a_read_only_folder_is_one_line(built, tmp_path):
    kg = built / "data" / "kg"
    before = _kg(built)
    with _mounted("--bind", str(kg), target=kg):
        subprocess.run(["mount", "-o", "remount,bind,ro", str(kg)], check=True)
        done = ck(built, *assemble_args())
    assert done.returncode == 1, done.stderr
    line = _one_line(done)
    assert line.startswith(f"error: Read-only file system: {kg}"), line
    assert "choose a writable --out or paths.data" in line
    assert _kg(built) == before


def test_too_many_open_files_is_one_line(built):
    # A real EMFILE: a low limit, and every handle under it taken before the command starts.
    env = {**os.environ, "CAUSALKG_PROGRESS": "never", "PYTHONPATH": str(REPO)}
    env.pop("CAUSALKG_FAULT_AT", None)
    code = ("import os, resource, sys, causalkg.cli as c\n"
            "parser = c.build_parser()\n"  # the modules loaded, the parser built; then every handle is taken
            "c.build_parser = lambda: parser\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
            "held = []\n"
            "try:\n"
            "    while True: held.append(os.open(os.devnull, os.O_RDONLY))\n"
            "except OSError:\n"
            "    pass\n"
            "sys.exit(c.main(sys.argv[1:]))\n")
    cmd = [sys.executable, "-c", code, "--set", f"paths.data={built / 'data'}", *assemble_args("--force")]
    before = _kg(built)
    done = subprocess.run(cmd, cwd=built, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    line = _one_line(done)
    assert line.startswith("error: Too many open files: "), line
    assert "raise the limit (ulimit -n) or use fewer workers" in line, line
    assert _kg(built) == before
