"""Every HTTP client gives up on a server that trickles bytes, with its own timeout error.

A trickling server sends a byte every 50 ms: a per-read socket timeout never fires on it. Each
client must stop each attempt at its whole-request deadline (1 s here), retry per its policy
(one retry, no waiting) and fail with ``DeadlineExceeded`` naming the endpoint. Each call runs
under a watchdog thread set far above the deadline (60 s), which must never be what ends it.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from causalkg.core.errors import DeadlineExceeded
from causalkg.core.retry import RetryPolicy

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "snapshots" / "wikidata" / "wikidata-snapshot.nt.gz"
TRICKLE = 0.05  # seconds between bytes: far below every read timeout used here
DEADLINE = 1.0
WATCHDOG = 60.0
ONE_RETRY = RetryPolicy(max_retries=1, base=0.0, cap=0.0, jitter=False)


def under_watchdog(call: Callable[[], Any]) -> BaseException | Any:
    """Run ``call`` in a thread; return what it raised (or returned). Fails the test if the
    watchdog had to end the wait."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["value"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(WATCHDOG)
    assert not t.is_alive(), f"the client was still waiting after the watchdog's {WATCHDOG:g}s"
    return box["value"]


def test_sparql_client_gives_up_on_a_trickling_endpoint():
    from causalkg.corpus.queries import probe
    from causalkg.corpus.sparql import SPARQLClient
    from causalkg.testing.sparql_server import Fault, SPARQLServer

    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as server:
        server.always = Fault(trickle=TRICKLE)
        client = SPARQLClient(server.endpoint, user_agent="test/1.0 (t@example.org)", timeout=DEADLINE,
                              policy=ONE_RETRY, sleep=lambda s: None)
        exc = under_watchdog(lambda: client.select(probe()))
        assert isinstance(exc, DeadlineExceeded), exc
        assert str(exc).startswith(f"query 'probe' at {server.endpoint} failed after 2 attempts: "
                                   f"no complete answer within 1s (request deadline)")
        assert client.stats.requests == 2 and len(server.requests) == 2
        # The same endpoint answers normally once it stops trickling: the deadline is per request.
        server.always = None
        assert client.select(probe())["results"]["bindings"] is not None


def test_sparql_probe_is_bounded_by_the_probe_timeout():
    from causalkg.corpus.queries import probe
    from causalkg.corpus.sparql import SPARQLClient
    from causalkg.testing.sparql_server import Fault, SPARQLServer

    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as server:
        server.always = Fault(trickle=TRICKLE)
        client = SPARQLClient(server.endpoint, user_agent="test/1.0 (t@example.org)", timeout=600)
        reason = under_watchdog(lambda: client.probe(probe(), DEADLINE))
        assert reason == "no complete answer within 1s (request deadline)"


def test_corpus_build_auto_falls_back_when_the_probe_trickles(cli, in_tmp):
    from causalkg.testing.sparql_server import Fault, SPARQLServer

    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as server:
        server.always = Fault(trickle=TRICKLE)
        r = under_watchdog(lambda: cli(
            "corpus", "build", "--only", "wikidata", "--source", "auto",
            "--set", f"wikidata.endpoint={json.dumps(server.endpoint)}",
            "--set", f"wikidata.snapshot={json.dumps(str(SNAPSHOT))}",
            "--set", "wikidata.probe_timeout=1", "--set", "wikidata.timeout=600"))
        assert r.code == 0, r.err
        assert "no complete answer within 1s (request deadline)" in r.err
        assert "(source: snapshot" in r.out


def test_corpus_build_live_fails_with_one_line_naming_the_endpoint(cli, in_tmp):
    from causalkg.testing.sparql_server import Fault, SPARQLServer

    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as server:
        server.always = Fault(trickle=TRICKLE)
        r = under_watchdog(lambda: cli(
            "corpus", "build", "--only", "wikidata", "--source", "live",
            "--set", f"wikidata.endpoint={json.dumps(server.endpoint)}",
            "--set", "wikidata.timeout=1", "--set", "wikidata.max_retries=1",
            "--set", "wikidata.backoff_base=0", "--set", "wikidata.backoff_cap=0"))
        assert r.code == 1
        lines = r.err.strip().splitlines()
        # One warning for the retry, then one error line, the last.
        assert [line for line in lines if line.startswith("error:")] == [lines[-1]], r.err
        assert lines[-1].startswith("error: query '")
        assert f"at {server.endpoint} failed after 2 attempts: no complete answer within 1s" in lines[-1]


def test_llm_client_gives_up_on_a_trickling_server(openai_server):
    from causalkg.core.llm import ChatClient
    from causalkg.testing.openai_server import Fault

    openai_server.add_fault(Fault(trickle=TRICKLE), Fault(trickle=TRICKLE))
    client = ChatClient("test-model", base_url=openai_server.base_url, timeout=DEADLINE, policy=ONE_RETRY,
                        sleep=lambda s: None)
    exc = under_watchdog(lambda: client.chat("Is rain a cause of floods?"))
    assert isinstance(exc, DeadlineExceeded), exc
    assert str(exc).startswith(f"chat request to {openai_server.base_url} (model test-model) failed after "
                               f"2 attempts: no complete answer within 1s (request deadline)")
    assert openai_server.chat_requests == 2
    # With the faults used up the next request is answered: nothing stays broken.
    assert client.chat("Is rain a cause of floods?").text == "yes"


