"""A whole-request deadline for every HTTP client of the toolkit.

A socket timeout bounds one read: a server that sends one byte per second resets it with each
byte and keeps a client waiting for ever. ``Deadline`` bounds a request as a whole (connect,
send, headers and body): ``with Deadline(seconds):`` around a request, and

- urllib clients (the SPARQL client, the Graph Store client) open connections through
  ``deadline_opener()``: each connection made inside the block is registered with the
  deadline, whose timer shuts the socket down when the time is up, which wakes a blocked read
  at once; connect timeouts are cut to the time left;
- httpx clients (the OpenAI-compatible LLM client) get ``bound_network_backend(pool)``: every
  connect, read and write is given at most the time left, so the last one times out when the
  deadline passes.

Afterwards ``deadline.expired`` tells the caller that whatever error came out (a cut body, a
reset connection, a read timeout) was the deadline, so it can report it as such (a
``Retry(..., timeout=True)``, and ``DeadlineExceeded`` when retries run out). The deadline of
the request running in this thread (or task) is found through a context variable, so one
client object may serve many threads at once.

A stage deadline (``run.network_deadline``, set by the CLI with ``stage_deadline``) bounds all
the requests of a command together, retries and their waits included: each request's deadline
is cut to the time the stage has left, and once it has passed ``call_with_retries`` stops with
``DeadlineExceeded`` instead of trying again.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import importlib
import socket
import threading
import time
import urllib.request
from typing import Any, Iterator

_current: contextvars.ContextVar["Deadline | None"] = contextvars.ContextVar("causalkg_deadline", default=None)
# The stage deadline is process-wide (monotonic end time, seconds): requests run in pool threads,
# which do not inherit context variables.
_stage: tuple[float, float] | None = None  # (end, seconds)


@contextlib.contextmanager
def stage_deadline(seconds: float | None) -> Iterator[None]:
    """Bound every request made inside the block, together, by ``seconds`` (None or <= 0: no
    bound)."""
    global _stage
    previous = _stage
    if seconds is not None and float(seconds) > 0:
        _stage = (time.monotonic() + float(seconds), float(seconds))
    try:
        yield
    finally:
        _stage = previous


def stage_remaining() -> tuple[float, float] | None:
    """``(seconds left, seconds in all)`` of the stage deadline, or None when there is none."""
    if _stage is None:
        return None
    return max(0.0, _stage[0] - time.monotonic()), _stage[1]


class Deadline:
    """``seconds`` from entering the ``with`` block; ``remaining()``, ``expired``."""

    def __init__(self, seconds: float):
        self.seconds = max(0.001, float(seconds))
        self.end = 0.0
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._token: contextvars.Token | None = None

    def __enter__(self) -> "Deadline":
        stage = stage_remaining()
        if stage is not None:
            self.seconds = max(0.001, min(self.seconds, stage[0]))
        self.end = time.monotonic() + self.seconds
        self._timer = threading.Timer(self.seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()
        self._token = _current.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        with self._lock:
            self._socks.clear()

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def bound(self, timeout: float | None) -> float:
        """``timeout`` cut to the time left (at least a millisecond, so it still times out)."""
        left = max(0.001, self.remaining())
        return left if timeout is None else max(0.001, min(float(timeout), left))

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has passed)."""
        with self._lock:
            if not self.expired:
                self._socks.append(sock)
                return
        _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            socks, self._socks = self._socks, []
        for sock in socks:
            _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def current() -> Deadline | None:
    """The deadline of the request running in this context, if any."""
    return _current.get()


# --- urllib -----------------------------------------------------------------------------------


class _DeadlineConnect:
    """Mixed into an http.client connection: connect within the request's deadline, then
    watch the socket so the deadline can cut a trickling read."""

    def connect(self) -> None:
        d = current()
        if d is not None:
            self.timeout = d.bound(self.timeout if isinstance(self.timeout, (int, float)) else None)
        super().connect()
        if d is not None:
            d.watch(self.sock)


class _DeadlineHTTPConnection(_DeadlineConnect, http.client.HTTPConnection):
    pass


class _DeadlineHTTPSConnection(_DeadlineConnect, http.client.HTTPSConnection):
    pass


class DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_DeadlineHTTPConnection, req)


class DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        kwargs: dict[str, Any] = {"context": getattr(self, "_context", None)}
        if hasattr(self, "_check_hostname"):  # Python < 3.12
            kwargs["check_hostname"] = self._check_hostname
        return self.do_open(_DeadlineHTTPSConnection, req, **kwargs)


def deadline_opener(*handlers: Any, context: Any = None) -> urllib.request.OpenerDirector:
    """A urllib opener (with ``handlers`` added; give a TLS ``context`` here, not as another
    HTTPSHandler, which would take over https) whose connections obey the current Deadline."""
    return urllib.request.build_opener(DeadlineHTTPHandler(), DeadlineHTTPSHandler(context=context), *handlers)


# --- httpx / httpcore -------------------------------------------------------------------------


class _BoundStream:
    """A network stream whose reads and writes get at most the current deadline's time left."""

    def __init__(self, inner: Any, core: Any):
        self._inner = inner
        self._core = core

    def _timeout(self, timeout: float | None, exc: type[Exception]) -> float | None:
        d = current()
        if d is None:
            return timeout
        if d.remaining() <= 0:
            raise exc("request deadline passed")
        return d.bound(timeout)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout=self._timeout(timeout, self._core.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        return self._inner.write(buffer, timeout=self._timeout(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        inner = self._inner.start_tls(ssl_context, server_hostname=server_hostname,
                                      timeout=self._timeout(timeout, self._core.ConnectTimeout))
        return _BoundStream(inner, self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundBackend:
    def __init__(self, inner: Any, core: Any):
        self._inner = inner
        self._core = core

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> _BoundStream:
        d = current()
        if d is not None:
            if d.remaining() <= 0:
                raise self._core.ConnectTimeout("request deadline passed")
            timeout = d.bound(timeout)
        stream = self._inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                         socket_options=socket_options)
        return _BoundStream(stream, self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> _BoundStream:
        d = current()
        if d is not None:
            timeout = d.bound(timeout)
        return _BoundStream(self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options),
                            self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_httpx_client(client: Any) -> Any:
    """Make a synchronous httpx-style client (``httpx.Client`` or the ``httpx2`` the openai
    package ships) obey the current Deadline: its connection pool's network backend is wrapped.
    Returns the client."""
    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        raise RuntimeError(f"cannot bound the requests of {type(client).__name__}: no connection pool found")
    core = importlib.import_module(type(pool).__module__.split(".")[0])
    pool._network_backend = _BoundBackend(pool._network_backend, core)
    return client


__all__ = ["Deadline", "current", "stage_deadline", "stage_remaining", "deadline_opener", "bound_httpx_client", "DeadlineHTTPHandler",
           "DeadlineHTTPSHandler"]
