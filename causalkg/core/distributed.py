"""The distributed engine: the heavy stages' shards as Ray tasks and actors.

``run.engine = "local"`` (the default) runs every stage in this process and its process pools.
``run.engine = "ray"`` (or ``--engine ray``) runs the same shards on a Ray cluster:

- dump reading and conversion (``corpus.dump.run_units``): each unit (a few multistream
  streams, or a batch of pages) is a Ray task;
- extraction (``kg.extract``): each shard of documents goes to a pool of actors, each of which
  loads the segmenter and the extractor (the QA model) once, with ``num_gpus`` per actor when
  the cluster has GPUs (``run.ray_gpus_per_actor``; ``auto``: 1 when it has any, else 0).
- linking in ``kg assemble`` (``kg.assemble.LinkWorker``): each shard of extractions goes to a
  pool of actors, each of which loads the linker, the sense check and the documents once.

Results come back in shard order and are written by the driver exactly as the local engine
writes them, so the outputs are byte-identical; finished shards are checkpointed as locally, so
a killed driver rerun resumes from them. A task or actor call that fails is retried up to
``run.ray_max_retries`` times (logged and counted in the stage's manifest, ``ray.retries``);
past that the stage fails with the shard named.

``run.ray_address``: ``""`` starts a local cluster in this process (confined: node IP
127.0.0.1, no dashboard, usage stats off, its temp folder ``run.ray_temp_dir`` when set);
``auto`` joins the cluster this machine belongs to; ``ray://host:10001`` connects a client.
Ray is an optional extra (``pip install 'causalkg[ray]'``); asking for it without it installed
is a ConfigError that says so.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, TypeVar

from causalkg.core.errors import ConfigError, SourceError

log = logging.getLogger(__name__)
ENGINES = ("local", "ray")
T = TypeVar("T")
R = TypeVar("R")


def engine_of(cfg: Any) -> str:
    engine = str(cfg.get("run.engine", "local") or "local")
    if engine not in ENGINES:
        raise ConfigError(f"run.engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine


def _ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError("run.engine = \"ray\" needs Ray, which is not installed",
                          hint="pip install 'causalkg[ray]' (with -c constraints.txt)") from None
    return ray


@dataclass
class RaySettings:
    address: str = ""
    temp_dir: str = ""
    num_cpus: int = 0
    max_retries: int = 2
    gpus_per_actor: str = "auto"
    actors: int = 0

    @classmethod
    def from_config(cls, cfg: Any) -> "RaySettings":
        return cls(address=str(cfg.get("run.ray_address", "") or ""),
                   temp_dir=str(cfg.get("run.ray_temp_dir", "") or ""),
                   num_cpus=int(cfg.get("run.workers", 0) or 0),
                   max_retries=int(cfg.get("run.ray_max_retries", 2)),
                   gpus_per_actor=str(cfg.get("run.ray_gpus_per_actor", "auto")),
                   actors=int(cfg.get("run.ray_actors", 0) or 0))


def ensure_ray(settings: RaySettings):
    """Ray, initialised once per process as ``settings`` say."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if settings.address:
        kwargs["address"] = settings.address
    else:
        # A local cluster: on loopback only, no dashboard, its files where we say.
        kwargs["_node_ip_address"] = "127.0.0.1"
        if settings.num_cpus > 0:
            kwargs["num_cpus"] = settings.num_cpus
        if settings.temp_dir:
            kwargs["_temp_dir"] = os.path.abspath(settings.temp_dir)
        # Its workers are this job's compute: Ray starts them at nice 15, so that anything else
        # on the machine takes their CPU (the Ray tests ran 12 times slower beside two other jobs
        # on 2 cores). At nice 0 they share the CPU like the local engine's worker processes.
        kwargs["_system_config"] = {"worker_niceness": 0}
    try:
        ray.init(**kwargs)
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds
        raise SourceError(f"cannot start or join the Ray cluster ({settings.address or 'local'}): {exc}",
                          hint="check run.ray_address, or use run.engine = \"local\"") from None
    return ray


@dataclass
class RayStats:
    tasks: int = 0
    retries: int = 0
    failures: list[str] = field(default_factory=list)
    actors: int = 0
    gpus_per_actor: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "retries": self.retries, "failures": self.failures[:20],
                "actors": self.actors, "gpus_per_actor": self.gpus_per_actor}


