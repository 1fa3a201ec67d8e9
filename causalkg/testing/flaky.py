"""An extractor that fails on purpose, for the tests of retries and resume (the Ray engine's
above all, where the failure must happen inside an actor in another process).

``FlakyFactory(cfg, spec, marker, doc_id)`` is a picklable callable (``extractor_factory`` of
``kg.extract.extract``) that builds the extractor ``spec`` wrapped so that a shard holding the
document ``doc_id`` raises while the file ``marker`` exists; with ``once=True`` the first
failure removes the marker (a transient fault), else it stays (a shard that always fails).
With ``block=True`` the shard does not fail but waits until the marker is gone (a driver can
then be killed while that shard is in flight); with ``die=True`` the process ends at once
(``os._exit``), as a worker killed by the OOM killer does. The state is a file, so it holds across
processes and actors.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class InjectedFailure(RuntimeError):
    pass


class FlakyExtractor:
    def __init__(self, inner: Any, marker: str, doc_id: str, once: bool, block: bool = False, die: bool = False):
        self.inner, self.marker, self.doc_id, self.once, self.block = inner, Path(marker), doc_id, once, block
        self.die = die
        self.name, self.model = inner.name, inner.model

    def describe(self) -> Any:
        return self.inner.describe()

    def stats(self) -> dict[str, Any]:
        return self.inner.stats()

    def extract(self, docs: list[Any]) -> list[dict]:
        if self.marker.exists() and any(d.id == self.doc_id for d in docs):
            if self.block:
                while self.marker.exists():  # held until the test lets go (or the process is killed)
                    time.sleep(0.05)
                return self.inner.extract(docs)
            if self.die:
                os._exit(3)
            if self.once:
                self.marker.unlink(missing_ok=True)
            raise InjectedFailure(f"injected failure on document {self.doc_id}")
        return self.inner.extract(docs)


@dataclass
class FlakyFactory:
    cfg: Any
    spec: str
    marker: str
    doc_id: str
    once: bool = True
    block: bool = False
    die: bool = False

    def __call__(self) -> FlakyExtractor:
        from causalkg.kg.extractors import create_extractor

        return FlakyExtractor(create_extractor(self.spec, self.cfg), self.marker, self.doc_id, self.once, self.block,
                              self.die)
