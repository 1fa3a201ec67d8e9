"""kill -9 at named points of extract, assemble and export (the real CLI in a subprocess): the
rerun gives byte-identical outputs, a reader never sees a mixed set of KG files, and no staging
graph survives into the store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyoxigraph
import pytest

from causalkg.core import generations
from causalkg.core.config import load_config
from causalkg.kg import stats as S
from causalkg.kg import store as K

from tests.conftest import FIXTURES
from tests.reliability.conftest import KG_GRAPH, assemble_args, ck, project, tree

WIKI = FIXTURES / "extract" / "wiki_docs.jsonl"


def _cfg(root: Path):
    return load_config(search_cwd=False, overrides={"paths.data": str(root / "data")})


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Uninterrupted builds: KG "old" (kg.lift = none) and KG "new" (the default lift), and
    the store holding the new one."""
    refs = {}
    for name, extra in (("old", ["--lift", "none"]), ("new", [])):
        root = project(tmp_path_factory.mktemp(f"ref-{name}"))
        done = ck(root, *assemble_args(*extra))
        assert done.returncode == 0, done.stderr
        refs[name] = root
    done = ck(refs["new"], "kg", "export")
    assert done.returncode == 0, done.stderr
    return refs


def _kg_files(root: Path) -> dict[str, bytes]:
    return tree(root / "data" / "kg" / "current")


def _documented(root: Path) -> dict[str, bytes]:
    kg = root / "data" / "kg"
    names = ["causal_kg_pairs.jsonl", "causal_kg.jsonl", "causal_kg.ttl", "causal_kg.graphml"]
    return {n: (kg / n).read_bytes() for n in names}


@pytest.mark.parametrize("point", ["assemble.output-written#1", "assemble.output-written#2",
                                   "assemble.output-written#4", "assemble.before-publish"])
def test_assemble_killed_leaves_the_old_kg_whole_and_the_rerun_gives_the_new_one(reference, tmp_path, point):
    root = project(tmp_path)
    assert ck(root, *assemble_args("--lift", "none")).returncode == 0
    killed = ck(root, *assemble_args(), fault=point)
    assert killed.returncode == -9, killed.stderr

    # Readers see the old KG, whole: the files at the documented paths, the checked reader, the CLI.
    assert _kg_files(root) == _kg_files(reference["old"])
    assert _documented(root) == _documented(reference["old"])
    old_edges = len(S.load_edges(kg=reference["old"] / "data" / "kg"))
    assert len(S.load_edges(_cfg(root))) == old_edges
    summary = ck(root, "kg", "summary", "--format", "json")
    assert summary.returncode == 0, summary.stderr
    assert json.loads(summary.stdout)["counts"]["edges"] == old_edges

    rerun = ck(root, *assemble_args())
    assert rerun.returncode == 0, rerun.stderr
    assert _kg_files(root) == _kg_files(reference["new"])
    assert _documented(root) == _documented(reference["new"])
    gens = root / "data" / "kg" / "generations"
    assert not [p for p in gens.iterdir() if p.name.startswith(".")]  # the killed run's folder is gone
    assert len(generations.generations(root / "data" / "kg")) <= 2  # pruned: current and the one before


