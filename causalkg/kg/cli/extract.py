"""Extraction commands, each one function of the Python API with its result class and its parser,
in this module (``import causalkg as ck`` re-exports the functions and classes).

- ``extract`` / ``Extraction`` / ``causalkg kg extract`` (the work: ``kg.extract.extract``)
- ``train_qa`` / ``Training`` / ``causalkg kg train-qa`` (the work: ``kg.train_qa.train_qa``)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.results import Result, TrainingResult, dumps, lines_block
from causalkg.options import add_command, add_dry_run, add_force, add_format, add_lenient, add_out


@dataclass
class Extraction(Result):
    """What ``extract`` did: the output, documents and extractions written, counts; a dry run's plan."""

    output: Path = Path()
    manifest_path: Path = Path()
    skipped: bool = False
    documents: int = 0
    extractions: int = 0
    counts: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)

    def _render(self, fmt: str) -> str:
        c = self.counts
        if self.skipped and not c:
            return lines_block(dumps(self.plan).splitlines(), fmt)
        lines = []
        if self.skipped:
            lines.append(f"{self.output} is up to date (same input and settings); nothing was redone")
        lines.append(f"wrote {self.extractions} extractions from {self.documents} documents to {self.output}")
        if c.get("sentences"):
            lines.append(f"candidate sentences: {c.get('candidates', 0)} of {c['sentences']} "
                         f"({100 * c.get('candidates', 0) / c['sentences']:.1f}%)")
        if c.get("shards_resumed"):
            lines.append(f"resumed: {c['shards_resumed']} of {c['shards']} shards were already done")
        if c.get("invalid_lines_skipped"):
            lines.append(f"skipped {c['invalid_lines_skipped']} invalid input lines (--lenient)")
        lines.append(f"manifest: {self.manifest_path}")
        return lines_block(lines, fmt)


def extract(*, extractor: str | None = None, input: PathLike | None = None, out: PathLike | None = None,
            shard_size: int | None = None, limit: int | None = None, force: bool = False, lenient: bool = False,
            dry_run: bool = False, workers: int | None = None, cfg: CfgLike = None) -> Extraction:
    """Extract cause -> effect pairs (``causalkg kg extract``) from the corpus (or any
    ``{"id", "text"}`` JSONL) to ``out`` (default ``<paths.data>/kg/extractions.jsonl``).

    ``extractor``: ``qa`` | ``patterns`` | ``llm``, optionally ``NAME:ARG`` (``qa:MODEL``,
    ``llm:MODEL``); ``force`` redoes current shards; ``limit`` stops after N documents;
    ``workers``: processes of the local engine (``extract.workers``; the same output). A killed
    run restarted resumes. Raises SchemaError on a bad input line unless ``lenient``.
    """
    from causalkg.kg.extract import extract as _extract

    c = resolve_config(cfg).with_overrides({"extract.workers": workers}, origin="kg extract")
    r = _extract(c, extractor=extractor, input=input, output=out, shard_size=shard_size,
                 lenient=lenient, force=force, dry_run=dry_run, limit=limit)
    return Extraction(output=Path(r.output), manifest_path=Path(r.manifest_path), skipped=r.skipped,
                      documents=r.documents, extractions=r.extractions, counts=dict(r.counts), plan=dict(r.plan),
                      detail=r)


@dataclass
class Training(TrainingResult):
    """What ``train_qa`` did: trained (steps, validation) or skipped (why); a dry run's plan."""

    steps: int = 0
    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] | None = None

    def _render(self, fmt: str) -> str:
        if self.plan is not None:
            return lines_block(dumps(self.plan).splitlines(), fmt)
        return super()._render(fmt)

    def _trained_lines(self) -> list[str]:
        v = self.validation
        tuned = v.get("at_tuned_threshold", {})
        return [
            f"trained {self.steps} steps in {self.seconds:.0f} s; saved to {self.output}",
            f"validation ({v.get('questions')} questions): F1 {tuned.get('f1', 0):.1f}, exact {tuned.get('exact', 0):.1f}, "
            f"has-answer F1 {tuned.get('has_ans_f1', 0):.1f}, no-answer accuracy {tuned.get('no_ans_acc', 0):.1f} "
            f"(no-answer threshold {v.get('null_threshold')}, checkpoint of step {v.get('selected_step')})",
        ]


