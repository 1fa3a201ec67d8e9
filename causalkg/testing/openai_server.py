"""A real OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

It speaks the chat-completions protocol over HTTP (``POST /v1/chat/completions``,
``GET /v1/models``) with answers from a ``responder`` function, a fixed ``latency`` per answer
(for throughput benchmarks), and faults injected in order: 429 with Retry-After, 5xx, a slow
answer past the client's timeout, a body cut short, a body that is not JSON. Every request body
it received is kept in ``requests`` so tests can count what was sent.

    def answer(body):                       # body: the parsed request JSON
        prompt = body["messages"][-1]["content"]
        return "yes" if "earthquake" in prompt else "no"

    with OpenAIServer(answer) as server:
        client = ChatClient("test-model", base_url=server.base_url)
        server.add_fault(Fault(status=429, retry_after=2))
        ...
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

from causalkg.testing.loopback import LoopbackServer, send_trickle


@dataclass
class Fault:
    """One injected failure, consumed by the next request that reaches the server.

    ``status``: answer with this HTTP status (and ``retry_after`` header when set);
    ``delay``: wait this long before answering normally (a slow answer);
    ``truncate``: announce the full length but send only half of the body, then close;
    ``malformed``: send a 200 whose body is not JSON;
    ``trickle``: send a valid answer one byte every ``trickle`` seconds (after a long run of
    spaces), a server that never lets a per-read timeout fire.
    """

    status: int | None = None
    retry_after: str | float | None = None
    delay: float = 0.0
    truncate: bool = False
    malformed: bool = False
    message: str = "injected fault"
    trickle: float = 0.0


Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]


def _tokens(text: str) -> int:
    return len(text.split())


class OpenAIServer(LoopbackServer):
    """Start with ``with OpenAIServer(responder) as s:``; ``s.base_url`` ends in ``/v1``."""

    def __init__(self, responder: Responder | None = None, *, latency: float = 0.0, model: str = "test-model"):
        super().__init__()
        self.responder = responder or (lambda body: "yes")
        self.latency = latency
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.faults: deque[Fault] = deque()
        self._lock = threading.Lock()

    # -- control -----------------------------------------------------------------------------

    def add_fault(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"

    @property
    def chat_requests(self) -> int:
        return len(self.requests)

    def start(self) -> "OpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
                      length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload) if length is None else length))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    body = {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "test"}]}
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "request body is not JSON"}}')
                    return
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fault = server.faults.popleft() if server.faults else None
                if fault is not None and fault.delay:
                    time.sleep(fault.delay)
                if fault is not None and fault.status is not None:
                    headers = {}
                    if fault.retry_after is not None:
                        headers["Retry-After"] = str(fault.retry_after)
                    err = {"error": {"message": fault.message, "type": "injected", "code": fault.status}}
                    self._send(fault.status, json.dumps(err).encode(), headers)
                    return
                if fault is not None and fault.malformed:
                    self._send(200, b"<html>upstream error</html>")
                    return
                if server.latency:
                    time.sleep(server.latency)
                answer = server.responder(body)
                if isinstance(answer, dict):
                    payload = answer
                else:
                    prompt_text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
                    payload = {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", server.model),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": str(answer)},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": _tokens(prompt_text),
                            "completion_tokens": _tokens(str(answer)),
                            "total_tokens": _tokens(prompt_text) + _tokens(str(answer)),
                        },
                    }
                data = json.dumps(payload).encode()
                if fault is not None and fault.trickle:
                    send_trickle(self, data, interval=fault.trickle)
                    return
                if fault is not None and fault.truncate:
                    self._send(200, data[: len(data) // 2], length=len(data))
                    self.close_connection = True
                    return
                self._send(200, data)

        self._serve(Handler, "openai-server")
        return self


def last_user_message(body: dict[str, Any]) -> str:
    """The content of the last user message of a chat request body."""
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            return str(m.get("content", ""))
    return ""
