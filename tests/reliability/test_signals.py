"""SIGINT and SIGTERM sent to the parent process alone (not its process group) in the middle of
``kg extract --workers 2`` and ``corpus build --workers 2``: the real CLI in a subprocess, held
at an exact write (a ``write:`` pause of ``CAUSALKG_FAULT_AT``) and signalled there. It exits 130 / 143 with one
line saying what is done and that a rerun resumes, no resource-tracker warning, no worker left;
the finished shards stay, and the rerun resumes from them to the uninterrupted run's bytes."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from causalkg.testing.kill import BOUND, alive, descendants, pause_env, wait_for

from tests.conftest import FIXTURES, REPO

pytestmark = pytest.mark.slow

WIKI = FIXTURES / "extract" / "wiki_docs.jsonl"
CONCEPTS = FIXTURES / "enwiki" / "concepts.jsonl"
EXTRACT = ["kg", "extract", "--input", "in.jsonl", "--out", "out.jsonl", "--extractor", "patterns",
           "--set", "extract.gate.kind=cues", "--set", "extract.shard_size=1", "--workers", "2"]
WIKIPEDIA = ["corpus", "build", "--only", "wikipedia", "--workers", "2"]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "CAUSALKG_PROGRESS": "never", "PYTHONPATH": str(REPO), **extra}
    if "CAUSALKG_FAULT_AT" not in extra:
        env.pop("CAUSALKG_FAULT_AT", None)
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "causalkg.cli", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr
    return done


def _signalled(args: list[str], cwd: Path, pause: str, sig: int) -> tuple[int, str]:
    """Run until the write ``pause`` is held, send ``sig`` to the process alone, and return its
    exit code and stderr once it and every process below it have ended."""
    marker = cwd / ".paused"
    proc = subprocess.Popen([sys.executable, "-m", "causalkg.cli", *args], cwd=cwd,
                            env=_env(**pause_env(pause, marker)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(marker.exists, f"pause at {pause}", proc=proc)
        below = descendants(proc.pid)
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=BOUND)
        wait_for(lambda: not any(alive(p) for p in below), "the end of the worker processes")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    marker.unlink()
    return proc.returncode, err


def _one_line(err: str, sig: int) -> str:
    lines = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1 and err.endswith(lines[0] + "\n"), err  # the one line, and the last
    assert lines[0].startswith(f"interrupted ({signal.Signals(sig).name}): ")
    assert "leaked" not in err and "resource_tracker" not in err and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def extract_input(tmp_path_factory) -> tuple[Path, bytes]:
    """Eight documents (the fixture's three real articles, again, under new ids) and the
    extractions of an uninterrupted run."""
    root = tmp_path_factory.mktemp("extract-reference")
    docs = [json.loads(line) for line in WIKI.read_text(encoding="utf-8").splitlines() if line.strip()]
    with open(root / "in.jsonl", "w", encoding="utf-8") as fh:
        for i in range(8):
            fh.write(json.dumps({**docs[i % len(docs)], "id": 1000 + i}, ensure_ascii=False) + "\n")
    _run(EXTRACT, root)
    return root / "in.jsonl", (root / "out.jsonl").read_bytes()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_extract_with_two_workers_stops_keeps_its_shards_and_resumes(tmp_path, extract_input, sig):
    source, reference = extract_input
    shutil.copy(source, tmp_path / "in.jsonl")
    # held while writing the third shard's record: the first two are done
    code, err = _signalled(EXTRACT, tmp_path, "00002.done.json", sig)
    assert code == 128 + sig
    line = _one_line(err, sig)
    assert re.fullmatch(r"interrupted \(SIG\w+\): \d of 8 shards of out\.jsonl done and kept in out\.shards; "
                        r"run the same command again to resume", line), line
    shards = tmp_path / "out.shards"
    done = sorted(p.name for p in shards.glob("*.done.json"))
    assert done[:2] == ["00000.done.json", "00001.done.json"] and "00002.done.json" not in done
    assert f" {len(done)} of 8 shards" in line  # the line counts what is on disk
    assert not (tmp_path / "out.jsonl").exists() and not list(tmp_path.rglob(".*.tmp"))

    again = _run(EXTRACT, tmp_path)
    assert (tmp_path / "out.jsonl").read_bytes() == reference
    manifest = json.loads((tmp_path / "out.manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["shards_resumed"] == len(done)
    assert f"resumed: {len(done)} of 8 shards were already done" in again.stdout + again.stderr


def test_corpus_build_with_two_workers_stops_keeps_its_parts_and_resumes(tmp_path_factory):
    def project(name: str) -> Path:
        root = tmp_path_factory.mktemp(name)
        (root / "data" / "wikidata").mkdir(parents=True)
        shutil.copy(CONCEPTS, root / "data" / "wikidata" / "concepts.jsonl")
        return root

    reference = project("corpus-reference")
    _run(WIKIPEDIA, reference)
    root = project("corpus-signalled")
    code, err = _signalled(WIKIPEDIA, root, "r0-*.jsonl#2", signal.SIGINT)
    assert code == 130
    line = _one_line(err, signal.SIGINT)
    parts = root / "data" / "corpus" / ".wikipedia-parts"
    done = list(parts.glob("r0-*.done.json"))
    assert done and line == (f"interrupted (SIGINT): {len(done)} part{'s' * (len(done) > 1)} of the dump read done "
                             f"and kept in {parts}; run the same command again to resume")
    assert not (root / "data" / "corpus" / "corpus.jsonl").exists()

    again = _run(WIKIPEDIA, root)
    assert f"resumed: {len(done)} of " in again.stdout + again.stderr
    assert (root / "data" / "corpus" / "corpus.jsonl").read_bytes() == \
        (reference / "data" / "corpus" / "corpus.jsonl").read_bytes()


def test_assemble_linking_with_two_workers_stops_keeps_its_shards_and_resumes(tmp_path):
    from causalkg.core.config import load_config
    from causalkg.linking.index import build_index

    kg_fix = FIXTURES / "kg"
    (tmp_path / "data").mkdir()
    # the linking index of the fixture's 16 concepts (the real offline MiniLM), which both runs use
    build_index(load_config(search_cwd=False, overrides={"paths.data": str(tmp_path / "data")}),
                concepts_path=kg_fix / "concepts.jsonl")
    # 14 extractions in shards of 3: five shards, linked by a pool of two processes
    assemble = ["--set", f"paths.data={tmp_path / 'data'}", "--set", "run.workers=2", "kg", "assemble",
                "--extractions", str(kg_fix / "extractions.jsonl"), "--corpus", str(kg_fix / "corpus.jsonl"),
                "--concepts", str(kg_fix / "concepts.jsonl"), "--shard-size", "3"]
    _run([*assemble, "--out", str(tmp_path / "reference")], tmp_path)
    out = tmp_path / "kg"
    code, err = _signalled([*assemble, "--out", str(out)], tmp_path, "shard-00001.done.json", signal.SIGTERM)
    assert code == 143
    line = _one_line(err, signal.SIGTERM)
    linked = out / "linked"
    done = sorted(p.name for p in linked.glob("shard-*.done.json"))
    assert done[0] == "shard-00000.done.json" and "shard-00001.done.json" not in done
    assert line == (f"interrupted (SIGTERM): {len(done)} linking shard{'s' * (len(done) > 1)} done and kept in "
                    f"{linked}; "
                    f"run the same command again to resume")
    assert not (out / "current").exists()  # nothing published

    _run([*assemble, "--out", str(out)], tmp_path)
    manifest = json.loads((out / "current" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["linking"]["shards_resumed"] == len(done) and manifest["linking"]["where"] == "pool"

    def kg_files(folder: Path) -> dict[str, bytes]:
        gen = (folder / "current").resolve()
        return {str(p.relative_to(gen)): p.read_bytes() for p in sorted(gen.rglob("*"))
                if p.is_file() and p.name not in ("manifest.json", ".readers.lock")}

    assert kg_files(out) == kg_files(tmp_path / "reference")
