"""The judgements file heals: a last line torn by a crash or a full disk is skipped and reported
by its readers (the edge page, ``eval precision --human``), and the next judgement moves it aside
to ``judgements.jsonl.torn`` before its own line goes in, so a 201 is never a judgement glued
onto a torn one. The full disk is a real short write: a child process appends under a file-size
limit (RLIMIT_FSIZE) that lets only part of the line out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from causalkg.web import judgements as J
from causalkg.web.app import create_app

REPO = Path(__file__).resolve().parents[2]
MENTION = "d86028e13181404fb8f8"  # earthquake -> tsunami, sentence 1

# Appends one judgement of the fixture KG with the file allowed to grow by only 40 bytes.
SHORT_WRITE = """
import resource, signal, sys
from causalkg.core.config import load_config
from causalkg.web import judgements as J
from causalkg.web.kgview import load_view
cfg = load_config(overrides={"paths.data": sys.argv[2]}, search_cwd=False)
e = load_view(cfg).edges["Q7944_Q8070"]
j = J.make_judgement(e, e.mentions[0], "wrong", "Disk Full", "cut short")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
size = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, size + 40))
try:
    J.append(sys.argv[1], j)
except OSError as exc:
    print("refused:", exc)
"""


def _judge(c, judge: str) -> int:
    r = c.post("/edge/Q7944_Q8070/judge", data={"mention_id": MENTION, "verdict": "correct", "judge": judge},
               headers={"Accept": "application/json"})
    return r.status_code


def _whole_lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(x) for x in data.splitlines()]


def test_a_judgement_after_a_short_write_is_recorded_whole_and_the_torn_tail_kept(kg_project, tmp_path, cli):
    root, cfg = kg_project
    path = tmp_path / "judgements.jsonl"
    with TestClient(create_app(cfg, judgements=str(path))) as c:
        assert _judge(c, "Ada") == 201
        before = path.read_bytes()

        # the disk fills during the next append: the line goes out in part, the writer says so
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        out = subprocess.run([sys.executable, "-c", SHORT_WRITE, str(path), str(root / "data"), str(len(before))],
                             env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "refused: only 40 of" in out.stdout
        torn = path.read_bytes()[len(before):]
        assert len(torn) == 40 and not torn.endswith(b"\n")

        # readers skip the torn line and say so
        judged, stats = J.read_judgements(path)
        assert [j.judge for j in judged] == ["Ada"] and stats.torn == 1 and stats.skipped == 0
        assert "a torn last line (40 bytes without a newline" in stats.errors[0]
        assert "<b>correct</b> by Ada" in c.get("/edge/Q7944_Q8070").text
        (tmp_path / "none.jsonl").write_text("", encoding="utf-8")  # no LLM verdicts to compare with
        r = cli("eval", "precision", "--human", path, "--llm", tmp_path / "none.jsonl")
        assert r.code == 0, r.err
        assert "its last line was torn (no newline: a write cut short) and was skipped" in r.err

        # space is back: the next judgement is a line of its own, the torn bytes lie beside
        assert _judge(c, "Bob") == 201
        assert [x["judge"] for x in _whole_lines(path)] == ["Ada", "Bob"]
        assert path.read_bytes().startswith(before)
        assert Path(f"{path}.torn").read_bytes() == torn + b"\n"
        page = c.get("/edge/Q7944_Q8070").text
        assert "<b>correct</b> by Ada" in page and "<b>correct</b> by Bob" in page
    judged, stats = J.read_judgements(path)
    assert len(judged) == 2 and stats.torn == 0 and stats.skipped == 0
    r = cli("eval", "precision", "--human", path, "--llm", tmp_path / "none.jsonl")
    assert r.code == 0 and "torn" not in r.err


def test_a_file_cut_by_a_crash_heals_on_the_next_append(kg_project, tmp_path, caplog):
    from causalkg.web.kgview import load_view

    root, cfg = kg_project
    e = load_view(cfg).edges["Q7944_Q8070"]
    path = tmp_path / "j.jsonl"
    for who in ("Ada", "Bob"):
        assert J.append(path, J.make_judgement(e, e.mentions[0], "correct", who)) == 0
    whole = path.read_bytes()
    with open(path, "r+b") as fh:  # a crash cut the file inside its last line
        fh.truncate(len(whole) - 25)
    cut = path.read_bytes()
    second = cut[cut.rindex(b"\n") + 1:]
    with caplog.at_level("WARNING", logger="causalkg.web.judgements"):
        moved = J.append(path, J.make_judgement(e, e.mentions[0], "wrong", "Cy"))
    assert moved == len(second)
    assert [x["judge"] for x in _whole_lines(path)] == ["Ada", "Cy"]
    assert Path(f"{path}.torn").read_bytes() == second + b"\n"
    assert f"moved to {path}.torn (1 torn line there)" in caplog.text
