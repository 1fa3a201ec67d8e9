"""Retries with exponential backoff, jitter and ``Retry-After``, shared by all network code.

The SPARQL client, the LLM client and the triple-store uploader each classify their own
failures into a ``Retry`` (wait and try again, perhaps after the server's ``Retry-After``) or a
final error; this module owns the waiting, the bound on attempts, and the message that names
the endpoint when it gives up. Nothing retries forever.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from causalkg.core.errors import DeadlineExceeded, SourceError

log = logging.getLogger(__name__)
T = TypeVar("T")


class Retry(Exception):
    """Raised by an attempt to ask for another try. ``after``: seconds the server asked for;
    ``timeout``: the attempt ran out of time (the final error is then ``DeadlineExceeded``)."""

    def __init__(self, reason: str, after: float | None = None, *, timeout: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.after = after
        self.timeout = timeout


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; waits ``base * 2**n`` (capped) with
    full jitter, or the server's Retry-After (capped) when it gave one."""

    max_retries: int = 5
    base: float = 1.0
    cap: float = 60.0
    jitter: bool = True

    def delay(self, retry_number: int, after: float | None, rng: random.Random | None = None) -> float:
        if after is not None:
            return max(0.0, min(float(after), self.cap))
        ceiling = min(self.cap, self.base * (2**retry_number))
        if not self.jitter:
            return ceiling
        r = rng or random
        # "equal jitter": at least half the backoff, so retries never bunch up at zero.
        return ceiling / 2 + r.uniform(0, ceiling / 2)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date. None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _check_stage(what: str, last: Retry | None, *, passed: bool = False) -> None:
    """Raise DeadlineExceeded when the stage deadline (``run.network_deadline``) has passed
    (or, with ``passed``, would pass during the next wait)."""
    from causalkg.core.deadline import stage_remaining

    stage = stage_remaining()
    if stage is None or (stage[0] > 0 and not passed):
        return
    after = f" (last attempt: {last.reason})" if last is not None else ""
    raise DeadlineExceeded(
        f"{what}: the network deadline of the command (run.network_deadline = {stage[1]:g}s) "
        f"{'leaves no time for another attempt' if passed and stage[0] > 0 else 'has passed'}{after}",
        hint="raise run.network_deadline, or set it to 0 for none")


def call_with_retries(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    *,
    what: str,
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, Retry, float], None] | None = None,
) -> T:
    """Call ``attempt`` until it returns, retrying when it raises ``Retry``.

    ``what`` names the request and endpoint for the final error (``SourceError``), e.g.
    ``"query 'instances of Q7944' at https://query.wikidata.org/sparql"``.
    """
    from causalkg.core.deadline import stage_remaining

    last: Retry | None = None
    for n in range(policy.max_retries + 1):
        _check_stage(what, last)
        try:
            return attempt()
        except Retry as exc:
            last = exc
            if n == policy.max_retries:
                break
            wait = policy.delay(n, exc.after)
            stage = stage_remaining()
            if stage is not None and wait >= stage[0]:
                _check_stage(what, last, passed=True)
            log.warning("%s: %s; retry %d/%d in %.1fs", what, exc.reason, n + 1, policy.max_retries, wait)
            if on_retry is not None:
                on_retry(n + 1, exc, wait)
            sleep(wait)
    assert last is not None
    error = DeadlineExceeded if last.timeout else SourceError
    raise error(
        f"{what} failed after {policy.max_retries + 1} attempts: {last.reason}",
        hint="check the endpoint, or raise max_retries / backoff in the config",
    )
