"""The ``causalkg corpus ...`` commands, each one function of the Python API with its result
class and its parser, in this module.

- ``build_corpus`` / ``CorpusBuild`` / ``causalkg corpus build`` (the work: ``corpus.build.build``)

``import causalkg as ck`` re-exports the function and the class (``ck.build_corpus``). The
command's flags that are settings (``--endpoint``, ``--dump``, ``--index``, ``--select``,
``--workers``) become config overrides, so the manifest records them with the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import dataclass
from typing import Any

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.results import Result, lines_block
from causalkg.options import add_command, add_dry_run, add_force, add_format, add_group, add_lenient

BUILD_HELP = """\
Build the corpus. The Wikidata part writes <paths.data>/wikidata/: event_classes.jsonl,
concepts.jsonl, base_kg.jsonl and manifest.json, from the SPARQL endpoint (--source live), the
bundled snapshot (--source snapshot), or the endpoint when it answers and else the snapshot
(--source auto, the default). The Wikipedia part then writes <paths.data>/corpus/corpus.jsonl
from the dump, for the concepts found.

examples:
  causalkg corpus build                                   # both parts, auto source
  causalkg corpus build --only wikidata --source snapshot # offline, Wikidata part only
  causalkg corpus build --source live --endpoint https://query.wikidata.org/sparql
  causalkg corpus build --dry-run                         # validate and print the plan