def test_llm_client_bounds_concurrent_requests_each(openai_server):
    from causalkg.core.llm import ChatClient, ChatRequest
    from causalkg.testing.openai_server import Fault

    openai_server.add_fault(*[Fault(trickle=TRICKLE)] * 4)
    client = ChatClient("test-model", base_url=openai_server.base_url, timeout=DEADLINE, policy=ONE_RETRY,
                        concurrency=4, sleep=lambda s: None)
    requests = [ChatRequest.of(f"question {i}") for i in range(4)]
    results = under_watchdog(lambda: client.chat_many(requests, return_exceptions=True))
    # Four first attempts trickle; their four retries are answered.
    assert [getattr(r, "text", None) for r in results] == ["yes"] * 4
    assert client.usage.retries == 4


def test_graph_store_client_gives_up_on_a_trickling_store():
    from causalkg.kg.graphstore import GraphStoreClient
    from causalkg.testing.virtuoso import FaultProxy, ProxyFault

    # The proxy answers the faults itself; its target is never reached.
    with FaultProxy("http://127.0.0.1:9") as proxy:
        proxy.add_fault(ProxyFault(trickle=TRICKLE), ProxyFault(trickle=TRICKLE))
        client = GraphStoreClient(proxy.url("/store"), auth="none", timeout=DEADLINE, policy=ONE_RETRY,
                                  sleep=lambda s: None)
        exc = under_watchdog(lambda: client.put("http://example.org/g", b"<a:x> <a:y> <a:z> .\n"))
        assert isinstance(exc, DeadlineExceeded), exc
        assert str(exc).startswith(f"PUT <http://example.org/g> at {proxy.url('/store')} failed after 2 attempts: "
                                   f"no complete answer within 1s (request deadline)")
        assert [s.method for s in proxy.seen] == ["PUT", "PUT"]


def test_a_network_deadline_bounds_a_whole_command_retries_included(cli, in_tmp):
    """``run.network_deadline``: with a request timeout of 600 s and 5 retries, a trickling
    endpoint still ends the command at the command's deadline, with one line."""
    from causalkg.testing.sparql_server import Fault, SPARQLServer

    with SPARQLServer.from_ntriples_gz(SNAPSHOT) as server:
        server.always = Fault(trickle=TRICKLE)
        r = under_watchdog(lambda: cli(
            "--set", "run.network_deadline=2", "corpus", "build", "--only", "wikidata", "--source", "live",
            "--set", f"wikidata.endpoint={json.dumps(server.endpoint)}",
            "--set", "wikidata.timeout=600", "--set", "wikidata.max_retries=5"))
        assert r.code == 1
        lines = r.err.strip().splitlines()
        assert [line for line in lines if line.startswith("error:")] == [lines[-1]], r.err
        assert f"at {server.endpoint}: the network deadline of the command (run.network_deadline = 2s)" in lines[-1]
        # the one request got what was left of the 2 s when it started
        assert re.search(r"last attempt: no complete answer within (1(\.\d+)?|2)s \(request deadline\)", lines[-1])
        assert len(server.requests) == 1


def test_the_network_deadline_stops_retries_of_the_llm_client(openai_server):
    from causalkg.core.deadline import stage_deadline
    from causalkg.core.llm import ChatClient
    from causalkg.testing.openai_server import Fault

    openai_server.add_fault(*[Fault(status=503)] * 10)
    waits: list[float] = []
    client = ChatClient("test-model", base_url=openai_server.base_url, timeout=600,
                        policy=RetryPolicy(max_retries=8, base=1000.0, cap=1000.0, jitter=False), sleep=waits.append)
    with stage_deadline(30):
        exc = under_watchdog(lambda: client.chat("Is rain a cause of floods?"))
    assert isinstance(exc, DeadlineExceeded), exc
    assert "leaves no time for another attempt (last attempt: HTTP 503)" in str(exc)
    assert waits == [] and openai_server.chat_requests == 1  # a 1000 s backoff does not fit in 30 s


def test_eval_precision_against_a_trickling_judge_fails_those_pairs_in_bounded_time(cli, in_tmp, openai_server):
    """The issue's case: ``eval precision`` with ``llm.timeout`` against a judge that trickles.
    The trickled pair is ``failed`` (never guessed) once its retries are spent, the other is
    judged, and the command ends with one error line naming the endpoint."""
    from causalkg.testing.openai_server import Fault

    kg = in_tmp / "kg.jsonl"
    kg.write_text("".join(json.dumps(x) + "\n" for x in [
        {"cause": {"label": "earthquake", "id": ["Q7944"]}, "effect": {"label": "tsunami", "id": ["Q8070"]}},
        {"cause": {"label": "war", "id": ["Q198"]}, "effect": {"label": "famine", "id": ["Q168247"]}},
    ]), encoding="utf-8")
    openai_server.add_fault(Fault(trickle=TRICKLE), Fault(trickle=TRICKLE))
    r = under_watchdog(lambda: cli(
        "eval", "precision", "--kg", kg, "--judge", "openai:test-model", "--tries", "1",
        "--set", f"llm.base_url={json.dumps(openai_server.base_url)}", "--set", "llm.timeout=1",
        "--set", "llm.max_retries=1", "--set", "llm.backoff_base=0", "--set", "llm.backoff_cap=0",
        "--set", "llm.concurrency=1"))
    assert r.code == 1
    lines = r.err.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], r.err
    assert lines[-1].startswith("error: 1 of 2 pairs could not be judged (first error: chat request to "
                                f"{openai_server.base_url} (model test-model) failed after 2 attempts: "
                                "no complete answer within 1s (request deadline))")
    # an incomplete run is written beside (here: instead of) a complete result, never over one
    out = in_tmp / "data" / "eval" / "precision"
    assert not (out / "precision.json").exists()
    report = json.loads((out / "precision.partial.json").read_text(encoding="utf-8"))
    full = report["rows"][0]
    assert (full["pairs"], full["judged"], full["failed"]) == (2, 1, 1)
    assert openai_server.chat_requests == 3  # the trickled pair twice, the other once
