"""``Assembly``: what the assembly step (``kg.assemble.assemble``, ``causalkg kg assemble``,
``ck.assemble``) did, and how it is printed. The step returns it and the command prints its
``to_table(--format)``; it lives apart from the step so that the command module and
``import causalkg as ck`` reach it without loading the step's modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from causalkg.core.results import Result, lines_block, plain

if TYPE_CHECKING:
    from causalkg.core.contracts import KGEdge


@dataclass
class Assembly(Result):
    """What ``assemble`` did: the KG folder, ``skipped`` when its outputs were current, counts,
    the files written (``outputs``), notes, the best-supported edges (``top``); a dry run's plan.
    It renders itself as ``causalkg kg assemble`` prints it (``to_table(fmt)``); its json is
    ``out``, ``skipped``, ``counts``, ``notes`` and ``plan``."""

    out: Path
    skipped: bool
    counts: dict[str, Any]
    outputs: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    top: list[KGEdge] = field(default_factory=list)
    plan: dict[str, Any] | None = None  # set by a dry run

    def _json(self) -> Any:
        return {k: plain(getattr(self, k)) for k in ("out", "skipped", "counts", "notes", "plan")}

    def _render(self, fmt: str) -> str:
        if self.plan is not None:
            p = self.plan
            o = p["options"]
            linker = p["linker"] + ("" if p["linking_index_exists"] or "load" not in p["linker"]
                                    else " (missing: run causalkg link build)")
            corpus = p["corpus"]["path"] + ("" if p["corpus"]["exists"]
                                            else " (missing: no titles/URLs beyond the extractions)")
            return lines_block([
                f"plan: assemble the causal KG into {p['out']}",
                f"  {p['source']['kind']}: {p['source']['path']}",
                f"  corpus: {corpus}",
                f"  concepts: {p['concepts']['path']}",
                f"  linker: {linker}",
                f"  shards of {o['shard_size']} (done: {p['shards_done']}), lift={o['lift']}, "
                f"min_support={o['min_support']}, allow_self_loops={o['allow_self_loops']}, top_k={o['k']}, "
                f"threshold={o['threshold']}",
                "  outputs are up to date: nothing to do" if p["up_to_date"] else "  outputs will be (re)built",
            ], fmt)
        c = self.counts
        head = "is up to date (--force rebuilds it)" if self.skipped else "written"
        lines = [f"causal KG in {self.out} {head}: {c.get('edges', 0)} edges ({c.get('edges_class', 0)} class, "
                 f"{c.get('edges_instance', 0)} instance, {c.get('edges_mixed', 0)} mixed), {c.get('nodes', 0)} "
                 f"concepts, {c.get('mentions', 0)} mentions, {c.get('triples', 0)} triples"]
        if not self.skipped:
            lines.append(f"  linked {c.get('link_linked', 0)} of {c.get('link_extractions', 0)} pairs at both ends; "
                         f"{c.get('link_self_loops_dropped', 0)} self-loops dropped; "
                         f"{c.get('aggregate_lifted_edges', 0)} class edges lifted from instances")
        lines += [f"  note: {n}" for n in self.notes]
        return lines_block(lines, fmt)


__all__ = ["Assembly"]