def map_ordered(fn: Callable[..., R], items: Iterable[T], args: Callable[[T], tuple], settings: RaySettings, *,
                what: Callable[[T], str] = str, window: int = 0, stats: RayStats | None = None) -> Iterator[R]:
    """``fn(*args(item))`` for every item as Ray tasks; ``(item, result)`` yielded in item order
    with a bounded number in flight; a failed task is resubmitted up to ``max_retries`` times."""
    ray = ensure_ray(settings)
    stats = stats if stats is not None else RayStats()
    remote = ray.remote(max_retries=0)(fn)
    window = window or max(2, int(ray.cluster_resources().get("CPU", 1)) * 2)
    pending: deque[tuple[T, Any, int]] = deque()
    it = iter(items)
    exhausted = False
    while True:
        while not exhausted and len(pending) < window:
            try:
                item = next(it)
            except StopIteration:
                exhausted = True
                break
            pending.append((item, remote.remote(*args(item)), 0))
            stats.tasks += 1
        if not pending:
            return
        item, ref, tries = pending.popleft()
        while True:
            try:
                yield item, ray.get(ref)
                break
            except Exception as exc:  # noqa: BLE001 - a task's error, retried then reported
                if tries >= settings.max_retries:
                    stats.failures.append(f"{what(item)}: {type(exc).__name__}")
                    raise SourceError(f"Ray task for {what(item)} failed {tries + 1} times: {_first_line(exc)}",
                                      hint="finished shards are kept: rerun to resume") from None
                tries += 1
                stats.retries += 1
                log.warning("Ray task for %s failed (%s); retry %d/%d", what(item), _first_line(exc), tries,
                            settings.max_retries)
                ref = remote.remote(*args(item))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    # A RayTaskError's message starts with the task's name; the cause is on its last line.
    return (text[-1] if text else type(exc).__name__)[:300]


class ActorPool:
    """``n`` actors of ``cls(*init)``, one model load each; ``map_ordered(method, items)``
    sends items to free actors (two calls in flight each) and yields ``(item, result)`` in item
    order. A failed
    call is retried (on a fresh actor when the actor died) up to ``max_retries`` times."""

    def __init__(self, cls: type, init: tuple, settings: RaySettings, *, stats: RayStats | None = None):
        self.ray = ray = ensure_ray(settings)
        self.settings = settings
        self.stats = stats if stats is not None else RayStats()
        resources = ray.cluster_resources()
        gpus = float(resources.get("GPU", 0))
        g = settings.gpus_per_actor
        self.gpus = (1.0 if gpus >= 1 else 0.0) if g == "auto" else float(g)
        cpus = max(1, int(resources.get("CPU", 1)))
        n = settings.actors or (max(1, int(gpus // self.gpus)) if self.gpus else cpus)
        self.remote_cls = ray.remote(num_gpus=self.gpus, num_cpus=1, max_restarts=settings.max_retries,
                                     max_task_retries=0)(cls)
        self.init = init
        self.actors = [self.remote_cls.remote(*init) for _ in range(n)]
        self.stats.actors, self.stats.gpus_per_actor = n, self.gpus

    def call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the first actor (for what they all answer alike, as an
        extractor's or encoder's identity); ``causalkg.core.processes.WorkerPool.call`` alike."""
        return self.ray.get(getattr(self.actors[0], method).remote(*args))

    def map_ordered(self, method: str, items: Iterable[T], args: Callable[[T], tuple], *,
                    what: Callable[[T], str] = str) -> Iterator[R]:
        ray = self.ray
        free = deque(list(range(len(self.actors))) * 2)  # two calls in flight per actor
        pending: deque[tuple[T, Any, int, int]] = deque()  # item, ref, actor index, tries
        it = iter(items)
        exhausted = False
        while True:
            while not exhausted and free:
                try:
                    item = next(it)
                except StopIteration:
                    exhausted = True
                    break
                a = free.popleft()
                pending.append((item, getattr(self.actors[a], method).remote(*args(item)), a, 0))
                self.stats.tasks += 1
            if not pending:
                return
            item, ref, a, tries = pending.popleft()
            while True:
                try:
                    result = ray.get(ref)
                    break
                except Exception as exc:  # noqa: BLE001
                    if tries >= self.settings.max_retries:
                        self.stats.failures.append(f"{what(item)}: {type(exc).__name__}")
                        raise SourceError(f"Ray actor call for {what(item)} failed {tries + 1} times: "
                                          f"{_first_line(exc)}", hint="finished shards are kept: rerun to resume") from None
                    tries += 1
                    self.stats.retries += 1
                    log.warning("Ray actor call for %s failed (%s); retry %d/%d", what(item), _first_line(exc),
                                tries, self.settings.max_retries)
                    if isinstance(exc, ray.exceptions.RayActorError):
                        self.actors[a] = self.remote_cls.remote(*self.init)
                    ref = getattr(self.actors[a], method).remote(*args(item))
            free.append(a)
            yield item, result

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []
