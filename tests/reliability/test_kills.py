"""kill -9 of long stages at exact points (just before an output is renamed into place), then a
rerun: the outputs are byte-identical to an uninterrupted run's, no worker process outlives
its parent, and no temporary file of the killed run is left.

The points are reached with a ``write:`` pause of ``CAUSALKG_FAULT_AT`` (the process stops there and the test
kills it); every wait is a bounded poll.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from causalkg.testing.kill import alive, kill_at, run_to_end, wait_for

REPO = Path(__file__).resolve().parents[2]
CONCEPTS = REPO / "tests" / "fixtures" / "enwiki" / "concepts.jsonl"
WIKIPEDIA = ["corpus", "build", "--only", "wikipedia", "--workers", "2"]

pytestmark = pytest.mark.slow


def project(root: Path) -> Path:
    (root / "data" / "wikidata").mkdir(parents=True)
    shutil.copy(CONCEPTS, root / "data" / "wikidata" / "concepts.jsonl")
    return root


def leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*.tmp"))


@pytest.fixture(scope="module")
def reference_corpus(tmp_path_factory) -> bytes:
    root = project(tmp_path_factory.mktemp("reference"))
    run_to_end(WIKIPEDIA, root)
    return (root / "data" / "corpus" / "corpus.jsonl").read_bytes()


@pytest.mark.parametrize("pause", ["r0-*.jsonl#2", "corpus.jsonl"])
def test_wikipedia_build_killed_leaves_no_worker_and_reruns_byte_identical(tmp_path, reference_corpus, pause):
    root = project(tmp_path)
    below = kill_at(WIKIPEDIA, root, pause, need_children=2 if pause.startswith("r0") else 0)
    if pause.startswith("r0"):
        assert len(below) >= 2  # the pool's workers (and the resource tracker) were running
    # Every process that ran below the killed build ends by itself.
    try:
        wait_for(lambda: not any(alive(p) for p in below), "end of the killed build's child processes", bound=120)
    finally:  # should the test fail, leave no orphan of ours behind
        for pid in below:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert not (root / "data" / "corpus" / "corpus.jsonl").exists()
    assert leftovers(root / "data")  # the killed write's temporary file is still there ...
    out = run_to_end(WIKIPEDIA, root)
    assert (root / "data" / "corpus" / "corpus.jsonl").read_bytes() == reference_corpus
    assert leftovers(root / "data") == []  # ... and the rerun removed it
    if pause.startswith("r0"):
        assert "resumed:" in out


# --- link build ------------------------------------------------------------------------------

LINK_CONCEPTS = REPO / "tests" / "fixtures" / "linking" / "base_kg_concepts.jsonl"


def link_project(root: Path) -> Path:
    # the first 150 concepts of the fixture: a real vocabulary, embedded in seconds
    lines = LINK_CONCEPTS.read_text(encoding="utf-8").splitlines(keepends=True)[:150]
    (root / "data" / "wikidata").mkdir(parents=True)
    (root / "data" / "wikidata" / "concepts.jsonl").write_text("".join(lines), encoding="utf-8")
    return root


LINK = ["link", "build"]
LINK_FILES = ("index.faiss", "surfaces.jsonl", "concepts.jsonl")


@pytest.fixture(scope="module")
def reference_index(tmp_path_factory) -> dict[str, bytes]:
    root = link_project(tmp_path_factory.mktemp("link-reference"))
    run_to_end(LINK, root)
    return {name: (root / "data" / "linking" / name).read_bytes() for name in LINK_FILES}


def test_link_build_killed_then_rerun_is_byte_identical(tmp_path, reference_index):
    root = link_project(tmp_path)
    # killed between its files: the new index in place, surfaces and concepts not yet
    kill_at(LINK, root, "surfaces.jsonl")
    assert (root / "data" / "linking" / "index.faiss").exists()
    folder = root / "data" / "linking"
    # killed before its manifest came back: the folder does not count as a current index
    assert not (folder / "manifest.json").exists()
    out = run_to_end(LINK, root)
    assert "built concept index" in out
    assert {name: (folder / name).read_bytes() for name in LINK_FILES} == reference_index
    assert (folder / "manifest.json").exists()
    assert leftovers(root / "data") == []