def test_a_mixed_folder_is_refused_by_every_reader(reference, tmp_path):
    """A KG folder written without generations (an older version, or copied by hand) whose files
    come from two builds: summary, stats, export and eval name the file that does not belong."""
    root = project(tmp_path)
    flat = root / "flat"
    shutil.copytree(reference["old"] / "data" / "kg" / "current", flat)
    shutil.copy(reference["new"] / "data" / "kg" / "causal_kg_pairs.jsonl", flat / "causal_kg_pairs.jsonl")
    shutil.copy(reference["new"] / "data" / "kg" / "causal_kg.jsonl", flat / "causal_kg.jsonl")
    for args in (["kg", "summary", "--kg", str(flat)], ["kg", "stats", "--kg", str(flat)],
                 ["kg", "export", "--kg", str(flat)],
                 ["eval", "recall", "--kg", str(flat / "causal_kg.jsonl"), "--base-kg", str(root / "data" / "wikidata" / "base_kg.jsonl")]):
        out = ck(root, *args)
        assert out.returncode != 0, (args, out.stdout)
        assert "Traceback" not in out.stderr
        assert "mix of two builds" in out.stderr, (args, out.stderr)
    # the untouched folder reads fine
    ok = ck(root, "kg", "summary", "--kg", str(reference["old"] / "data" / "kg"))
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("point", ["export.graph-staged", "export.graph-staged#2", "export.before-publish"])
def test_export_killed_leaves_no_staging_graph_that_a_plain_export_keeps(reference, tmp_path, point):
    root = project(tmp_path)
    assert ck(root, *assemble_args("--lift", "none")).returncode == 0
    assert ck(root, "kg", "export").returncode == 0
    cfg = _cfg(root)
    before = K.store_counts(cfg)
    assert ck(root, *assemble_args()).returncode == 0

    killed = ck(root, "kg", "export", fault=point)
    assert killed.returncode == -9, killed.stderr
    assert K.store_counts(cfg) == before  # readers still see the old store, whole, no staging graph

    again = ck(root, "kg", "export")  # a plain export: no --force
    assert again.returncode == 0, again.stderr
    assert "up to date" not in again.stdout
    after = K.store_counts(cfg)
    assert after == K.store_counts(_cfg(reference["new"]))
    assert not [g for g in after if K.is_staging(g)]
    assert not [p for p in (root / "data" / "store" / "generations").iterdir() if p.name.startswith(".")]


def test_a_staging_graph_left_in_a_store_of_the_old_layout_is_cleared(reference, tmp_path):
    """A store written before generations, with the staging graph a killed export left and a
    manifest saying it is current: the next plain export does not keep it."""
    root = project(tmp_path)
    assert ck(root, *assemble_args()).returncode == 0
    shutil.copytree((reference["new"] / "data" / "store" / "current").resolve(), root / "data" / "store")
    (root / "data" / "store" / ".readers.lock").unlink()
    st = pyoxigraph.Store(str(root / "data" / "store" / "oxigraph"))
    st.add(pyoxigraph.Quad(pyoxigraph.NamedNode("http://example.org/s"), pyoxigraph.NamedNode("http://example.org/p"),
                           pyoxigraph.Literal("left over"), pyoxigraph.NamedNode(K.staging_iri(KG_GRAPH))))
    st.flush()
    del st
    assert K.staging_iri(KG_GRAPH) in K.store_counts(_cfg(root))
    out = ck(root, "kg", "export")
    assert out.returncode == 0, out.stderr
    counts = K.store_counts(_cfg(root))
    assert not [g for g in counts if K.is_staging(g)]
    assert counts == K.store_counts(_cfg(reference["new"]))
    assert (root / "data" / "store" / "oxigraph").is_symlink()


@pytest.mark.parametrize("point", ["extract.shard-done#2", "extract.before-output"])
def test_extract_killed_then_rerun_gives_the_same_output(tmp_path, point):
    ref_root, root = project(tmp_path / "ref"), project(tmp_path / "run")
    args = ["kg", "extract", "--extractor", "patterns", "--input", str(WIKI), "--shard-size", "1",
            "--set", "extract.gate.kind=cues"]
    assert ck(ref_root, *args).returncode == 0
    killed = ck(root, *args, fault=point)
    assert killed.returncode == -9, killed.stderr
    assert not (root / "data" / "kg" / "extractions.jsonl").exists()
    rerun = ck(root, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert "resumed" in rerun.stdout
    out = (root / "data" / "kg" / "extractions.jsonl").read_bytes()
    assert out and out == (ref_root / "data" / "kg" / "extractions.jsonl").read_bytes()
