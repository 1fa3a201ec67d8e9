"""``causalkg kg extract`` and ``causalkg kg train-qa``: thin wrappers over ``causalkg.extract``
and ``causalkg.train_qa`` (same names, same arguments)."""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config
from causalkg.options import add_dry_run, add_force, add_format, add_lenient, add_out


def register(group: Any) -> None:
    """Add ``extract`` and ``train-qa`` to the ``kg`` group."""
    p = add_command(
        group, "extract", _extract, "extract cause -> effect pairs from the corpus (or any text JSONL)",
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
        group, "train-qa", _train_qa, "train the offline cause-effect QA model (models/causal-qa)",
        description=(
            "Fine-tune a QA span head on the MiniLM encoder with the gold sentences in\n"
            "snapshots/qa-training (Causal News Corpus, SemEval-2010 Task 8), asked in the extractor's\n"
            "question templates. Saves the model, its tokenizer and a manifest (data checksums,\n"
            "steps, validation scores) to extract.qa_model."
        ),
    )
    add_out(t, "model folder (default: extract.qa_model)", old="--output")
    t.add_argument("--data", metavar="DIR", help="folder with train.jsonl and val.jsonl (default: extract.train_data)")
    t.add_argument("--steps", type=int, metavar="N", help="optimiser steps (default: extract.train_steps)")
    t.add_argument("--batch-size", type=int, metavar="N", help="examples per step (default: extract.train_batch_size)")
    t.add_argument("--learning-rate", type=float, metavar="LR", help="default: extract.train_learning_rate")
    t.add_argument("--seed", type=int, metavar="N", help="default: extract.train_seed")
    t.add_argument("--base-model", metavar="NAME", help="encoder to fine-tune (default: extract.train_base_model)")
    t.add_argument("--device", metavar="DEV", help="auto | cpu | cuda (default: extract.device)")
    t.add_argument("--if-missing", action="store_true",
                   help="do nothing when the model folder exists and matches its training manifest")
    add_dry_run(t, "check the data and settings, print the plan, train nothing")
    add_format(t)


def _extract(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import extract

    print(extract(extractor=args.extractor, input=args.input, out=args.out, shard_size=args.shard_size,
                  lenient=args.lenient, force=args.force, dry_run=args.dry_run, limit=args.limit,
                  workers=args.workers, cfg=cfg).to_table(args.format))


def _train_qa(args: argparse.Namespace, cfg: Config) -> None:
    from causalkg.api import train_qa

    print(train_qa(out=args.out, data=args.data, steps=args.steps, batch_size=args.batch_size,
                   learning_rate=args.learning_rate, seed=args.seed, base_model=args.base_model,
                   if_missing=args.if_missing, device=args.device, dry_run=args.dry_run, cfg=cfg).to_table(args.format))
