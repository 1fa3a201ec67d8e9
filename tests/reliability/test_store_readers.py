"""Readers of the embedded store beside a writer: queries during exports (a real subprocess
export in a loop) always answer correctly or say clearly why not, never a traceback; SERVICE is
refused in local queries (no outbound request), unless explicitly allowed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import CausalKGError, ConfigError
from causalkg.kg import store as K

from tests.conftest import REPO
from tests.reliability.conftest import KG_GRAPH, assemble_args, ck, project

EXPORTS = 4  # bounded: the loop below runs while these exports run, and a fixed number after
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = project(tmp_path_factory.mktemp("readers"))
    assert ck(root, *assemble_args()).returncode == 0
    done = ck(root, "kg", "export")
    assert done.returncode == 0, done.stderr
    cfg = load_config(search_cwd=False, overrides={"paths.data": str(root / "data")})
    return root, cfg


def test_queries_during_exports_answer_or_say_why_never_a_traceback(exported):
    root, cfg = exported
    expected = K.query(cfg, COUNT).values()[0]["n"]
    assert expected == K.store_counts(cfg)[KG_GRAPH] > 300
    env = {**os.environ, "CAUSALKG_PROGRESS": "never", "PYTHONPATH": str(REPO)}
    script = ("import sys\nfrom causalkg.cli import main\n"
              f"for _ in range({EXPORTS}):\n"
              f"    code = main(['--set', 'paths.data={root / 'data'}', 'kg', 'export', '--force'])\n"
              "    assert code == 0\n")
    writer = subprocess.Popen([sys.executable, "-c", script], cwd=root, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers, refusals, during = 0, [], 0
    try:
        while writer.poll() is None and during < 400:  # in-process reads while the exports run
            during += 1
            try:
                assert K.query(cfg, COUNT).values()[0]["n"] == expected
                answers += 1
            except CausalKGError as exc:  # a clear, single-line refusal is allowed; wrong data is not
                refusals.append(str(exc))
        cli_runs = []
        for _ in range(3):  # the CLI too: an answer or one error line
            out = ck(root, "kg", "query", COUNT, "--format", "json")
            cli_runs.append(out)
    finally:
        _, err = writer.communicate(timeout=600)
    assert writer.returncode == 0, err
    print(f"reads during exports: {during}, answered {answers}, refused {len(refusals)}")
    assert answers >= 1
    assert all("\n" not in r for r in refusals), refusals
    for out in cli_runs:
        assert "Traceback" not in out.stderr
        if out.returncode == 0:
            assert json.loads(out.stdout)["results"]["bindings"][0]["n"]["value"] == str(expected)
        else:
            assert out.stderr.startswith("error: "), out.stderr
    # after the loop: one current generation, at most one older one, no half-built folder left
    gens = root / "data" / "store" / "generations"
    assert len([p for p in gens.iterdir() if not p.name.startswith(".")]) <= 2
    assert K.query(cfg, COUNT).values()[0]["n"] == expected


class _Recorder(BaseHTTPRequestHandler):
    hits: list[str] = []

    def _answer(self) -> None:
        type(self).hits.append(self.path)
        body = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": [
            {"x": {"type": "literal", "value": "from the service"}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._answer()

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def service():
    _Recorder.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sparql"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("template", [
    "SELECT ?x WHERE {{ SERVICE <{url}> {{ ?s ?p ?x }} }}",
    "select ?x where {{ service silent <{url}> {{ ?s ?p ?x }} }}",
    "SELECT ?x WHERE {{ \\u0053ERVICE <{url}> {{ ?s ?p ?x }} }}",
    "PREFIX s: <http://example.org/>\nSELECT ?x WHERE {{ # a comment with SERVICE\n  SeRvIcE <{url}> {{ ?s ?p ?x }} }}",
])
def test_service_is_refused_before_any_request(exported, service, template):
    root, cfg = exported
    sparql = template.format(url=service)
    with pytest.raises(ConfigError, match="SERVICE"):
        K.query(cfg, sparql)
    out = ck(root, "kg", "query", sparql)
    assert out.returncode != 0
    assert out.stderr.startswith("error: ") and "SERVICE" in out.stderr and "Traceback" not in out.stderr
    assert _Recorder.hits == []


def test_service_runs_only_when_allowed(exported, service):
    root, cfg = exported
    sparql = f"SELECT ?x WHERE {{ SERVICE <{service}> {{ ?s ?p ?x }} }}"
    out = ck(root, "kg", "query", "--allow-service", sparql, "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"]["bindings"][0]["x"]["value"] == "from the service"
    assert len(_Recorder.hits) >= 1


@pytest.mark.parametrize("sparql", [
    'SELECT ?service WHERE { ?service ?p "SERVICE" }',
    "PREFIX service: <http://example.org/>\nSELECT ?x WHERE { ?x service:SERVICE ?y } # SERVICE",
    "SELECT ?x WHERE { ?x <http://example.org/SERVICE> ?y }",
])
def test_the_word_service_elsewhere_is_not_refused(exported, sparql):
    _, cfg = exported
    assert not K.uses_service(sparql)
    assert K.query(cfg, sparql).kind == "select"
