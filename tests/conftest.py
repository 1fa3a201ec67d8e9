"""Shared test fixtures. Tests run offline: no hub lookups, no network beyond 127.0.0.1."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["CAUSALKG_PROGRESS"] = "never"
# The pair verifier is on by default and needs the trained model that `make kg` installs; the
# suite runs on a fresh clone without it, so it assembles without the verifier unless a test
# turns it on (tests/kg/test_verifier.py trains a small one and does). Also for subprocesses.
os.environ.setdefault("CAUSALKG_SET", "kg.verifier.enabled=false")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
SNAPSHOTS = REPO / "snapshots"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run ``causalkg ARGS...`` in-process: ``cli("corpus", "build", ...)`` -> CliResult.

    The working directory is the test's tmp folder unless ``cwd=`` is given, so outputs under
    ``data/`` never land in the repository.
    """
    from causalkg.cli import run

    def invoke(*args: str, cwd: str | os.PathLike | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = run([str(a) for a in args])
        captured = capsys.readouterr()
        if "--debug" not in args:  # no traceback reaches a user without --debug, in any test
            assert "Traceback (most recent call last)" not in captured.err, captured.err[-3000:]
            assert "internal error" not in captured.err, captured.err[-3000:]
        return CliResult(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Work in a fresh folder (so ``data/`` outputs go there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def openai_server():
    """A started OpenAI-compatible server on 127.0.0.1; set ``.responder`` to script answers."""
    from causalkg.testing.openai_server import OpenAIServer

    with OpenAIServer() as server:
        yield server


def _repo_models() -> dict[str, int]:
    """The files under the repository's models/ folder with their sizes (the ONNX export caches,
    which extraction keeps beside a model it reads, left out)."""
    root = REPO / "models"
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*")
            if p.is_file() and "onnx" not in p.relative_to(root).parts}


@pytest.fixture(scope="session", autouse=True)
def no_test_writes_the_repository_models():
    """No test may install or train into the repository's own models/: on a fresh clone (CI) the
    folder does not exist, so such a test behaves differently there than on a machine that ran
    `make kg` (a test installing the shipped models once did just that)."""
    before = _repo_models()
    yield
    after = _repo_models()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"the test session wrote into {REPO / 'models'}: {changed[:5]}"
