"""Progress where a person waits: ``kg extract`` draws a bar on a terminal (a real
pseudo-terminal), writes plain lines away from one, nothing with ``--quiet``; gate and QA
training report their steps, and a run with progress shown trains the same bits as one without."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import numpy as np
import pytest

from causalkg.core.config import load_config
from causalkg.testing.tiny_models import tiny_qa_model

from tests.conftest import FIXTURES, REPO

WIKI = FIXTURES / "extract" / "wiki_docs.jsonl"
EXTRACT = ["kg", "extract", "--input", str(WIKI), "--extractor", "patterns", "--set", "extract.gate.kind=cues",
           "--set", "extract.shard_size=1"]


@pytest.fixture
def shown(monkeypatch):
    """Progress as a user without our test settings has it: no CAUSALKG_PROGRESS, no CI; a line
    at every update away from a terminal."""
    monkeypatch.delenv("CAUSALKG_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("CAUSALKG_PROGRESS_INTERVAL", "0")
    return monkeypatch


def test_extract_writes_plain_progress_lines_away_from_a_terminal_and_none_with_quiet(cli, in_tmp, shown):
    r = cli(*EXTRACT, "--out", "a.jsonl")
    assert r.code == 0, r.err
    lines = [line for line in r.err.splitlines() if line.startswith("extracting (patterns): ")]
    assert lines and lines[-1].startswith("extracting (patterns): 3/3 doc (100%) [") and "doc/s]" in lines[-1]
    assert "\r" not in r.err
    quiet = cli(*EXTRACT, "--out", "b.jsonl", "--quiet")
    assert quiet.code == 0 and "extracting" not in quiet.err
    assert (in_tmp / "a.jsonl").read_bytes() == (in_tmp / "b.jsonl").read_bytes()


def _on_a_terminal(args: list[str], cwd) -> str:
    """Run the CLI with stderr on a pseudo-terminal; everything it wrote there."""
    env = {k: v for k, v in os.environ.items() if k not in ("CAUSALKG_PROGRESS", "CI", "CAUSALKG_PROGRESS_INTERVAL")}
    env["PYTHONPATH"] = str(REPO)
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal 120 wide
    proc = subprocess.Popen([sys.executable, "-m", "causalkg.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=child, stdin=subprocess.DEVNULL)
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=300) == 0, out.decode("utf-8", "replace")
    return out.decode("utf-8", "replace")


@pytest.mark.slow
def test_extract_draws_a_bar_on_a_terminal_and_nothing_with_quiet(tmp_path):
    drawn = _on_a_terminal([*EXTRACT, "--out", "a.jsonl"], tmp_path)
    assert re.search(r"extracting \(patterns\):\s+\d+%\|.*\| \d/3 \[", drawn), drawn  # a tqdm bar: percent|bar| n/total
    assert "\r" in drawn  # redrawn in place
    quiet = _on_a_terminal([*EXTRACT, "--out", "b.jsonl", "--quiet"], tmp_path)
    assert "extracting" not in quiet


def test_gate_fine_tuning_reports_its_steps_and_trains_the_same_bits(tmp_path, shown, capsys):
    from causalkg.kg.gate import fine_tune_encoder

    base = tiny_qa_model(tmp_path / "tiny", seed=1)  # a tiny BERT: the encoder to fine-tune
    texts = ["The flood caused the famine.", "The bridge is long.", "Rain led to landslides.", "A red car."] * 2
    y = np.asarray([1, 0, 1, 0] * 2, dtype=np.float32)

    def tune(name: str):
        return fine_tune_encoder(str(base), texts, y, tmp_path / name, steps=3, batch_size=4, learning_rate=1e-3,
                                 warmup=0.0, seed=7, dtype="float32", device="cpu")

    shown.setenv("CAUSALKG_PROGRESS", "never")
    w0, b0 = tune("quiet")
    assert "fine-tuning" not in capsys.readouterr().err
    shown.setenv("CAUSALKG_PROGRESS", "lines")
    w1, b1 = tune("shown")
    err = capsys.readouterr().err
    assert "fine-tuning the gate's encoder: 3/3 step (100%) [" in err and "step/s]" in err
    assert np.array_equal(w0, w1) and b0 == b1  # progress only observes
    quiet, shown_model = (tmp_path / name / "model.safetensors" for name in ("quiet", "shown"))
    assert quiet.read_bytes() == shown_model.read_bytes()


def test_qa_training_reports_its_steps_and_trains_the_same_bits(tmp_path, shown, capsys, caplog):
    import logging

    from causalkg.kg.train_qa import train_qa

    caplog.set_level(logging.INFO, logger="causalkg.kg.train_qa")

    base = tiny_qa_model(tmp_path / "tiny", seed=3)
    data = tmp_path / "data"
    data.mkdir()
    gold = (FIXTURES / "extract" / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (data / "train.jsonl").write_text("".join(gold[:18]), encoding="utf-8")
    (data / "val.jsonl").write_text("".join(gold[18:]), encoding="utf-8")
    cfg = load_config(search_cwd=False, overrides={
        "extract.qa.train.data": str(data), "extract.qa.train.steps": 4, "extract.qa.train.batch_size": 8,
        "extract.qa.train.eval_every": 2, "extract.qa.train.selection_questions": 10, "extract.qa.train.learning_rate": 0.001,
        "extract.device": "cpu", "extract.qa.batch_size": 16})

    shown.setenv("CAUSALKG_PROGRESS", "never")
    train_qa(cfg, output=tmp_path / "quiet", base_model=str(base))
    assert "training the QA head" not in capsys.readouterr().err
    shown.setenv("CAUSALKG_PROGRESS", "lines")
    train_qa(cfg, output=tmp_path / "shown", base_model=str(base))
    err = capsys.readouterr().err
    assert "training the QA head: 4/4 step (100%) [" in err and "step/s]" in err
    # the validation lines say how long is left too
    messages = [r.getMessage() for r in caplog.records]
    assert any(re.fullmatch(r"step 2 of 4: loss \S+, selection F1 \S+, about \d\d:\d\d left", m) for m in messages)
    quiet, shown_model = (tmp_path / name / "model.safetensors" for name in ("quiet", "shown"))
    assert quiet.read_bytes() == shown_model.read_bytes()


def test_export_reports_the_triples_it_loads(cli, in_tmp, shown):
    import shutil

    from tests.reliability.conftest import BASE_KG, assemble_args

    (in_tmp / "data" / "wikidata").mkdir(parents=True)
    shutil.copy(BASE_KG, in_tmp / "data" / "wikidata" / "base_kg.jsonl")
    built = cli(*assemble_args(), "--quiet")
    assert built.code == 0 and "linking" not in built.err, built.err
    r = cli("kg", "export")
    assert r.code == 0, r.err
    assert re.search(r"^loading the store: \S+/\S+ triple \(100%\) \[", r.err, re.M), r.err


def test_the_wikidata_dump_conversion_reports_its_lines(tmp_path, shown, capsys):
    from causalkg.corpus.jsondump import convert
    from tests.corpus.test_jsondump import KEEP, snapshot_entities, write_dump

    shown.setenv("CAUSALKG_PROGRESS", "lines")
    write_dump(tmp_path / "latest-all.json", snapshot_entities())  # the bundled snapshot's items, as a dump
    stats = convert(tmp_path / "latest-all.json", tmp_path / "out.nt", KEEP, workers=1, chunk_lines=5)
    err = capsys.readouterr().err
    assert stats.lines and re.search(r"^wikidata dump: \S+ line \[\S+, \S+line/s\]$", err, re.M), err
