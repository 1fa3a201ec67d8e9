"""Benchmarks: each ``bench/bench_*.py`` runs our code and a baseline or peer on the same input
in the same call, and prints a table (items, seconds, items/s, ratio). ``make bench`` runs all of
them (``python -m bench``); ``python -m bench NAME`` runs one (e.g. ``python -m bench dump``).
Benchmarks never read ``../shared``: their inputs are the bundled snapshots and fixtures."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from causalkg.core.tables import render_table


@dataclass
class Timer:
    seconds: float = 0.0


@contextmanager
def timed() -> Iterator[Timer]:
    """``with timed() as t: ...`` then ``t.seconds``."""
    t = Timer()
    start = time.perf_counter()
    try:
        yield t
    finally:
        t.seconds = time.perf_counter() - start


def inference_rounds() -> int:
    """How many interleaved rounds ``bench inference`` and ``bench gate`` time each format in:
    ``BENCH_INFERENCE_ROUNDS``, default 3, at least 1."""
    return max(1, int(os.environ.get("BENCH_INFERENCE_ROUNDS", "3")))


def interleaved_medians(passes, rounds: int) -> list[tuple[float, float]]:
    """``(median wall s, median CPU s)`` of each callable in ``passes`` over ``rounds`` rounds
    that call them in turn, so that a slow spell of a shared machine falls on all of them."""
    import statistics

    walls: list[list[float]] = [[] for _ in passes]
    cpus: list[list[float]] = [[] for _ in passes]
    for _ in range(max(1, rounds)):
        for i, fn in enumerate(passes):
            cpu0 = time.process_time()
            with timed() as t:
                fn()
            walls[i].append(t.seconds)
            cpus[i].append(time.process_time() - cpu0)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus)]


@dataclass
class ThroughputTable:
    """Rows of (name, items, seconds); ``ratio`` is each row's items/s over the baseline row's."""

    title: str
    unit: str = "items"
    rows: list[dict] = field(default_factory=list)
    baseline: str | None = None

    def add(self, name: str, items: float, seconds: float, *, baseline: bool = False, **extra: object) -> None:
        self.rows.append({"name": name, self.unit: items, "seconds": seconds, **extra})
        if baseline:
            self.baseline = name

    def render(self, fmt: str = "md") -> str:
        base = next((r for r in self.rows if r["name"] == self.baseline), None)
        out = []
        for r in self.rows:
            rate = r[self.unit] / r["seconds"] if r["seconds"] > 0 else float("inf")
            row = dict(r)
            row[f"{self.unit}/s"] = rate
            if base is not None and base["seconds"] > 0:
                base_rate = base[self.unit] / base["seconds"]
                row["ratio"] = rate / base_rate if base_rate else None
            out.append(row)
        cols = ["name", self.unit, "seconds", f"{self.unit}/s"] + (["ratio"] if base is not None else [])
        cols += [k for k in (self.rows[0].keys() if self.rows else []) if k not in cols]
        return f"### {self.title}\n\n" + render_table(out, cols, fmt, floatfmt=".3g")

    def print(self) -> None:
        print(self.render())
        print()
