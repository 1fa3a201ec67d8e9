"""Fixtures of the linking tests: a small real vocabulary, built indexes, a second model.

The vocabulary is a slice of ``tests/fixtures/linking/base_kg_concepts.jsonl`` (the WikiCausal
Base KG as Concept records, see its SOURCE.md): the event lines of conflict, war, earthquake,
tsunami and protest with their consequence classes and instance examples (228 concepts, 420
surface forms), so a build embeds in about a second. Helpers the tests call are fixtures that
return functions (``make_cfg``, ``write_concepts``): the tests folder is not a package.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE_DIR = REPO / "tests" / "fixtures" / "linking"
FULL_CONCEPTS = FIXTURE_DIR / "base_kg_concepts.jsonl"
BASE_KG = REPO / "snapshots" / "wikicausal" / "base-kg-v1.jsonl"
SMALL_EVENTS = ("Q180684", "Q198", "Q7944", "Q8070", "Q273120")


def _load_make_concepts():
    """The fixture script ``tests/fixtures/linking/make_concepts.py`` as a module."""
    spec = importlib.util.spec_from_file_location("linking_make_concepts", FIXTURE_DIR / "make_concepts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _small_concepts() -> list[dict]:
    """The concepts of the SMALL_EVENTS lines of the Base KG, in fixture order."""
    ids = set()
    for line in BASE_KG.read_text(encoding="utf-8").splitlines():
        b = json.loads(line)
        if b["event"]["id"] not in SMALL_EVENTS:
            continue
        ids.add(b["event"]["id"])
        for c in b["consequences"]:
            ids.add(c["id"])
            for ex in c["examples"]:
                ids.update((ex["cause"]["id"], ex["effect"]["id"]))
    rows = [json.loads(x) for x in FULL_CONCEPTS.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [c for c in rows if c["id"] in ids]


def _write_concepts(path: Path, concepts: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in concepts), encoding="utf-8")
    return path


def _make_cfg(root: Path, **linking):
    """A Config whose ``paths.data`` is ``root/data`` (``linking.*`` overrides as keywords)."""
    from causalkg.core.config import load_config

    overrides = {"paths.data": str(root / "data")}
    overrides.update({f"linking.{k}": v for k, v in linking.items()})
    return load_config(search_cwd=False, overrides=overrides)


@pytest.fixture(scope="session")
def make_cfg():
    """``make_cfg(root, **linking)``: a Config with ``paths.data = root/data``."""
    return _make_cfg


@pytest.fixture(scope="session")
def write_concepts():
    """``write_concepts(path, concepts)``: write Concept dicts as JSONL."""
    return _write_concepts


@pytest.fixture(scope="session")
def make_concepts_module():
    """The fixture script ``tests/fixtures/linking/make_concepts.py``, imported."""
    return _load_make_concepts()


@pytest.fixture(scope="session")
def small_vocab() -> list[dict]:
    return _small_concepts()


@pytest.fixture(scope="session")
def built(tmp_path_factory, small_vocab):
    """A project folder with the small vocabulary at data/wikidata/concepts.jsonl and a built
    flat index (built once per session; copy it with ``project`` before changing anything)."""
    from causalkg.linking.index import build_index

    root = tmp_path_factory.mktemp("linking-built")
    _write_concepts(root / "data" / "wikidata" / "concepts.jsonl", small_vocab)
    result = build_index(_make_cfg(root))
    assert result["built"]
    return root


@pytest.fixture
def project(built, tmp_path):
    """A private copy of the built project folder."""
    dst = tmp_path / "project"
    shutil.copytree(built, dst)
    return dst


@pytest.fixture(scope="session")
def linker(built):
    """The persisted small index, loaded (shared: do not change it)."""
    from causalkg.linking.linker import Linker

    return Linker.load(_make_cfg(built))


@pytest.fixture(scope="session")
def other_model(tmp_path_factory) -> Path:
    """A second sentence-transformers model: the offline MiniLM folder with max pooling instead
    of mean pooling (weights linked, not copied). Same dimension, other vectors, other model id."""
    from causalkg.testing.tiny_models import minilm_dir

    src = minilm_dir()
    dst = tmp_path_factory.mktemp("models") / "minilm-maxpool"
    for f in src.rglob("*"):
        if f.is_file():
            target = dst / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if f.name == "model.safetensors":
                target.symlink_to(f)
            else:
                shutil.copy2(f, target)
    pooling = dst / "1_Pooling" / "config.json"
    conf = json.loads(pooling.read_text())
    conf.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    pooling.write_text(json.dumps(conf, indent=2))
    return dst
