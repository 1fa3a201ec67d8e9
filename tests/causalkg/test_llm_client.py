"""The shared chat client against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import pytest

from causalkg.core.cache import DiskCache
from causalkg.core.config import load_config
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.llm import ChatClient, ChatRequest, resolve_api_key
from causalkg.core.retry import RetryPolicy, parse_retry_after
from causalkg.testing.openai_server import Fault, last_user_message


def echo(body):
    return "answer to: " + last_user_message(body)


def make_client(server, tmp_path, waits=None, **kw):
    return ChatClient(
        "test-model",
        base_url=server.base_url,
        timeout=kw.pop("timeout", 5.0),
        policy=RetryPolicy(max_retries=kw.pop("max_retries", 3), base=0.5, cap=30.0),
        cache=DiskCache(tmp_path / "llm.sqlite"),
        prices={"test-model": [1.0, 2.0]},
        sleep=(waits.append if waits is not None else (lambda s: None)),
        **kw,
    )


def test_answers_are_cached_on_disk_across_clients(openai_server, tmp_path):
    openai_server.responder = echo
    client = make_client(openai_server, tmp_path)
    r = client.chat("Could war result in famine?")
    assert r.text == "answer to: Could war result in famine?" and not r.cached
    assert r.prompt_tokens == 5 and r.completion_tokens == 7
    again = make_client(openai_server, tmp_path).chat("Could war result in famine?")
    assert again.cached and again.text == r.text
    assert openai_server.chat_requests == 1
    assert client.usage.cost_usd == pytest.approx((5 * 1.0 + 7 * 2.0) / 1e6)


def test_try_index_and_params_are_part_of_the_key(openai_server, tmp_path):
    openai_server.responder = echo
    client = make_client(openai_server, tmp_path)
    reqs = [ChatRequest.of("q", temperature=0.7, seed=i, try_index=i) for i in range(3)]
    reqs.append(ChatRequest.of("q", temperature=0.7, seed=0, try_index=0))  # duplicate of the first
    out = client.chat_many(reqs)
    assert len(out) == 4 and openai_server.chat_requests == 3
    assert [b["seed"] for b in sorted(openai_server.requests, key=lambda b: b["seed"])] == [0, 1, 2]
    assert all(b["temperature"] == 0.7 for b in openai_server.requests)


def test_429_honours_retry_after_then_succeeds(openai_server, tmp_path):
    openai_server.responder = echo
    openai_server.add_fault(Fault(status=429, retry_after=7), Fault(status=503))
    waits: list[float] = []
    client = make_client(openai_server, tmp_path, waits)
    assert client.chat("hello").text == "answer to: hello"
    assert waits[0] == 7.0  # the server's Retry-After, not our backoff
    assert 0.25 <= waits[1] <= 1.0  # backoff with jitter: base 0.5 * 2**1, at least half
    assert client.usage.retries == 2 and client.usage.requests == 1
    assert openai_server.chat_requests == 3


def test_truncated_and_malformed_bodies_are_retried(openai_server, tmp_path):
    openai_server.responder = echo
    openai_server.add_fault(Fault(truncate=True), Fault(malformed=True))
    client = make_client(openai_server, tmp_path)
    assert client.chat("x").text == "answer to: x"
    assert client.usage.retries == 2


def test_slow_answer_past_timeout_is_retried(openai_server, tmp_path):
    openai_server.responder = echo
    openai_server.add_fault(Fault(delay=1.5))
    client = make_client(openai_server, tmp_path, timeout=0.3)
    assert client.chat("slow").text == "answer to: slow"
    assert client.usage.retries == 1


def test_gives_up_after_bounded_retries_naming_the_endpoint(openai_server, tmp_path):
    openai_server.add_fault(*[Fault(status=500)] * 5)
    client = make_client(openai_server, tmp_path, max_retries=2)
    with pytest.raises(SourceError) as exc:
        client.chat("x")
    assert openai_server.base_url in str(exc.value) and "3 attempts" in str(exc.value)
    assert openai_server.chat_requests == 3


def test_client_errors_fail_at_once(openai_server, tmp_path):
    openai_server.add_fault(Fault(status=404, message="model not found"))
    client = make_client(openai_server, tmp_path)
    with pytest.raises(SourceError, match="HTTP 404"):
        client.chat("x")
    assert openai_server.chat_requests == 1


def test_chat_many_keeps_order_and_can_return_exceptions(openai_server, tmp_path):
    openai_server.responder = echo
    client = make_client(openai_server, tmp_path, concurrency=4, max_retries=0)
    openai_server.add_fault(Fault(status=400))
    out = client.chat_many([ChatRequest.of(f"p{i}") for i in range(8)], return_exceptions=True)
    assert sum(isinstance(r, Exception) for r in out) == 1
    texts = [r.text for r in out if not isinstance(r, Exception)]
    assert all(t.startswith("answer to: p") for t in texts)
    for i, r in enumerate(out):
        if not isinstance(r, Exception):
            assert r.text == f"answer to: p{i}"


def test_api_key_rules(monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    assert resolve_api_key("http://127.0.0.1:8000/v1", "MY_KEY") == "EMPTY"
    with pytest.raises(ConfigError, match="no API key"):
        resolve_api_key("https://api.openai.com/v1", "MY_KEY")
    monkeypatch.setenv("MY_KEY", "sk-test")
    assert resolve_api_key("https://api.openai.com/v1", "MY_KEY") == "sk-test"


def test_from_config_uses_the_llm_section(openai_server, tmp_path):
    cfg = load_config(search_cwd=False, overrides={
        "llm.base_url": openai_server.base_url, "llm.model": "m1", "paths.cache": str(tmp_path / "c")})
    client = ChatClient.from_config(cfg)
    assert client.model == "m1" and client.base_url == openai_server.base_url
    client.chat("hi")
    assert openai_server.requests[0]["model"] == "m1"
    assert (tmp_path / "c" / "llm.sqlite").exists()


def test_parse_retry_after_forms():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
