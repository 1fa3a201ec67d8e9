"""The Ray engine's tests proper, run by tests/causalkg/test_ray_engine.py in a child process
inside a network namespace that has only loopback (this file is not collected on its own: its
name does not start with test_). CAUSALKG_RAY_TMP is the outer test's tmp folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from causalkg.core.config import load_config

if os.environ.get("CAUSALKG_RAY_CHILD") != "1":
    pytest.skip("run by test_ray_engine.py inside a loopback-only namespace", allow_module_level=True)


# --- inside the namespace --------------------------------------------------------------------


@pytest.fixture(scope="module")
def world():
    from causalkg.testing.world import make_world

    root = Path(os.environ["CAUSALKG_RAY_TMP"])
    info = make_world(root / "world", events=10, others=30, seed=5)
    return root, info


def cfg_for(root: Path, info: dict, name: str, **more):
    overrides = dict(s.split("=", 1) for s in info["set"])
    overrides.update({"paths.data": str(root / name / "data"), "paths.cache": str(root / name / "cache"),
                      "run.workers": 2, "run.ray_temp_dir": str(root / "ray"), "extract.extractor": "patterns",
                      "extract.gate.kind": "cues",
                      "extract.shard_size": 2, "extract.input": str(root / "local" / "data" / "corpus" / "corpus.jsonl"),
                      "extract.output": str(root / name / "data" / "kg" / "extractions.jsonl")})
    overrides.update(more)
    return load_config(search_cwd=False, overrides=overrides)


@pytest.fixture(scope="module")
def cluster(world):
    import ray

    root, info = world
    import socket

    (root / "interfaces.json").write_text(json.dumps(sorted(name for _, name in socket.if_nameindex())))
    from causalkg.core.distributed import RaySettings, ensure_ray

    ensure_ray(RaySettings.from_config(cfg_for(root, info, "x")))
    assert ray.is_initialized()
    assert ray.cluster_resources().get("CPU") == 2
    node = ray.nodes()[0]
    assert node["NodeManagerAddress"] == "127.0.0.1"
    assert Path(ray._private.worker._global_node.get_session_dir_path()).is_relative_to(root / "ray")

    @ray.remote
    def niceness() -> int:
        return os.nice(0)

    assert ray.get(niceness.remote()) == 0  # the workers share the CPU like the local engine's (Ray's default: 15)
    yield ray
    ray.shutdown()


def test_inner_corpus_build_is_the_same_on_ray(world, cluster):
    from causalkg.corpus.build import build

    root, info = world
    build(cfg_for(root, info, "local"), source="snapshot")
    build(cfg_for(root, info, "ray", **{"run.engine": "ray"}), source="snapshot")
    a = (root / "local" / "data" / "corpus" / "corpus.jsonl").read_bytes()
    assert a == (root / "ray" / "data" / "corpus" / "corpus.jsonl").read_bytes()
    assert a.count(b"\n") == 10
    manifest = json.loads((root / "ray" / "data" / "corpus" / "manifest.json").read_text())
    assert "ray" in json.dumps(manifest)


def test_inner_extraction_is_the_same_on_ray_with_a_retry(world, cluster):
    from causalkg.kg.extract import extract
    from causalkg.testing.flaky import FlakyFactory

    root, info = world
    local = extract(cfg_for(root, info, "local"))
    assert local.documents == 10 and local.counts["shards"] == 5
    docs = [json.loads(x) for x in Path(local.plan["input"]).read_text().splitlines()]
    marker = root / "fail-once"
    marker.write_text("x")
    cfg = cfg_for(root, info, "ray1", **{"run.engine": "ray"})
    result = extract(cfg, extractor_factory=FlakyFactory(cfg, "patterns", str(marker), str(docs[5]["id"])))
    assert not marker.exists()  # the fault happened, in an actor
    assert result.output.read_bytes() == local.output.read_bytes()
    manifest = json.loads(result.manifest_path.read_text())
    assert manifest["engine"] == "ray" and manifest["ray"]["retries"] == 1 and manifest["ray"]["actors"] == 2


def test_inner_a_stopped_driver_resumes_from_finished_shards(world, cluster):
    from causalkg.core.errors import SourceError
    from causalkg.kg.extract import extract
    from causalkg.testing.flaky import FlakyFactory

    root, info = world
    local_out = (root / "local" / "data" / "kg" / "extractions.jsonl")
    docs = [json.loads(x) for x in (root / "local" / "data" / "corpus" / "corpus.jsonl").read_text().splitlines()]
    marker = root / "fail-always"
    marker.write_text("x")
    cfg = cfg_for(root, info, "ray2", **{"run.engine": "ray", "run.ray_max_retries": 1})
    with pytest.raises(SourceError, match="shard 00003 failed 2 times"):
        extract(cfg, extractor_factory=FlakyFactory(cfg, "patterns", str(marker), str(docs[7]["id"]), once=False))
    shards = root / "ray2" / "data" / "kg" / "extractions.shards"
    done = sorted(p.name for p in shards.glob("*.done.json"))
    assert "00000.done.json" in done and "00003.done.json" not in done
    result = extract(cfg)  # the fault is gone: the rerun does the rest only
    assert result.counts["shards_resumed"] == len(done) >= 3
    assert result.output.read_bytes() == local_out.read_bytes()


def test_inner_link_build_is_the_same_on_ray(world, cluster):
    from causalkg.linking.index import build_index

    root, info = world
    local = cfg_for(root, info, "local")
    ray_cfg = cfg_for(root, info, "ray", **{"run.engine": "ray"})
    concepts = root / "local" / "data" / "wikidata" / "concepts.jsonl"
    build_index(local, concepts_path=concepts)
    result = build_index(ray_cfg, concepts_path=concepts)
    assert result["built"]
    a, b = root / "local" / "data" / "linking", root / "ray" / "data" / "linking"
    for name in ("index.faiss", "surfaces.jsonl", "concepts.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    manifest = json.loads((b / "manifest.json").read_text())
    assert manifest["engine"] == "ray" and manifest["ray"]["tasks"] >= 1


def test_inner_assemble_links_on_ray_to_the_local_bytes_and_resumes(world, cluster):
    """kg assemble's linking on an actor pool (one linker per actor): linked/ and the KG files
    are the local engine's bytes; shards lost after a run are relinked on Ray, the same again."""
    from causalkg.kg.assemble import assemble

    root, info = world
    data = root / "local" / "data"

    def run(name, **more):
        cfg = cfg_for(root, info, "local", **{"kg.shard_size": 3, **more})
        return assemble(cfg, extractions=data / "kg" / "extractions.jsonl", out=root / name, force=True)

    def files(out):
        gen = (out / "current").resolve()
        found = {f"linked/{p.name}": p.read_bytes() for p in sorted((out / "linked").iterdir())}
        found.update({str(p.relative_to(gen)): p.read_bytes() for p in sorted(gen.rglob("*"))
                      if p.is_file() and p.name not in ("manifest.json", ".readers.lock")})
        return found

    local = files(run("asm-local", **{"run.workers": 1}).out)
    assert len([n for n in local if n.startswith("linked/shard-") and n.endswith(".jsonl")]) >= 2
    result = run("asm-ray", **{"run.engine": "ray"})
    assert files(result.out) == local
    n = len([n for n in local if n.startswith("linked/shard-") and n.endswith(".done.json")])
    linking = json.loads((result.out / "manifest.json").read_text())["linking"]
    assert linking["where"] == "ray" and linking["shards"] == n and linking["shards_resumed"] == 0
    # the corpus pages' structured pairs too, in groups, on the actors after the shards
    groups = linking["structured_groups"]
    assert groups >= 1 and linking["ray"]["tasks"] == n + groups and linking["ray"]["retries"] == 0
    assert linking["structured"] == "ray" and "linked/structured-00000.jsonl" in local  # on an actor, not the driver
    linked = result.out / "linked"
    (linked / "shard-00001.jsonl").unlink()
    (linked / "shard-00001.done.json").unlink()
    (result.out / "current" / "manifest.json").unlink()  # as if killed while linking: nothing published
    shards = []
    cfg = cfg_for(root, info, "local", **{"kg.shard_size": 3, "run.engine": "ray"})
    assemble(cfg, extractions=data / "kg" / "extractions.jsonl", out=root / "asm-ray",
             hook=lambda e, i: shards.append(i["index"]) if e == "shard" else 0)
    assert shards == [1]
    assert files(result.out) == local
    linking = json.loads((result.out / "manifest.json").read_text())["linking"]
    assert linking["shards_resumed"] == n - 1 and linking["structured_resumed"] == groups
    assert linking["ray"]["tasks"] == 1


