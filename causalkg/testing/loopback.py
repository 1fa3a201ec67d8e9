"""What every test server here shares: an HTTP server on 127.0.0.1 in a daemon thread.

``LoopbackServer`` owns binding a free port, serving, the address, stopping and the context
manager; each protocol peer (``OpenAIServer``, ``SPARQLServer``, Virtuoso's ``FaultProxy``)
subclasses it, builds its request handler in ``start`` and hands it to ``_serve``.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default listen backlog (5) resets connections when a client keeps dozens of requests
    # in flight; benchmarks run at concurrency 32 and more.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client that hung up
        pass


def send_trickle(handler: BaseHTTPRequestHandler, body: bytes, *, interval: float, status: int = 200,
                 content_type: str = "application/json", pad: int = 4000) -> None:
    """Answer like a server that trickles: the status line and headers at once, then the body
    (``pad`` spaces, then ``body``, so it stays valid) one byte every ``interval`` seconds.
    A socket read timeout never fires on it (each byte resets it); only a whole-request
    deadline stops the client. Stops when the client hangs up."""
    payload = b" " * pad + body
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.flush()
        for i in range(len(payload)):
            handler.wfile.write(payload[i : i + 1])
            handler.wfile.flush()
            time.sleep(interval)
    except OSError:  # the client gave up: that is what a trickle is for
        pass
    handler.close_connection = True


class LoopbackServer:
    """Base of the test servers: ``with Sub(...) as s:`` starts it; ``s.address`` is ``http://host:port``."""

    def __init__(self) -> None:
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "LoopbackServer":  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _serve(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._httpd = _Server(("127.0.0.1", 0), handler)
        # A short poll interval makes shutdown() (every test teardown) quick.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=name, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        assert self._httpd is not None, f"{type(self).__name__} not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
