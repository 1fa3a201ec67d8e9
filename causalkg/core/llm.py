"""An OpenAI-compatible chat client for every LLM use in the toolkit.

The LLM extractor (kg), the precision judge, the Elo judge, the SQC grader and the
consistency protocol (evaluation) all talk to chat models through ``ChatClient``: any server
that speaks the OpenAI chat-completions API (OpenAI, vLLM, Ollama, llama.cpp, ...) at a
configurable base URL. It adds what those callers need on top of the ``openai`` client:

- concurrency: ``chat_many`` keeps up to ``concurrency`` requests in flight, answers in order;
- a deadline: ``timeout`` bounds each request as a whole, not each read (``causalkg.core.deadline``),
  so a server that trickles bytes is cut off like one that never answers;
- retries: 429 and 5xx, timeouts, dropped connections and cut or malformed bodies are retried
  with backoff, honouring ``Retry-After``; other 4xx fail at once; nothing retries forever;
- a disk cache keyed by (model, messages, parameters, try index): the same question is never
  sent twice, across runs too, nor to a second server of the same model (a rerun against another
  URL reuses the answers); identical requests in one batch are sent once;
- accounting: requests, cache hits, retries, tokens and cost (from ``llm.prices``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence
from urllib.parse import urlparse

from causalkg.core.cache import DiskCache
from causalkg.core.config import Config
from causalkg.core.deadline import Deadline, bound_httpx_client
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.manifest import fingerprint
from causalkg.core.progress import progress
from causalkg.core.retry import Retry, RetryPolicy, call_with_retries, parse_retry_after

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion. ``try_index`` distinguishes repeated samples of the same prompt
    (it is part of the cache key, and the seed defaults to it when sampling)."""

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    try_index: int = 0
    json_mode: bool = False

    @classmethod
    def of(cls, prompt: str | Sequence[dict[str, str]], **kwargs: Any) -> "ChatRequest":
        """From a user prompt string, or from a list of ``{"role", "content"}`` messages."""
        if isinstance(prompt, str):
            msgs: tuple[tuple[str, str], ...] = (("user", prompt),)
        else:
            msgs = tuple((m["role"], m["content"]) for m in prompt)
        return cls(messages=msgs, **kwargs)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.seed is not None:
            out["seed"] = self.seed
        if self.json_mode:
            out["response_format"] = {"type": "json_object"}
        return out


@dataclass
class ChatResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    cached: bool = False


@dataclass
class Usage:
    requests: int = 0  # sent to the server and answered
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["cost_usd"] is not None:
            d["cost_usd"] = round(d["cost_usd"], 6)
        return d


def _is_openai_host(base_url: str) -> bool:
    host = urlparse(base_url).hostname or ""
    return host.endswith("openai.com")


def resolve_api_key(base_url: str, api_key_env: str) -> str:
    """The key from the environment; servers other than OpenAI's often need none."""
    key = os.environ.get(api_key_env, "").strip()
    if key:
        return key
    if _is_openai_host(base_url):
        raise ConfigError(
            f"no API key for {base_url}",
            hint=f"export {api_key_env}=... or point llm.base_url at an OpenAI-compatible server",
        )
    return "EMPTY"


