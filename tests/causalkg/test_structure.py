"""The structure of the code: the import graph between modules has no cycles, a stage imports only
from ``causalkg`` and the stages before it (corpus -> linking -> kg -> evaluation; the commands,
which are the CLI and the Python API, and the web UI above them), and an installed copy puts only ``causalkg`` at the top level of site-packages.

The graph is read from the source with ``ast`` (every ``import`` and ``from ... import``, at module
level and inside functions), not by importing anything. One direction is allowed on purpose and
is not an import statement: ``causalkg.cli`` loads the stage CLIs by name (``STAGE_CLIS``), and
they import ``causalkg.options`` for the parser helpers.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[2]
# Source folder -> installed package: one package, the stages its subpackages (no package-dir).
ROOTS = {"causalkg": "causalkg"}
# The layers, bottom up: the shared core (causalkg.*, the result base class included), the stages
# in flow order, the commands over them (causalkg.cli, its option helpers and every stage's cli
# package: each command's function, its result class and its parser, which ``import causalkg``
# re-exports), the browser UI, and causalkg.testing (servers, tiny models, generated data for the
# tests), which may use everything.
STAGE_ORDER = {"causalkg": 0, "corpus": 1, "linking": 2, "kg": 3, "evaluation": 4, "cli": 6, "web": 7, "testing": 8}
CLI = {"causalkg.cli", "causalkg.options"}


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for folder, package in ROOTS.items():
        for f in sorted((REPO / folder).rglob("*.py")):
            parts = list(f.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([package, *parts])] = f
    return mods


def import_graph() -> nx.DiGraph:
    """Module -> the modules of the project it imports (``from a import b`` counts ``a.b`` when
    ``b`` is a module)."""
    mods = _modules()
    g = nx.DiGraph()
    for name, path in mods.items():
        g.add_node(name)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in mods and t != name:
                    g.add_edge(name, t)
    return g


def _stage(module: str) -> str:
    """The layer of a module (STAGE_ORDER)."""
    parts = module.split(".")
    if module in CLI or (len(parts) > 2 and parts[1] in ("corpus", "linking", "kg", "evaluation") and parts[2] == "cli"):
        return "cli"
    return parts[1] if len(parts) > 1 and parts[1] in STAGE_ORDER else "causalkg"


def test_stage_names():
    assert [_stage(m) for m in ("causalkg.cli", "causalkg.kg.cli.extract", "causalkg.kg.cli", "causalkg.testing.flaky",
                                "causalkg", "causalkg.core.layout", "causalkg.core.results", "causalkg.kg.assemble")] == [
        "cli", "cli", "cli", "testing", "causalkg", "causalkg", "causalkg", "kg"]


def test_the_graph_is_read():
    g = import_graph()
    assert g.number_of_nodes() > 80
    # Known edges, so that a parser that reads nothing cannot pass the tests below.
    assert g.has_edge("causalkg.kg.store", "causalkg.kg.rdf")
    assert g.has_edge("causalkg.evaluation.wikicausal.report", "causalkg.evaluation.wikicausal.recall")
    assert g.has_edge("causalkg.kg.cli.extract", "causalkg.options")


# No cycle is excused (kg.gate once imported kg.extract's segmenter; both now take it from
# kg.sentences.make_cue_segmenter).
KNOWN_CYCLES: set[frozenset[str]] = set()


def test_no_import_cycles():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    new = [" -> ".join(c + c[:1]) for c in cycles if frozenset(c) not in KNOWN_CYCLES]
    assert new[:10] == []


def test_stages_import_only_backwards():
    back = [f"{a} -> {b}" for a, b in import_graph().edges
            if STAGE_ORDER[_stage(b)] > STAGE_ORDER[_stage(a)]]
    assert back == []


def test_the_named_couplings_stay_broken():
    g = import_graph()
    for a, b in [("causalkg.kg.store", "causalkg.kg.assemble"), ("causalkg.kg.stats", "causalkg.core.layout")]:
        assert g.has_node(a) and g.has_node(b)
    # The path helpers come from causalkg.core.layout, and the KG files' readers from kg.kgfiles, not
    # from the assembly step.
    assert not g.has_edge("causalkg.kg.store", "causalkg.kg.assemble")
    assert not g.has_edge("causalkg.kg.stats", "causalkg.kg.assemble")
    for module in ("causalkg/kg/store.py", "causalkg/kg/stats.py"):
        tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
        from_assemble = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                         and n.module == "causalkg.kg.assemble" for a in n.names}
        assert not from_assemble & {"kg_dir", "default_paths", "PAIRS_FILE", "NESTED_FILE"}, module
    assert not g.has_edge("causalkg.kg.graphstore", "causalkg.kg.store")
    assert not g.has_edge("causalkg.kg.extractors.qa", "causalkg.kg.train_qa")  # threshold: kg.qa_decode
    assert not [b for b in g.successors("causalkg.cli") if _stage(b) not in ("causalkg", "cli")]
    evaluation_to_linking = [f"{a} -> {b}" for a, b in g.edges
                             if _stage(a) == "evaluation" and _stage(b) == "linking" and not b.endswith(".encoder")]
    assert evaluation_to_linking == []  # only the encoder (embedding measures), not a device helper
    assert "causalkg.linking.encoder" not in set(g.successors("causalkg.evaluation.judging.hf_models"))


@pytest.mark.slow
def test_an_install_puts_only_causalkg_at_the_top_level(tmp_path):
    """``pip install --target`` of a copy of the source (so no build folder lands in the checkout)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    for folder in ROOTS:
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    top = sorted(p.name for p in target.iterdir() if p.name != "bin" and not p.name.endswith(".dist-info"))
    assert top == ["causalkg"]
    # Every module and prompt of the source is installed under causalkg (no package left out by
    # pyproject.toml's package discovery: a folder without __init__.py would be).
    installed = {p.relative_to(target / "causalkg").as_posix() for p in (target / "causalkg").rglob("*")
                 if p.suffix in (".py", ".txt", ".toml") and "__pycache__" not in p.parts}
    wanted = set()
    for folder in ROOTS:
        prefix = ""
        for p in (REPO / folder).rglob("*"):
            if p.suffix in (".py", ".toml") or (p.suffix == ".txt" and "prompts" in p.parts):
                if "__pycache__" not in p.parts:
                    wanted.add(prefix + p.relative_to(REPO / folder).as_posix())
    assert sorted(wanted - installed) == []


def test_the_core_imports_no_stage():
    """``causalkg.core`` is the foundation: it imports only from itself (and the standard library and
    third-party packages), never a stage or the commands above it."""
    g = import_graph()
    core = [m for m in g.nodes if m == "causalkg.core" or m.startswith("causalkg.core.")]
    assert len(core) >= 15
    up = [f"{a} -> {b}" for a in core for b in g.successors(a) if not (b == "causalkg.core" or b.startswith("causalkg.core."))]
    assert up == []