"""


def _counts_value(key: str, value: Any) -> str:
    """A count for a summary: fill rates as percentages, other maps as ``k v, k v``."""
    if isinstance(value, dict):
        if not value:
            return "none"
        if key == "fill_rates":
            return ", ".join(f"{k} {v:.0%}" for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def _str(p: PathLike | None) -> str | None:
    return None if p is None else os.fspath(p)


@dataclass
class CorpusBuild(Result):
    """What ``build_corpus`` did: the Wikidata part and the Wikipedia part (those that ran)."""

    wikidata: dict[str, Any] | None = None
    wikipedia: dict[str, Any] | None = None
    dry_run: bool = False

    def _render(self, fmt: str) -> str:
        return lines_block(self.lines(), fmt)

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.dry_run:
            out.append("dry run: nothing written")
        wd = self.wikidata
        if wd is not None:
            if self.dry_run:
                out.append("wikidata plan:")
                out += [f"  {line}" for line in wd["plan"]]
            else:
                c = wd["counts"]
                o = wd["outputs"]
                out.append(f"wikidata (source: {wd['source']}, {wd['endpoint']}):")
                out.append(f"  {o['event_classes']['path']}: {c['event_classes']} event classes "
                           f"({c['event_classes_seed']} seed, {c['event_classes_discovered']} discovered)")
                out.append(f"  {o['concepts']['path']}: {c['concepts']} concepts "
                           f"({c['concepts_class']} classes, {c['concepts_instance']} instances, "
                           f"{c['concepts_with_enwiki_title']} with an enwiki title)")
                out.append(f"  {o['base_kg']['path']}: {c['base_kg_lines']} lines, "
                           f"{c['base_kg_class_pairs']} class pairs, {c['base_kg_instance_pairs']} instance pairs")
                q = wd["queries"]
                live = "requests" in q and wd["source"] == "live"
                out.append(f"  queries: {q['queries']}" + (f", HTTP requests: {q['requests']}, cache hits: "
                                                          f"{q['cache_hits']}, retries: {q['retries']}" if live else ""))
                out += [f"  note: {note}" for note in wd["notes"]]
        wp = self.wikipedia
        if wp is not None:
            if self.dry_run:
                out.append("wikipedia plan:")
                out += [f"  {line}" for line in wp.get("plan") or []]
            else:
                out.append("wikipedia:")
                out += [f"  {k}: {v}" for k, v in (wp.get("outputs") or {}).items()]
                out += [f"  {k}: {_counts_value(k, v)}" for k, v in (wp.get("counts") or {}).items()]
            for note in wp.get("notes") or []:
                if not (self.dry_run and note.startswith("plan: ")):  # the plan lines, shown above
                    out.append(f"  note: {note}")
        return out


def build_corpus(*, source: str | None = None, endpoint: str | None = None, wikidata_dump: PathLike | None = None,
                 force: bool = False,
                 only: str | None = None, dump: PathLike | None = None, index: PathLike | None = None,
                 select: str | None = None, workers: int | None = None, dry_run: bool = False,
                 lenient: bool = False, allow_shrink: bool = False, cfg: CfgLike = None) -> CorpusBuild:
    """Build the corpus (``causalkg corpus build``): the Wikidata files in ``<paths.data>/wikidata``
    (event classes, concepts, Base KG), then the Wikipedia documents in ``<paths.data>/corpus``.

    ``source``: ``live`` | ``snapshot`` | ``auto`` | ``json-dump`` (wikidata.source; json-dump
    reads ``wikidata_dump``, a Wikidata JSON dump); ``force``: ask the endpoint
    again instead of using cached answers; ``only``: ``wikidata`` | ``wikipedia``; ``dump``,
    ``index``, ``select``, ``workers``, ``endpoint``: the settings of the same names. ``dry_run``
    validates and returns the plan. ``lenient``: build the documents even when a damaged dump
    lost some (else SourceError, saying how many and where, the corpus kept); ``allow_shrink``:
    let such a corpus, or an empty output, replace a larger one (``force`` never does). Raises
    SourceError when an input is missing or a source fails, ConfigError on bad settings.
    """
    from causalkg.core.jsonl import allowing_empty_outputs
    from causalkg.corpus.build import build

    c = resolve_config(cfg, {"wikidata.endpoint": endpoint, "wikidata.dump": _str(wikidata_dump),
                             "wikipedia.dump": _str(dump),
                             "wikipedia.index": _str(index), "wikipedia.select": select, "run.workers": workers})
    with allowing_empty_outputs(True) if allow_shrink else contextlib.nullcontext():
        d = build(c, source=source, refresh=force, only=only, dry_run=dry_run, lenient=lenient)
    return CorpusBuild(wikidata=d.get("wikidata"), wikipedia=d.get("wikipedia"), dry_run=dry_run, detail=d)


# --- the command line ----------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add the ``corpus`` group and its commands to the top-level parser."""
    group = add_group(subparsers, "corpus", "build the corpus: Wikidata concepts, the Base KG, Wikipedia documents")
    p = add_command(group, "build", _build, "build the Wikidata files and the Wikipedia documents",
                    description=BUILD_HELP)
    p.add_argument("--source", choices=["live", "snapshot", "auto", "json-dump"], default=None,
                   help="where Wikidata comes from (default: wikidata.source, 'auto'); json-dump reads "
                        "--wikidata-dump")
    p.add_argument("--wikidata-dump", metavar="PATH", default=None,
                   help="Wikidata JSON dump, latest-all.json.bz2 / .gz / .json (wikidata.dump)")
    p.add_argument("--endpoint", metavar="URL", default=None, help="the SPARQL endpoint (wikidata.endpoint)")
    add_force(p, "redo the work: ask the endpoint again instead of using cached answers, and reread the dump",
              refresh_alias=True)
    add_lenient(p, "dump streams and pages (the documents they held are lost)")
    add_dry_run(p, "validate the settings and print the plan; write nothing")
    p.add_argument("--only", choices=["wikidata", "wikipedia"], default=None, help="build one part only (default both)")
    add_format(p)
    wp = p.add_argument_group("Wikipedia part")
    wp.add_argument("--dump", metavar="PATH", default=None, help="pages-articles dump (wikipedia.dump)")
    wp.add_argument("--index", metavar="PATH", default=None, help="multistream index (wikipedia.index)")
    wp.add_argument("--select", choices=["concepts", "infobox", "both", "auto"], default=None,
                    help="which pages become documents (wikipedia.select)")
    wp.add_argument("--workers", metavar="N", type=int, default=None, help="worker processes (run.workers)")


def _build(args: argparse.Namespace, cfg: Config) -> None:
    print(build_corpus(source=args.source, endpoint=args.endpoint, wikidata_dump=args.wikidata_dump, force=args.force, only=args.only, dump=args.dump,
                       index=args.index, select=args.select, workers=args.workers, dry_run=args.dry_run,
                       lenient=args.lenient, cfg=cfg).to_table(args.format))


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["build_corpus", "CorpusBuild"]