KILLED_DRIVER = """
import json, sys
from causalkg.core.config import load_config
from causalkg.kg.extract import extract
from causalkg.testing.flaky import FlakyFactory
overrides, marker, doc = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
cfg = load_config(search_cwd=False, overrides=overrides)
extract(cfg, extractor_factory=FlakyFactory(cfg, "patterns", marker, doc, block=True))
"""


def test_inner_a_killed_driver_resumes_from_finished_shards(world, cluster):
    """A driver (its own local cluster) killed with SIGKILL while shard 3 is held in an actor:
    the rerun does only the shards it had not written, and the output is the local bytes."""
    import signal
    import subprocess
    import sys
    import time

    from causalkg.kg.extract import extract

    root, info = world
    local_out = root / "local" / "data" / "kg" / "extractions.jsonl"
    docs = [json.loads(x) for x in (root / "local" / "data" / "corpus" / "corpus.jsonl").read_text().splitlines()]
    marker = root / "hold"
    marker.write_text("x")
    cfg = cfg_for(root, info, "ray3", **{"run.engine": "ray"})
    over = {"paths.data": str(root / "ray3" / "data"), "paths.cache": str(root / "ray3" / "cache"),
            "run.workers": 2, "run.engine": "ray", "run.ray_temp_dir": str(root / "rk"),
            "extract.extractor": "patterns", "extract.shard_size": 2, "extract.gate.kind": "cues",
            "extract.input": str(root / "local" / "data" / "corpus" / "corpus.jsonl"),
            "extract.output": str(root / "ray3" / "data" / "kg" / "extractions.jsonl")}
    # its own session, so the kill takes its local cluster's processes with it
    driver = subprocess.Popen([sys.executable, "-c", KILLED_DRIVER, json.dumps(over), str(marker), str(docs[6]["id"])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    shards = root / "ray3" / "data" / "kg" / "extractions.shards"
    try:
        while not (shards / "00002.done.json").exists():  # shards 0-2 written, shard 3 held
            assert driver.poll() is None, "the driver ended before it was killed"
            time.sleep(0.1)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    assert not (shards / "00003.done.json").exists()
    marker.unlink()
    result = extract(cfg)
    assert result.counts["shards_resumed"] == 3
    assert result.output.read_bytes() == local_out.read_bytes()
