"""Helpers of the fault-injection suite: the real CLI in a subprocess, killed at named points
(``CAUSALKG_FAULT_AT``, see ``causalkg.core.faults``), on small real fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO, SNAPSHOTS

KG_FIX = FIXTURES / "kg"
BASE_KG = SNAPSHOTS / "wikicausal" / "base-kg-v1.jsonl"
KG_GRAPH = "https://w3id.org/causalkg/graph/kg"


def ck(root: Path, *args: str, fault: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """``causalkg --set paths.data=ROOT/data ARGS`` in a subprocess (cwd ROOT); ``fault``: the
    point where it kills itself (returncode -9)."""
    env = {**os.environ, "CAUSALKG_PROGRESS": "never", "PYTHONPATH": str(REPO)}
    env.pop("CAUSALKG_FAULT_AT", None)
    if fault:
        env["CAUSALKG_FAULT_AT"] = fault
    cmd = [sys.executable, "-m", "causalkg.cli", "--set", f"paths.data={root / 'data'}", *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)


def assemble_args(*extra: str) -> list[str]:
    """``kg assemble`` of the fixture mentions (already linked: no linker model is loaded)."""
    return ["kg", "assemble", "--linked", str(KG_FIX / "linked.jsonl"), "--concepts", str(KG_FIX / "concepts.jsonl"),
            *extra]


def project(root: Path) -> Path:
    """A data folder with the Base KG in place."""
    (root / "data" / "wikidata").mkdir(parents=True, exist_ok=True)
    shutil.copy(BASE_KG, root / "data" / "wikidata" / "base_kg.jsonl")
    return root


def tree(folder: Path, skip: tuple[str, ...] = ("manifest.json", ".readers.lock")) -> dict[str, bytes]:
    """Every file under ``folder`` (links followed) by relative path, minus ``skip`` names."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in skip}


@pytest.fixture(scope="session")
def cli_module_ok():
    """``python -m causalkg.cli`` must run the CLI (the suite depends on it)."""
    out = subprocess.run([sys.executable, "-m", "causalkg.cli", "--version"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