class ChatClient:
    """A thread-safe chat client with retries, concurrency, caching and accounting.

    Build one with ``ChatClient.from_config(cfg)`` (the ``[llm]`` section) or directly.
    ``sleep`` is injectable so tests can run retry paths without waiting.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str = "EMPTY",
        timeout: float = 60.0,
        policy: RetryPolicy | None = None,
        concurrency: int = 8,
        cache: DiskCache | None = None,
        prices: dict[str, Sequence[float]] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        import openai  # lazy: the CLI must start without importing it

        if not model:
            raise ConfigError("no LLM model named", hint="set llm.model or pass openai:MODEL")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.policy = policy or RetryPolicy()
        self.concurrency = max(1, int(concurrency))
        self.cache = cache
        self.prices = prices or {}
        self.sleep = sleep
        self.usage = Usage(cost_usd=0.0 if model in self.prices else None)
        self._lock = threading.Lock()
        self._openai = openai
        # Every request is bounded as a whole by ``timeout`` (a Deadline), not only each read:
        # a server trickling one byte at a time cannot hold a request past it.
        http_client = bound_httpx_client(openai.DefaultHttpxClient(timeout=timeout))
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout, max_retries=0,
                                     http_client=http_client)

    @classmethod
    def from_config(
        cls, cfg: Config, *, model: str | None = None, cache: DiskCache | None = None, **overrides: Any
    ) -> "ChatClient":
        llm = cfg["llm"]
        base_url = overrides.pop("base_url", None) or llm["base_url"]
        if cache is None:
            cache = DiskCache(cfg.path("paths.cache") / "llm.sqlite")
        kwargs: dict[str, Any] = dict(
            base_url=base_url,
            api_key=resolve_api_key(base_url, llm["api_key_env"]),
            timeout=float(llm["timeout"]),
            policy=RetryPolicy(int(llm["max_retries"]), float(llm["backoff_base"]), float(llm["backoff_cap"])),
            concurrency=int(llm["concurrency"]),
            cache=cache,
            prices=llm.get("prices") or {},
        )
        kwargs.update(overrides)
        return cls(model or llm["model"], **kwargs)

    # -- one request -------------------------------------------------------------------------

    def _key(self, request: ChatRequest) -> tuple:
        # Not the base URL: the same model asked the same question with the same settings gives
        # the same answer wherever it is served, and a rerun against a mirror must not pay again.
        return ("chat", self.model, request.messages, request.params(), request.try_index)

    def _attempt(self, request: ChatRequest) -> ChatResult:
        with Deadline(self.timeout) as deadline:
            try:
                result = self._attempt_once(request)
            except (Retry, SourceError) as exc:
                if not (deadline.expired or getattr(exc, "timeout", False)):
                    raise
                result = None
        if result is None:
            raise Retry(f"no complete answer within {deadline.seconds:.3g}s (request deadline)", timeout=True)
        return result

    def _attempt_once(self, request: ChatRequest) -> ChatResult:
        oa = self._openai
        try:
            resp = self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": r, "content": c} for r, c in request.messages],
                **request.params(),
            )
        except oa.APIStatusError as exc:
            status = exc.status_code
            if status == 429 or status >= 500:
                after = parse_retry_after(exc.response.headers.get("retry-after")) if exc.response else None
                raise Retry(f"HTTP {status}", after) from None
            raise SourceError(
                f"{self.base_url}: HTTP {status} for model {self.model}: {_short(exc.message)}",
                hint="check llm.model, llm.base_url and the API key",
            ) from None
        except oa.APITimeoutError:
            raise Retry("read timeout", timeout=True) from None  # reworded by _attempt
        except oa.APIConnectionError as exc:
            raise Retry(f"connection failed ({_short(str(exc.__cause__ or exc))})") from None
        except (json.JSONDecodeError, oa.APIResponseValidationError, ValueError) as exc:
            raise Retry(f"unreadable response body ({_short(str(exc))})") from None
        try:
            choice = resp.choices[0]
            text = choice.message.content or ""
        except (AttributeError, IndexError, TypeError):
            raise Retry("response without choices") from None
        usage = getattr(resp, "usage", None)
        return ChatResult(
            text=text,
            model=getattr(resp, "model", None) or self.model,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=getattr(choice, "finish_reason", None),
        )

    def _count_retry(self, *_: Any) -> None:
        with self._lock:
            self.usage.retries += 1

    def chat(self, request: ChatRequest | str) -> ChatResult:
        """One completion, from the cache when it was asked before. Raises SourceError when the
        server keeps failing after the configured retries."""
        if isinstance(request, str):
            request = ChatRequest.of(request)
        key = self._key(request)
        if self.cache is not None:
            hit = self.cache.get(*key)
            if hit is not None:
                with self._lock:
                    self.usage.cache_hits += 1
                return ChatResult(**{**hit, "cached": True})
        try:
            result = call_with_retries(
                lambda: self._attempt(request),
                self.policy,
                what=f"chat request to {self.base_url} (model {self.model})",
                sleep=self.sleep,
                on_retry=self._count_retry,
            )
        except SourceError:
            with self._lock:
                self.usage.failures += 1
            raise
        with self._lock:
            u = self.usage
            u.requests += 1
            u.prompt_tokens += result.prompt_tokens
            u.completion_tokens += result.completion_tokens
            price = self.prices.get(self.model)
            if price is not None and u.cost_usd is not None:
                u.cost_usd += (result.prompt_tokens * price[0] + result.completion_tokens * price[1]) / 1e6
        if self.cache is not None:
            stored = asdict(result)
            stored.pop("cached")
            self.cache.put(stored, *key)
        return result

    # -- many requests -----------------------------------------------------------------------

    def chat_many(
        self,
        requests: Sequence[ChatRequest],
        *,
        desc: str | None = None,
        return_exceptions: bool = False,
    ) -> list[ChatResult | Exception]:
        """Answers for ``requests`` in order, ``concurrency`` in flight at once.

        Identical requests are sent once. With ``return_exceptions`` a failed request yields its
        exception in place of a result; otherwise the first failure is raised.
        """
        keys = [fingerprint(*self._key(r)) for r in requests]
        unique: dict[str, ChatRequest] = {}
        for k, r in zip(keys, requests):
            unique.setdefault(k, r)
        results: dict[str, ChatResult | Exception] = {}
        bar = progress(total=len(unique), desc=desc or f"asking {self.model}", unit="req")

        def run(item: tuple[str, ChatRequest]) -> None:
            key, req = item
            try:
                results[key] = self.chat(req)
            except Exception as exc:  # noqa: BLE001 - handed back to the caller below
                results[key] = exc
            bar.update(1)

        try:
            if self.concurrency == 1 or len(unique) <= 1:
                for item in unique.items():
                    run(item)
            else:
                with ThreadPoolExecutor(max_workers=min(self.concurrency, len(unique))) as pool:
                    list(pool.map(run, unique.items()))
        finally:
            bar.close()
        out = [results[k] for k in keys]
        if not return_exceptions:
            for r in out:
                if isinstance(r, Exception):
                    raise r
        return out


def _short(text: str, n: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."
