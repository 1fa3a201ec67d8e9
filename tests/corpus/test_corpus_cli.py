"""`causalkg corpus build` through the CLI (the `cli` fixture): outputs, summaries, and the one
error line for each bad input. The Wikipedia half is another module; these runs use
--only wikidata."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from causalkg.core.config import CHECKOUT_ROOT

from causalkg.testing.sparql_server import Fault, SPARQLServer

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
SNAP = ("--set", f"wikidata.snapshot={json.dumps(str(SNAPSHOT))}")
FAST = ("--set", "wikidata.backoff_base=0.0", "--set", "wikidata.max_retries=1")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as s:
        yield s


def error_lines(err: str) -> list[str]:
    """The ``error:`` lines of stderr; the CLI prints exactly one, as its last line."""
    lines = err.splitlines()
    found = [line for line in lines if line.startswith("error:")]
    assert lines and lines[-1] == found[-1]
    return found


def wikidata_files(root: Path) -> list[str]:
    folder = root / "data" / "wikidata"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_build_from_the_snapshot(cli, in_tmp):
    r = cli("corpus", "build", "--only", "wikidata", "--source", "snapshot", *SNAP)
    assert r.code == 0, r.err
    out = in_tmp / "data" / "wikidata"
    lines = r.out.splitlines()
    assert lines[0] == f"wikidata (source: snapshot, snapshot:{SNAPSHOT}):"
    assert lines[1] == f"  {out / 'event_classes.jsonl'}: 50 event classes (50 seed, 0 discovered)"
    assert lines[2] == f"  {out / 'concepts.jsonl'}: 904 concepts (307 classes, 597 instances, 8 with an enwiki title)"
    assert lines[3] == f"  {out / 'base_kg.jsonl'}: 50 lines, 427 class pairs, 399 instance pairs"
    assert any(line.startswith("  note: not computed: event class discovery") for line in lines)
    assert wikidata_files(in_tmp) == ["base_kg.jsonl", "concepts.jsonl", "event_classes.jsonl", "manifest.json"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"] == "snapshot" and manifest["stage"] == "corpus.wikidata"
    assert manifest["inputs"]["snapshot"]["path"] == str(SNAPSHOT)
    assert manifest["counts"]["concepts_instance"] == 597
    assert {n["what"].split(" ")[0] for n in manifest["not_computed"]} == {"wikinews_instances", "event", "descriptions"}
    assert r.err == ""


def test_auto_falls_back_to_the_snapshot_loudly(cli, in_tmp):
    endpoint = f"http://127.0.0.1:{closed_port()}/sparql"
    r = cli("corpus", "build", "--only", "wikidata", "--endpoint", endpoint, *SNAP)
    assert r.code == 0, r.err
    assert r.err.startswith(f"warning: the Wikidata endpoint {endpoint} did not answer (cannot connect: ")
    assert "using the bundled snapshot" in r.err
    assert "(source: snapshot" in r.out
    manifest = json.loads((in_tmp / "data" / "wikidata" / "manifest.json").read_text())
    assert manifest["source_reason"].startswith(f"{endpoint} did not answer the probe")


def test_auto_without_an_endpoint_uses_the_snapshot_and_says_so(cli, in_tmp):
    r = cli("corpus", "build", "--only", "wikidata", "--set", 'wikidata.endpoint=""', *SNAP)
    assert r.code == 0, r.err
    assert r.err == f"warning: no Wikidata endpoint configured: using the bundled snapshot {SNAPSHOT}\n"
    assert "(source: snapshot" in r.out


def test_live_build_and_a_cached_rerun(cli, in_tmp, server):
    args = ("corpus", "build", "--only", "wikidata", "--source", "live", "--endpoint", server.endpoint,
            "--set", "wikidata.counts=never", *SNAP)
    r = cli(*args)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0] == f"wikidata (source: live, {server.endpoint}):"
    sent = len(server.requests)
    assert f"queries: {sent}, HTTP requests: {sent}, cache hits: 0, retries: 0" in r.out
    r = cli(*args)
    assert r.code == 0 and len(server.requests) == sent
    assert f"queries: {sent}, HTTP requests: 0, cache hits: {sent}, retries: 0" in r.out
    r = cli(*args, "--force")
    assert r.code == 0 and len(server.requests) == 2 * sent
    r = cli(*args, "--refresh")  # the old name: still works, and says so
    assert r.code == 0 and len(server.requests) == 3 * sent
    assert r.err.splitlines()[0] == "warning: --refresh is deprecated; use --force"


def test_dry_run_prints_the_plan_and_writes_nothing(cli, in_tmp, server):
    r = cli("corpus", "build", "--only", "wikidata", "--dry-run", "--endpoint", server.endpoint)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[:3] == ["dry run: nothing written", "wikidata plan:",
                         f"  source: auto: would probe {server.endpoint}, falling back to the bundled snapshot"]
    # The bundled snapshot is found in the checkout from any working directory.
    assert lines[3] == f"  fallback snapshot: {CHECKOUT_ROOT / 'snapshots' / 'wikidata' / 'wikidata-snapshot.nt.gz'}"
    assert "  seed classes: 50 (Q180684, Q2727213, Q3199915, Q21480300, Q744913, ...)" in lines
    assert f"  write: {in_tmp / 'data' / 'wikidata' / 'base_kg.jsonl'}" in lines
    assert server.requests == [] and not (in_tmp / "data").exists()


def test_dry_run_checks_the_snapshot_and_the_endpoint(cli, in_tmp):
    r = cli("corpus", "build", "--only", "wikidata", "--dry-run", "--source", "snapshot",
            "--set", "wikidata.snapshot=gone/wikidata-snapshot.nt.gz")
    assert r.code == 1 and r.err.startswith("error: the bundled Wikidata snapshot is missing: ")
    r = cli("corpus", "build", "--only", "wikidata", "--dry-run", "--source", "live", "--endpoint", "query.wikidata.org")
    assert r.code == 1
    assert r.err == "error: SPARQL endpoint 'query.wikidata.org' is not an http(s) URL (set wikidata.endpoint)\n"
    r = cli("corpus", "build", "--only", "wikidata", "--dry-run", "--source", "snapshot", *SNAP)
    assert r.code == 0 and f"  source: snapshot {SNAPSHOT}" in r.out.splitlines()


def test_an_invalid_qid_in_the_config_is_one_error_line(cli, in_tmp):
    (in_tmp / "causalkg.toml").write_text('[wikidata]\nseed_classes = ["Q198", "Q7944x"]\n')
    r = cli("corpus", "build", "--only", "wikidata", "--source", "snapshot", *SNAP)
    assert r.code == 2
    assert r.err == ("error: wikidata.seed_classes[1]: 'Q7944x' is not a Wikidata item id "
                     "(Q followed by digits, e.g. Q198)\n")
    assert r.out == "" and wikidata_files(in_tmp) == []


def test_an_invalid_pid_in_the_config_is_one_error_line(cli, in_tmp):
    r = cli("corpus", "build", "--only", "wikidata", "--source", "snapshot", *SNAP,
            "--set", 'wikidata.cause_object_properties=["P828", "has cause"]')
    assert r.code == 2
    assert r.err == ("error: wikidata.cause_object_properties[1]: 'has cause' is not a Wikidata property id "
                     "(P followed by digits, e.g. P1542)\n")


def test_a_malformed_results_document_is_one_error_line_and_no_output(cli, in_tmp, server):
    server.always = Fault(body=b'{"head": {"vars": ["item"]}, "results": {}}')
    r = cli("corpus", "build", "--only", "wikidata", "--source", "live", "--endpoint", server.endpoint, *FAST)
    assert r.code == 1
    # the retry is logged as it happens; the failure is one error line, last
    assert error_lines(r.err) == [
        f"error: query 'discover event classes (page 1)' at {server.endpoint} failed after 2 attempts: "
        "malformed results document: no 'results.bindings' list "
        "(check the endpoint, or raise max_retries / backoff in the config)"]
    assert r.err.splitlines()[0].endswith("malformed results document: no 'results.bindings' list; retry 1/1 in 0.0s")
    assert wikidata_files(in_tmp) == []


def test_an_unreachable_endpoint_is_one_error_line_and_no_output(cli, in_tmp):
    endpoint = f"http://127.0.0.1:{closed_port()}/sparql"
    r = cli("corpus", "build", "--only", "wikidata", "--source", "live", "--endpoint", endpoint, *FAST)
    assert r.code == 1
    [line] = error_lines(r.err)
    assert line.startswith(f"error: query 'discover event classes (page 1)' at {endpoint} failed after 2 attempts: "
                           "cannot connect: ")
    assert wikidata_files(in_tmp) == []


def test_a_missing_snapshot_is_one_error_line(cli, in_tmp):
    r = cli("corpus", "build", "--only", "wikidata", "--source", "snapshot", "--set", "wikidata.snapshot=nowhere.nt.gz")
    assert r.code == 1
    assert r.err == (f"error: the bundled Wikidata snapshot is missing: {in_tmp / 'nowhere.nt.gz'} "
                     "(set wikidata.snapshot, or rebuild it with scripts/build_wikidata_snapshot.py)\n")


def test_live_without_an_endpoint_is_a_usage_error(cli, in_tmp):
    r = cli("corpus", "build", "--only", "wikidata", "--source", "live", "--set", 'wikidata.endpoint=""')
    assert r.code == 2
    assert r.err == "error: --source live needs an endpoint (set wikidata.endpoint or pass --endpoint URL)\n"


def test_wikipedia_only_needs_the_concepts_first(cli, in_tmp):
    r = cli("corpus", "build", "--only", "wikipedia")
    assert r.code == 1
    assert r.err == (f"error: no concepts file at {in_tmp / 'data' / 'wikidata' / 'concepts.jsonl'} "
                     "(build the Wikidata part first: causalkg corpus build --only wikidata)\n")


def test_bad_choices_are_refused_by_the_parser(cli, in_tmp):
    r = cli("corpus", "build", "--source", "dump")
    assert r.code == 2 and "argument --source: invalid choice: 'dump'" in r.err
    r = cli("corpus", "build", "--workers", "many")
    assert r.code == 2 and "argument --workers: invalid int value: 'many'" in r.err


def test_help_lists_the_options(cli):
    r = cli("corpus", "build", "--help")
    assert r.code == 0
    for flag in ("--source", "--endpoint", "--force", "--dry-run", "--only", "--dump", "--index", "--select",
                 "--workers"):
        assert flag in r.out