def train_qa(*, out: PathLike | None = None, data: PathLike | None = None, steps: int | None = None,
             batch_size: int | None = None, learning_rate: float | None = None, seed: int | None = None,
             base_model: str | None = None, device: str | None = None, if_missing: bool = False,
             dry_run: bool = False, cfg: CfgLike = None) -> Training:
    """Train the offline cause-effect QA model (``causalkg kg train-qa``) into ``out``
    (default extract.qa.model). ``if_missing``: do nothing when the folder holds a model trained
    with the same plan. ``dry_run``: check the data and return the plan."""
    from causalkg.kg.train_qa import train_qa as _train_qa

    r = _train_qa(resolve_config(cfg), output=out, data=data, steps=steps, batch_size=batch_size,
                  learning_rate=learning_rate, seed=seed, base_model=base_model, if_missing=if_missing, device=device,
                  dry_run=dry_run)
    plan = None
    if r.skipped and r.reason == "dry run":
        plan = {**dict(r.manifest.get("training", {})), "output": str(r.output)}
    return Training.from_run(r, plan=plan)


# --- the command line ----------------------------------------------------------------------


def register(group: Any) -> None:
    """Add ``extract`` and ``train-qa`` to the ``kg`` group."""
    p = add_command(
        group, "extract", _extract_cli, "extract cause -> effect pairs from the corpus (or any text JSONL)",
        description=(
            "Split documents into sentences, keep candidates (a causal cue or a mention of the document\n"
            "concept), and extract cause -> effect pairs with the chosen extractor. Writes Extraction\n"
            "records (data/kg/extractions.jsonl by default), a manifest beside it, and per-shard\n"
            "checkpoints: a killed run restarted resumes and gives the same output."
        ),
    )
    p.add_argument("--extractor", metavar="NAME",
                   help="qa | patterns | llm, optionally NAME:ARG (qa:MODEL, llm:MODEL) (default: extract.extractor)")
    p.add_argument("--input", metavar="FILE", help="corpus JSONL or {\"id\", \"text\"} JSONL (default: extract.input)")
    add_out(p, "extractions JSONL (default: <paths.data>/kg/extractions.jsonl)", metavar="FILE", old="--output")
    p.add_argument("--shard-size", type=int, metavar="N", help="documents per shard (default: extract.shard_size)")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N documents")
    p.add_argument("--workers", type=int, metavar="N",
                   help="extraction processes of the local engine, each with its own models (default: extract.workers)")
    add_lenient(p)
    add_force(p, "redo every shard even when it is current")
    add_dry_run(p, "check the input and settings, print the plan, extract nothing")
    add_format(p)

    t = add_command(
        group, "train-qa", _train_qa_cli, "train the offline cause-effect QA model (models/causal-qa)",
        description=(
            "Fine-tune a QA span head on the MiniLM encoder with the gold sentences in\n"
            "snapshots/qa-training (Causal News Corpus, SemEval-2010 Task 8), asked in the extractor's\n"
            "question templates. Saves the model, its tokenizer and a manifest (data checksums,\n"
            "steps, validation scores) to extract.qa.model."
        ),
    )
    add_out(t, "model folder (default: extract.qa.model)", old="--output")
    t.add_argument("--data", metavar="DIR", help="folder with train.jsonl and val.jsonl (default: extract.qa.train.data)")
    t.add_argument("--steps", type=int, metavar="N", help="optimiser steps (default: extract.qa.train.steps)")
    t.add_argument("--batch-size", type=int, metavar="N", help="examples per step (default: extract.qa.train.batch_size)")
    t.add_argument("--learning-rate", type=float, metavar="LR", help="default: extract.qa.train.learning_rate")
    t.add_argument("--seed", type=int, metavar="N", help="default: extract.qa.train.seed")
    t.add_argument("--base-model", metavar="NAME", help="encoder to fine-tune (default: extract.qa.train.base_model)")
    t.add_argument("--device", metavar="DEV", help="auto | cpu | cuda (default: extract.device)")
    t.add_argument("--if-missing", action="store_true",
                   help="do nothing when the model folder exists and matches its training manifest")
    add_dry_run(t, "check the data and settings, print the plan, train nothing")
    add_format(t)


def _extract_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(extract(extractor=args.extractor, input=args.input, out=args.out, shard_size=args.shard_size,
                  lenient=args.lenient, force=args.force, dry_run=args.dry_run, limit=args.limit,
                  workers=args.workers, cfg=cfg).to_table(args.format))


def _train_qa_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(train_qa(out=args.out, data=args.data, steps=args.steps, batch_size=args.batch_size,
                   learning_rate=args.learning_rate, seed=args.seed, base_model=args.base_model,
                   if_missing=args.if_missing, device=args.device, dry_run=args.dry_run, cfg=cfg).to_table(args.format))


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["extract", "train_qa", "Extraction", "Training"]
