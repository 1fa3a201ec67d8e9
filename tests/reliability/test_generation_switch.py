"""kill -9 at every point of a generation switch (``causalkg.core.generations.publish``), in
``kg assemble --force`` and ``kg export --force`` run as real processes: the published generation
is always whole and named by ``current``, a plain rerun (which finds its outputs up to date)
sweeps what the killed run left, and the next ``--force`` keeps the generation that was
published before it, never an unpublished folder in its place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from causalkg.core import generations

from tests.reliability.conftest import assemble_args, ck, project

BEFORE_SWITCH = ["assemble.before-publish", "publish.renamed"]  # the old generation stays current
AFTER_SWITCH = ["publish.switched", "publish.linked", "publish.recorded", "publish.pruning"]
DOCUMENTED = ["causal_kg_pairs.jsonl", "causal_kg.jsonl", "causal_kg.ttl", "causal_kg.graphml"]


def test_every_point_of_the_switch_is_named_in_publish():
    assert set(generations.PUBLISH_POINTS) == set(BEFORE_SWITCH[1:] + AFTER_SWITCH)


def _cur(folder: Path) -> str:
    cur = generations.current(folder)
    assert cur is not None and cur.is_dir()
    return cur.name


def _left(folder: Path) -> list[str]:
    """Everything in ``folder`` and its generations/ that is not a published generation, its
    record, a documented link or a lock."""
    gens = folder / "generations"
    keep = set(generations.published_ids(folder))
    odd = [p.name for p in gens.iterdir() if p.name not in keep]
    odd += [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name not in (".writer.lock", ".published")]
    return odd


def _whole(folder: Path) -> None:
    """The current generation matches its manifest, and the documented paths read it."""
    generations.verify(folder / "current", what="KG files")
    for name in DOCUMENTED:
        assert (folder / name).read_bytes() == (folder / "current" / name).read_bytes()


@pytest.mark.parametrize("point", BEFORE_SWITCH + AFTER_SWITCH)
def test_assemble_killed_at_any_point_of_the_switch_keeps_the_published_generation(tmp_path, point):
    root = project(tmp_path)
    kg = root / "data" / "kg"
    for extra in ([], ["--force"]):  # two published generations, so the switch also prunes one
        done = ck(root, *assemble_args(*extra))
        assert done.returncode == 0, done.stderr
    first, published = generations.published_ids(kg)
    assert sorted(p.name for p in (kg / "generations").iterdir()) == sorted([first, published])

    killed = ck(root, *assemble_args("--force"), fault=point)
    assert killed.returncode == -9, killed.stderr
    now = _cur(kg)
    assert (now == published) if point in BEFORE_SWITCH else (now not in (first, published))
    _whole(kg)

    rerun = ck(root, *assemble_args())  # finds the KG up to date, and sweeps
    assert rerun.returncode == 0, rerun.stderr
    assert "up to date" in rerun.stdout
    assert _cur(kg) == now
    assert _left(kg) == []
    assert len(generations.published_ids(kg)) == 2  # keep_generations
    _whole(kg)

    again = ck(root, *assemble_args("--force"))
    assert again.returncode == 0, again.stderr
    newest = _cur(kg)
    assert newest != now
    assert generations.published_ids(kg) == [now, newest]  # the one published before is the one kept
    assert sorted(p.name for p in (kg / "generations").iterdir()) == sorted([now, newest])
    assert _left(kg) == []
    _whole(kg)


def test_an_unpublished_folder_is_never_kept_in_place_of_the_published_one(tmp_path):
    """The reported case: killed after the new folder got its final name, a plain rerun said
    "up to date" and left it; the next --force kept it as the previous generation and deleted
    the one that had been published."""
    root = project(tmp_path)
    kg = root / "data" / "kg"
    assert ck(root, *assemble_args()).returncode == 0
    published = _cur(kg)
    assert ck(root, *assemble_args("--force"), fault="publish.renamed").returncode == -9
    [unpublished] = [p.name for p in (kg / "generations").iterdir() if p.name != published]
    assert unpublished > published  # newer by name: folder order would have called it the latest

    # even when the up-to-date rerun is skipped, the next writer sweeps it before publishing
    assert ck(root, *assemble_args("--force")).returncode == 0
    newest = _cur(kg)
    assert generations.published_ids(kg) == [published, newest]
    assert not (kg / "generations" / unpublished).exists()


def test_a_killed_writers_link_and_record_temporaries_are_swept(tmp_path):
    root = project(tmp_path)
    kg = root / "data" / "kg"
    assert ck(root, *assemble_args()).returncode == 0
    os.symlink("generations/nowhere", kg / ".current.0a1b2c3d.link")
    (kg / ".published.999999.0a1b2c3d.tmp").write_text("{", encoding="utf-8")
    (kg / "generations" / ".building-20990101T000000.000000Z-abcdef").mkdir()
    (kg / ".aggregate-x1y2").mkdir()
    assert sorted(_left(kg)) == sorted([".current.0a1b2c3d.link", ".published.999999.0a1b2c3d.tmp",
                                        ".building-20990101T000000.000000Z-abcdef", ".aggregate-x1y2"])
    rerun = ck(root, *assemble_args())
    assert rerun.returncode == 0 and "up to date" in rerun.stdout
    assert _left(kg) == []
    _whole(kg)


@pytest.mark.parametrize("point", ["publish.renamed", "publish.switched"])
def test_export_killed_in_the_switch_keeps_the_published_store(tmp_path, point):
    root = project(tmp_path)
    store = root / "data" / "store"
    assert ck(root, *assemble_args()).returncode == 0
    assert ck(root, "kg", "export").returncode == 0
    published = _cur(store)
    killed = ck(root, "kg", "export", "--force", fault=point)
    assert killed.returncode == -9, killed.stderr
    now = _cur(store)
    assert (now == published) == (point == "publish.renamed")
    rerun = ck(root, "kg", "export")
    assert rerun.returncode == 0, rerun.stderr
    assert "up to date" in rerun.stdout
    assert _cur(store) == now and _left(store) == []
    assert ck(root, "kg", "export", "--force").returncode == 0
    assert generations.published_ids(store) == [now, _cur(store)]
    assert _left(store) == []
