"""The registry of swappable parts: versioned names, lazy imports, one catalog, and a command
that lists it."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from causalkg.core.errors import ConfigError
from causalkg.registry import CATALOG, Registry, Spec, listing, parse_spec, registry, split_version
from tests.conftest import REPO

# What is registered today, all of it: a new part (or a lost one) changes this list on purpose.
EXPECTED = {
    "consistency-judge": ["openai.v1", "transformers.v1"],
    "encoder": ["sentence-transformers.v1"],
    "export-target": ["graph-store.v1", "oxigraph.v1"],
    "extractor": ["llm.v1", "patterns.v1", "qa.v1", "tagger.v1"],
    "judge": ["openai.v1", "transformers.v1"],
    "similarity": ["bleu.v1", "bleurt.v1", "embedding.v1", "exact.v1", "meteor.v1", "ref-bleu.v1", "ref-meteor.v1",
                   "rouge1.v1", "verbatim.v1"],
    "sqc-complementer": ["nli.v1", "openai.v1"],
    "sqc-matcher": ["embedding.v1", "openai.v1"],
}


def test_listing_names_every_swappable_part_with_a_version():
    assert listing() == EXPECTED


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_every_target_imports_and_is_callable(kind):
    for name, target in CATALOG[kind].items():
        module, _, attr = target.partition(":")
        obj = getattr(importlib.import_module(module), attr)
        assert callable(obj), f"{kind} {name} -> {target}"
        assert registry(kind).get(name) is obj


def test_versions_resolve_to_the_newest_and_aliases_fold():
    reg = Registry("thing", {"a.v1": "json:dumps", "a.v2": "json:loads", "b.v1": "json:dumps"}, {"alias": "b"})
    assert reg.resolve("a") == "a.v2" and reg.resolve("a.v1") == "a.v1" and reg.resolve("alias") == "b.v1"
    assert reg.base("alias") == "b" and reg.bases() == ["a", "b"]
    import json

    assert reg.get("a") is json.loads and reg.get("a.v1") is json.dumps
    with pytest.raises(ConfigError, match=r"unknown thing 'a.v3' \(choose one of: a, b\)"):
        reg.resolve("a.v3")
    with pytest.raises(ConfigError, match="unknown thing 'c'"):
        reg.get("c")
    with pytest.raises(ValueError, match="carry a version"):
        reg.register("unversioned", "json:dumps")
    assert split_version("ref-bleu.v12") == ("ref-bleu", 12) and split_version("qa") == ("qa", None)


def test_specs_name_a_version_or_not():
    assert parse_spec("qa.v1:models/causal-qa") == Spec("qa.v1", "models/causal-qa")
    assert registry("extractor").resolve(parse_spec("qa:models/x").backend) == "qa.v1"
    assert registry("similarity").resolve("cosine") == "embedding.v1"
    with pytest.raises(ConfigError, match="no registry of 'triple store'"):
        registry("triple store")


def test_versioned_names_work_where_specs_are_read(tmp_path):
    from causalkg.core.config import load_config
    from causalkg.evaluation.graph.similarity import canonical_name, get_similarity
    from causalkg.evaluation.judging.consistency import normalize_judge
    from causalkg.evaluation.judging.sqc import build_complementer, build_matcher

    assert canonical_name("rouge1.v1=0.5".split("=")[0]) == "rouge1"
    assert get_similarity("exact.v1").score("a cat", "a cat") == 1.0
    cfg = load_config(overrides={"paths.cache": str(tmp_path), "llm.base_url": "http://127.0.0.1:9/v1"},
                      search_cwd=False)  # a local server needs no key; nothing is sent here
    assert type(build_matcher(cfg, "openai.v1:m")).__name__ == "LLMMatcher"
    assert type(build_complementer(cfg, "openai")).__name__ == "LLMComplementer"
    assert build_complementer(cfg, "none") is None
    with pytest.raises(ConfigError, match="unknown SQC matcher 'bm25'"):
        build_matcher(cfg, "bm25:x")
    assert str(normalize_judge("transformers.v1:models/gpt2")) == "transformers.v1:models/gpt2"


def test_registry_list_command():
    r = subprocess.run([sys.executable, "-m", "causalkg.cli", "registry", "list", "--kind", "extractor",
                        "--format", "csv"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["kind,name,aliases,target", "extractor,llm.v1,,causalkg.kg.extractors.llm:create",
                                     "extractor,patterns.v1,,causalkg.kg.extractors.patterns:create",
                                     "extractor,qa.v1,,causalkg.kg.extractors.qa:create",
                                     "extractor,tagger.v1,,causalkg.kg.extractors.tagger:create"]
    bad = subprocess.run([sys.executable, "-m", "causalkg.cli", "registry", "list", "--kind", "store"],
                         capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.startswith("error: no registry of 'store' (choose one of: ")


def test_versioned_spec_is_what_manifests_record():
    from causalkg.registry import versioned_spec

    assert versioned_spec("extractor", "qa:models/causal-qa") == "qa.v1:models/causal-qa"  # newest version
    assert versioned_spec("extractor", "patterns") == "patterns.v1"
    assert versioned_spec("extractor", "qa.v1:models/causal-qa") == "qa.v1:models/causal-qa"  # kept
    assert versioned_spec("extractor", Spec("llm", "m")) == "llm.v1:m"
    assert versioned_spec("similarity", "rouge") == "rouge1.v1"  # alias followed
    assert versioned_spec("similarity", "cosine:all-MiniLM-L6-v2") == "embedding.v1:all-MiniLM-L6-v2"
    assert versioned_spec("consistency-judge", "gpt-4o-mini", default_backend="openai") == "openai.v1:gpt-4o-mini"
    assert versioned_spec("export-target", "graph-store") == "graph-store.v1"
    with pytest.raises(ConfigError, match=r"unknown extractor 'bert' \(choose one of: llm, patterns, qa, tagger\)"):
        versioned_spec("extractor", "bert:x")
    with pytest.raises(ConfigError, match=r"unknown extractor 'qa.v9'"):
        versioned_spec("extractor", "qa.v9:x")
    assert versioned_spec("judge", "fake:m", keep_unknown=True) == "fake:m"  # a part handed in as an object
    with pytest.raises(ConfigError, match="no registry of 'store'"):
        versioned_spec("store", "x", keep_unknown=True)


def _plugin_distribution(root, entry_points: str) -> None:
    """A distribution installed by hand into ``root``: a module and its dist-info with entry points."""
    pkg = root / "ck_plugin_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "def create(arg, **kwargs):\n"
        "    return ('demo extractor', arg)\n", encoding="utf-8")
    info = root / "ck_plugin_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ck-plugin-demo\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def test_a_plugin_distribution_adds_a_part_through_its_entry_points(tmp_path):
    _plugin_distribution(tmp_path, "[causalkg.extractors]\n"
                                   "demo.v1 = ck_plugin_demo:create\n"
                                   "qa.v1 = ck_plugin_demo:create\n"
                                   "unversioned = ck_plugin_demo:create\n")
    code = ("import warnings\n"
            "warnings.simplefilter('always')\n"
            "from causalkg.registry import registry, versioned_spec\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    reg = registry('extractor')\n"
            "print(reg.names())\n"
            "print(reg.create('demo:some/model'))\n"
            "print(versioned_spec('extractor', 'demo:x'))\n"
            "print(reg.get('qa').__module__)\n"
            "print(sorted(str(x.message) for x in w))\n")
    env = {**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{REPO}"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    names, created, versioned, qa_module, warned = r.stdout.splitlines()
    assert names == "['demo.v1', 'llm.v1', 'patterns.v1', 'qa.v1', 'tagger.v1']"
    assert created == "('demo extractor', 'some/model')"
    assert versioned == "demo.v1:x"
    assert qa_module == "causalkg.kg.extractors.qa"  # a plugin cannot replace a built-in
    assert "qa.v1 is built in" in warned and "carry a version" in warned
    # The CLI lists it too.
    r = subprocess.run([sys.executable, "-m", "causalkg.cli", "registry", "list"], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert r.returncode == 0 and "demo.v1" in r.stdout, r.stdout + r.stderr
