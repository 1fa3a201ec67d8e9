"""A loopback SPARQL endpoint that behaves like the public Wikidata Query Service where it
matters for paging: a per-query time limit, a cost that grows with OFFSET, and a query-time
budget per client per minute beyond which it answers 429 with Retry-After.

The public service (Blazegraph) answers ``ORDER BY ... LIMIT n OFFSET k`` by producing and
sorting the rows before the page, so a deep page costs in proportion to ``k``; a query past
60 s is killed (HTTP 500 with ``java.util.concurrent.TimeoutException``); a client that spends
more than its query time per minute gets 429 with Retry-After. ``WDQSServer`` models the same
on top of ``SPARQLServer`` (a real Oxigraph store answering the real query text):

- cost of a query = its measured evaluation time + ``offset_row_cost_s`` per OFFSET row;
- with ``simulate=True`` the modelled part is really waited for (so wall times mean something);
  with ``simulate=False`` it is only accounted (tests: nothing sleeps);
- a query whose cost exceeds ``time_limit_s`` answers 500 TimeoutException (and is charged the
  limit);
- before a query runs, if the costs charged in the last ``window_s`` seconds reach
  ``budget_s``, it answers 429 with ``Retry-After`` = seconds until enough of the window ends.

``stats`` counts requests, answers, timeouts, 429s, and the cost charged (total and largest).
The defaults are the public service's (60 s limit, 60 s of query time per 60 s); benchmarks
scale them down.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from causalkg.testing.sparql_server import Refusal, SPARQLServer

_OFFSET = re.compile(r"\bOFFSET\s+(\d+)", re.I)
TIMEOUT_BODY = (b"SPARQL-QUERY: queryStr=...\njava.util.concurrent.TimeoutException\n"
                b"\tat java.util.concurrent.FutureTask.get(FutureTask.java:205)\n")


@dataclass
class CostStats:
    requests: int = 0
    answered: int = 0
    timeouts: int = 0
    throttled: int = 0
    cost_s: float = 0.0
    max_cost_s: float = 0.0
    max_offset: int = 0
    costs: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "answered": self.answered, "timeouts": self.timeouts,
                "throttled_429": self.throttled, "cost_s": round(self.cost_s, 3),
                "max_cost_s": round(self.max_cost_s, 3), "max_offset": self.max_offset}


class WDQSServer(SPARQLServer):
    def __init__(self, store: Any = None, *, time_limit_s: float = 60.0, offset_row_cost_s: float = 1e-3,
                 budget_s: float = 60.0, window_s: float = 60.0, simulate: bool = True,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 **kwargs: Any):
        super().__init__(store, **kwargs)
        self.time_limit_s = float(time_limit_s)
        self.offset_row_cost_s = float(offset_row_cost_s)
        self.budget_s = float(budget_s)
        self.window_s = float(window_s)
        self.simulate = simulate
        self.clock = clock
        self.sleep = sleep
        self.stats = CostStats()
        self._charges: deque[tuple[float, float]] = deque()  # (time charged, seconds)
        self._cost_lock = threading.Lock()

    def _used(self, now: float) -> float:
        while self._charges and self._charges[0][0] <= now - self.window_s:
            self._charges.popleft()
        return sum(c for _, c in self._charges)

    def before_query(self, query: str) -> Refusal | None:
        with self._cost_lock:
            self.stats.requests += 1
            now = self.clock()
            used = self._used(now)
            if used < self.budget_s:
                return None
            # wait until enough of the window has passed for the budget to open again
            freed, wait = used, 0.0
            for at, cost in self._charges:
                freed -= cost
                wait = at + self.window_s - now
                if freed < self.budget_s:
                    break
            self.stats.throttled += 1
        retry = max(1, math.ceil(wait))
        return Refusal(429, b"Too Many Requests: query time budget per minute exceeded\n",
                       {"Retry-After": str(retry)})

    def after_query(self, query: str, seconds: float) -> Refusal | None:
        m = _OFFSET.search(query)
        offset = int(m.group(1)) if m else 0
        modelled = offset * self.offset_row_cost_s
        cost = seconds + modelled
        timed_out = cost > self.time_limit_s
        if timed_out:
            cost = self.time_limit_s
        if self.simulate:
            self.sleep(max(0.0, cost - seconds))
        with self._cost_lock:
            self._charges.append((self.clock(), cost))
            self.stats.cost_s += cost
            self.stats.max_cost_s = max(self.stats.max_cost_s, cost)
            self.stats.max_offset = max(self.stats.max_offset, offset)
            self.stats.costs.append(cost)
            if timed_out:
                self.stats.timeouts += 1
            else:
                self.stats.answered += 1
        if timed_out:
            return Refusal(500, TIMEOUT_BODY)
        return None


__all__ = ["WDQSServer", "CostStats", "TIMEOUT_BODY"]
