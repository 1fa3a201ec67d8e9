"""``causalkg serve``: the options' checks and messages, and a real server process on 127.0.0.1."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError
from causalkg.web.serve import is_loopback, plan_serve
from tests.web.server import ServeProcess


def _cfg(**overrides):
    return load_config(search_cwd=False, overrides=overrides)


def test_loopback_by_default_and_remote_only_when_asked():
    plan, token = plan_serve(_cfg())
    assert (plan.host, plan.port, plan.read_only, token) == ("127.0.0.1", 8000, False, None)
    assert plan.allowed_hosts and "localhost" in plan.allowed_hosts
    with pytest.raises(ConfigError, match="not a loopback address.*--allow-remote"):
        plan_serve(_cfg(), host="0.0.0.0")
    plan, _ = plan_serve(_cfg(), host="0.0.0.0", allow_remote=True)
    assert plan.read_only and plan.allowed_hosts is None
    plan, token = plan_serve(_cfg(), host="0.0.0.0", allow_remote=True, token="t")
    assert not plan.read_only and token == "t"
    assert is_loopback("::1") and is_loopback("localhost") and is_loopback("127.0.0.2") and not is_loopback("10.0.0.1")


def test_token_from_the_environment(monkeypatch):
    monkeypatch.setenv("CAUSALKG_WEB_TOKEN", "from-env")
    plan, token = plan_serve(_cfg(), host="192.0.2.1", allow_remote=True)
    assert token == "from-env" and not plan.read_only and plan.token


def test_the_host_given_is_an_allowed_host_name():
    plan, _ = plan_serve(_cfg(), host="127.0.0.2")
    assert "127.0.0.2" in plan.allowed_hosts and "localhost" in plan.allowed_hosts
    plan, _ = plan_serve(_cfg(), host="::1")
    assert "[::1]" in plan.allowed_hosts


def test_cli_messages(cli, in_tmp):
    r = cli("serve", "--host", "0.0.0.0")
    assert r.code == 2 and r.err.startswith("error: 0.0.0.0 is not a loopback address") and "--allow-remote" in r.err
    r = cli("serve", "--dry-run")
    assert r.code == 0 and "http://127.0.0.1:8000/ (judgements accepted)" in r.out
    r = cli("serve", "--host", "0.0.0.0", "--allow-remote", "--dry-run")
    assert r.code == 0 and "read-only" in r.out
    r = cli("serve", "--host", "0.0.0.0", "--allow-remote", "--token", "x", "--dry-run")
    assert "judgements need the token" in r.out
    r = cli("serve", "--port", "70000", "--dry-run")
    assert r.code == 2 and r.err.strip() == "error: --port 70000 is out of range: must be an integer in [0, 65535]"


def _get(url: str, **headers: str) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


def test_a_real_server_answers_pages_and_sparql(kg_project, tmp_path):
    root, cfg = kg_project
    with ServeProcess(root / "data", "--judgements", str(tmp_path / "j.jsonl")) as srv:
        assert srv.url.startswith("http://127.0.0.1:")
        status, body = _get(srv.url + "/healthz")
        assert status == 200 and json.loads(body)["edges"] == 13
        status, body = _get(srv.url + "/concept/Q7944")
        assert status == 200 and "tsunami" in body
        q = urllib.parse.urlencode({"query": "SELECT ?x WHERE { wd:Q7944 ck:causes ?x }"})
        status, body = _get(srv.url + "/sparql?" + q, Accept="text/csv")
        assert status == 200 and body.splitlines()[0] == "x" and len(body.splitlines()) == 4
        # DNS rebinding: a loopback server answers loopback host names only
        status, _ = _get(srv.url + "/healthz", Host="attacker.example")
        assert status == 400


def test_the_server_says_how_to_stop_it_and_logs_each_request_unless_quiet(kg_project, tmp_path):
    root, _ = kg_project
    with ServeProcess(root / "data", "--judgements", str(tmp_path / "j.jsonl")) as srv:
        assert _get(srv.url + "/concept/Q7944")[0] == 200
        assert _get(srv.url + "/no/such/page")[0] == 404
    out = "".join(srv.lines)
    assert "; press Ctrl-C to stop" in out
    assert srv.proc.returncode == 143 and out.endswith(f"interrupted (SIGTERM): the server on port {srv.url.rsplit(':', 1)[1]} stopped\n")
    assert re.search(r"^GET /concept/Q7944 200 \d+ ms$", out, re.M), out
    assert re.search(r"^GET /no/such/page 404 \d+ ms$", out, re.M), out
    with ServeProcess(root / "data", "--quiet", "--judgements", str(tmp_path / "j.jsonl")) as srv:
        assert _get(srv.url + "/concept/Q7944")[0] == 200  # the address is still given
    assert "GET /" not in "".join(srv.lines)


def test_ck_serve_dry_run_returns_the_plan_and_the_application(kg_project, tmp_path):
    """``ck.serve(dry_run=True)`` checks the options and builds the app without serving it."""
    from starlette.testclient import TestClient

    import causalkg as ck

    _, cfg = kg_project
    r = ck.serve(port=0, judgements=tmp_path / "j.jsonl", dry_run=True, cfg=cfg)
    assert type(r) is ck.Serving and (r.host, r.port, r.read_only, r.token) == ("127.0.0.1", 0, False, False)
    assert str(r) == "serving the KG on http://127.0.0.1:0/ (judgements accepted)"
    assert json.loads(r.to_table("json"))["allowed_hosts"][:2] == ["127.0.0.1", "localhost"]
    with TestClient(r.app, base_url="http://127.0.0.1") as client:
        assert client.get("/").status_code == 200
    remote = ck.serve(host="0.0.0.0", allow_remote=True, dry_run=True, cfg=cfg)
    assert remote.read_only and "read-only" in str(remote)
    with pytest.raises(ConfigError, match="not a loopback address"):
        ck.serve(host="0.0.0.0", dry_run=True, cfg=cfg)
