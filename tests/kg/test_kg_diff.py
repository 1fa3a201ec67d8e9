"""scripts/kg_diff.py: two builds of the same KG compare identical (timestamps, generation ids and
folder paths left out), and one changed byte, file or store count is reported with exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.kg import assemble as A

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "kg"


def _diff(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "kg_diff.py"), str(a), str(b)],
                          capture_output=True, text=True)


@pytest.fixture()
def two_builds(tmp_path):
    """The fixture KG assembled in one data folder, and again (a later build, other generation id
    and timestamps) in another folder."""
    folders = []
    for name in ("a", "b"):
        data = tmp_path / name / "data"
        cfg = load_config(search_cwd=False, overrides={"paths.data": str(data)})
        A.assemble(cfg, linked=FIX / "linked.jsonl", concepts=FIX / "concepts.jsonl")
        folders.append(data)
    return folders


def test_two_builds_of_the_same_kg_are_identical(two_builds):
    a, b = two_builds
    assert (a / "kg" / "current").readlink() != (b / "kg" / "current").readlink()  # other generation ids
    r = _diff(a, b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("identical: ")


def test_one_changed_byte_is_a_difference(two_builds):
    a, b = two_builds
    pairs = b / "kg" / "current" / "causal_kg_pairs.jsonl"
    raw = bytearray(pairs.read_bytes())
    i = raw.index(b'"support"')
    raw[i + 1] = ord("S")
    pairs.chmod(0o644)
    pairs.write_bytes(bytes(raw))
    r = _diff(a, b)
    assert r.returncode == 1
    assert "differs: kg/causal_kg_pairs.jsonl" in r.stdout
    assert '"Support"' in r.stdout  # the differing line is shown


def test_a_missing_file_and_a_changed_count_are_differences(two_builds):
    a, b = two_builds
    nt = sorted((b / "kg" / "current" / "nt").iterdir())[0]
    nt.unlink()
    manifest = b / "kg" / "current" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["counts"]["edges"] += 1
    m["created"] = "2000-01-01T00:00:00+00:00"  # a timestamp alone is no difference
    manifest.chmod(0o644)
    manifest.write_text(json.dumps(m))
    r = _diff(a, b)
    assert r.returncode == 1
    assert f"only in A: kg/nt/{nt.name}" in r.stdout
    assert ".counts.edges:" in r.stdout and ".created" not in r.stdout


def test_a_missing_folder_or_kg_is_not_identical(tmp_path):
    assert _diff(tmp_path / "nope", tmp_path).returncode == 2
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    r = _diff(tmp_path / "a", tmp_path / "b")
    assert r.returncode == 1 and "no KG" in r.stdout
