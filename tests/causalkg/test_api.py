"""The Python API: ``import causalkg as ck`` is cheap, reaches every step, and the README's
"Python API" example runs as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from causalkg.core.config import load_defaults
from tests.conftest import FIXTURES, REPO


def test_import_is_cheap_and_names_load_on_first_use():
    code = ("import sys, causalkg as ck\n"
            "before = sorted(m for m in sys.modules if m.startswith('causalkg.'))\n"
            "f = ck.assemble\n"
            "after = sorted(m for m in sys.modules if m.startswith('causalkg.'))\n"
            "print(before); print(f.__module__); print(after)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    before, module, after = r.stdout.splitlines()
    # no stage, not even the config, is imported by `import causalkg`: only the core's empty
    # package, which holds the version
    assert before == "['causalkg.core']"
    assert module == "causalkg.kg.cli.graph"  # the command's own module: function, result, parser
    assert "causalkg.kg.assemble" not in after  # the stage loads when the step runs, not before
    # nor the other commands' modules, nor what running a command needs (causalkg.cli and its
    # progress bars, signal handlers, deadlines): the parser helpers are causalkg.options'
    assert not [m for m in after if ".cli" in m and m != "causalkg.kg.cli.graph" and m != "causalkg.kg.cli"], after
    for m in ("causalkg.core.progress", "causalkg.core.interrupts", "causalkg.core.deadline", "causalkg.core.jsonl"):
        assert m not in after, m


def test_the_names_listed_in_causalkg_are_their_modules_all():
    import importlib

    import causalkg as ck

    for module_name, names in ck.COMMANDS.items():
        assert list(names) == list(importlib.import_module(module_name).__all__), module_name
    every = [n for names in ck.COMMANDS.values() for n in names]
    assert len(every) == len(set(every))  # one module per name


def test_every_cli_step_has_an_api_function():
    import causalkg as ck

    for name in ("build_corpus", "build_index", "link", "train_qa", "extract", "assemble", "export", "query",
                 "stats", "summary", "recall", "precision", "human_precision", "report", "soft", "elo", "meta",
                 "align", "agreement", "sqc", "consistency", "setup_wordnet", "load_config", "show_config", "train_gate",
                 "train_tagger", "train_verifier", "serve"):
        assert callable(getattr(ck, name)), name
        assert name in dir(ck)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        ck.nonexistent  # noqa: B018


def test_results_render_in_every_format_and_reject_others(tmp_path):
    import causalkg as ck

    cfg = ck.load_config(overrides={"paths.data": str(tmp_path / "data")}, search_cwd=False)
    r = ck.assemble(linked=FIXTURES / "kg" / "linked.jsonl", concepts=FIXTURES / "kg" / "concepts.jsonl", cfg=cfg)
    assert type(r).__name__ == "Assembly"
    assert str(r) == r.to_table("text") and str(r).startswith(f"causal KG in {tmp_path / 'data' / 'kg'} written: ")
    data = json.loads(r.to_table("json"))
    assert data["out"] == str(tmp_path / "data" / "kg") and data["counts"]["edges"] == r.counts["edges"] > 0
    assert r.to_table("csv").splitlines()[0] == "line"
    assert r.skipped is False and r.out.is_dir()
    # one result class: the step returns it (its files and best edges too), the command prints it
    assert r.outputs == json.loads((r.out / "manifest.json").read_text())["outputs"] and r.top
    assert r.detail is None and set(data) == {"out", "skipped", "counts", "notes", "plan"}
    with pytest.raises(ck.ConfigError, match="unknown format 'yaml'"):
        r.to_table("yaml")
    again = ck.assemble(linked=FIXTURES / "kg" / "linked.jsonl", concepts=FIXTURES / "kg" / "concepts.jsonl",
                        cfg=cfg)
    assert again.skipped and "is up to date" in str(again)
    rec = ck.recall(r.out / "causal_kg_pairs.jsonl", cfg=cfg)  # against the bundled Base KG v1 (eval.recall.base_kg)
    assert rec.base_kg.name == "base-kg-v1.jsonl"
    assert [row["eval_type"] for row in rec.rows()] == ["full", "classes", "instances"]
    assert rec.to_table("md").splitlines()[1].startswith("|---|")
    assert json.loads(rec.to_table("json"))[0]["eval_type"] == "full"


def test_cfg_may_be_a_path_and_errors_are_the_clis(tmp_path):
    import causalkg as ck

    toml = tmp_path / "my.toml"
    toml.write_text('[eval.recall]\nany_id = true\n')
    assert ck.show_config(cfg=toml).data["eval"]["recall"]["any_id"] is True
    toml.write_text('[eval]\nrecall_any_id = true\n')
    with pytest.raises(ck.ConfigError, match=r"config key eval.recall_any_id is now eval.recall.any_id"):
        ck.show_config(cfg=toml)
    with pytest.raises(ck.ConfigError, match="cfg must be a Config"):
        ck.show_config(cfg=42)
    with pytest.raises(ck.ConfigError, match="no KG to judge"):
        ck.precision([], cfg=ck.load_config(search_cwd=False))


# Result classes that the stage's step returns itself (one class, no wrapper around it), kept in a
# module of their own so that the command module imports them without loading the step.
STAGE_RESULTS = {"Assembly": "causalkg.kg.assembly"}


def test_each_command_is_one_module():
    """A command's function, its result class and its parser are in one module: the function is
    what ``ck`` gives, its return annotation names a class of the same module, and the parser's
    handler of that module calls it. Nothing is left of the old API layer."""
    import importlib
    import inspect

    import causalkg as ck
    from causalkg.cli import build_parser
    from causalkg.core.results import Result

    handlers: dict[str, set[str]] = {}
    stack = [build_parser()]
    while stack:
        parser = stack.pop()
        handler = parser.get_default("_handler")
        if handler is not None:
            handlers.setdefault(handler.__module__, set()).add(inspect.getsource(handler))
        for action in parser._actions:
            if isinstance(getattr(action, "choices", None), dict):
                stack += list(action.choices.values())
    functions = 0
    for module_name in ck.COMMAND_MODULES:
        if module_name.startswith("causalkg.core."):
            continue
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            assert getattr(ck, name) is obj, name
            if inspect.isclass(obj):
                assert issubclass(obj, Result) and obj.__module__ in (module_name, STAGE_RESULTS.get(name)), name
                continue
            functions += 1
            assert obj.__module__ == module_name, name
            assert any(f"{name}(" in src for src in handlers.get(module_name, ())), f"no parser of {name} in {module_name}"
            returned = obj.__annotations__.get("return")
            if name not in ("install_models", "build_modelpack"):  # kg.modelpack's results, which render themselves
                assert getattr(module, returned).__module__ in (module_name, STAGE_RESULTS.get(returned)), name
    assert functions == 30  # every command of the flow, the trainers, the model package, serve, config show and registry list
    assert not (REPO / "causalkg" / "api.py").exists() and not (REPO / "causalkg" / "results.py").exists()
    assert not hasattr(ck, "_API")


def test_a_table_result_renders_rows_in_every_format():
    """Invented rows (an edge case: a NaN cell, a pipe in a cell): the shared TableResult."""
    from dataclasses import dataclass

    from causalkg.core.results import TableResult

    @dataclass
    class Scores(TableResult):
        COLUMNS = ["name", "score"]
        FLOATFMT = ".2f"

        def rows(self):
            return [{"name": "a|b", "score": 0.5, "extra": 1}, {"name": "c", "score": float("nan")}]

        def note(self):
            return "2 rows"

    r = Scores()
    assert r.to_table("text") == str(r) == "name  score\na|b   0.50\nc\n\n2 rows"
    assert r.to_table("md").splitlines() == ["| name | score |", "|---|---|", "| a\\|b | 0.50 |", "| c |  |", "",
                                             "2 rows"]
    assert r.to_table("csv") == "name,score\na|b,0.50\nc,"
    assert json.loads(r.to_table("json")) == [{"name": "a|b", "score": 0.5}, {"name": "c", "score": None}]


def _readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_readme_python_example_is_short():
    code = _readme_example()
    assert len(code.strip().splitlines()) < 15


def test_readme_python_example_runs_as_written(tmp_path, monkeypatch, capsys):
    """Runs the README block in a fresh folder: the whole flow on the bundled snapshots."""
    monkeypatch.chdir(tmp_path)
    if load_defaults()["extract"]["input"].startswith("data/"):  # until extract.* follow paths.data
        (tmp_path / "causalkg.toml").write_text('[extract]\ninput = "ckdata/corpus/corpus.jsonl"\n'
                                                 'output = "ckdata/kg/extractions.jsonl"\n')
    exec(compile(_readme_example(), "README.md:python-api", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert out.startswith(f"causal KG in {tmp_path / 'ckdata' / 'kg'} written: ")
    assert "| causal_kg.jsonl | base-kg-v1.jsonl | full |" in out
    hits = re.search(r"^(\d+) of (\d+) edges are Base KG pairs$", out, re.M)
    assert hits and 0 < int(hits.group(1)) <= int(hits.group(2))
    assert (tmp_path / "ckdata" / "kg" / "manifest.json").is_file()


def test_api_reference_is_current():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_api_docs.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + " (run make docs)"
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    for name in ("build_corpus", "assemble", "recall", "sqc"):
        assert f"### `ck.{name}`" in text


def test_kg_reads_render_csv_as_tables(tmp_path):
    import csv
    import io

    import causalkg as ck

    cfg = ck.load_config(overrides={"paths.data": str(tmp_path / "data")}, search_cwd=False)
    kg = ck.assemble(linked=FIXTURES / "kg" / "linked.jsonl", concepts=FIXTURES / "kg" / "concepts.jsonl", cfg=cfg)
    stats = list(csv.DictReader(io.StringIO(ck.stats(cfg=cfg).to_table("csv"))))
    assert {r["measure"]: int(r["value"]) for r in stats}["edges"] == kg.counts["edges"]
    top = list(csv.DictReader(io.StringIO(ck.summary(top=3, cfg=cfg).to_table("csv"))))
    assert len(top) == min(3, kg.counts["edges"]) and set(top[0]) >= {"cause", "effect", "evidence"}
