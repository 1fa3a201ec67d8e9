"""The one temp-then-rename helper for folders (core.jsonl.atomic_dir), used by every model
folder writer: the gate, the verifier, trained transformers models, the model package."""

from __future__ import annotations

import pytest

from causalkg.core.jsonl import atomic_dir


def _tree(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_replaces_the_folder_whole(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "old.bin").write_text("old")
    with atomic_dir(out) as tmp:
        assert tmp.parent == out.parent and tmp.is_dir() and not any(tmp.iterdir())
        (tmp / "new.bin").write_text("new")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "x").write_text("x")
        assert (out / "old.bin").read_text() == "old"  # readers still see the old folder
    assert _tree(out) == ["new.bin", "sub", "sub/x"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # nothing left beside it


def test_an_error_leaves_the_old_folder(tmp_path):
    out = tmp_path / "model"
    out.mkdir()
    (out / "old.bin").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_dir(out) as tmp:
            (tmp / "half.bin").write_text("half")
            raise RuntimeError("killed half way")
    assert _tree(out) == ["old.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_new_folder_and_its_parents(tmp_path):
    out = tmp_path / "a" / "b" / "model"
    with atomic_dir(out) as tmp:
        (tmp / "f").write_text("1")
    assert _tree(out) == ["f"]
