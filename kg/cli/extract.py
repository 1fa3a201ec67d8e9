"""``causalkg kg extract`` and ``causalkg kg train-qa``: thin wrappers over ``kg.extract.extract``
and ``kg.train_qa.train_qa`` (same names, same arguments)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from causalkg.cli import add_command
from causalkg.config import Config


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
    p.add_argument("--output", metavar="FILE", help="extractions JSONL (default: extract.output)")
    p.add_argument("--shard-size", type=int, metavar="N", help="documents per shard (default: extract.shard_size)")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N documents")
    p.add_argument("--lenient", action="store_true", help="skip invalid input lines (counted) instead of failing")
    p.add_argument("--force", action="store_true", help="redo every shard even when it is current")
    p.add_argument("--dry-run", action="store_true", help="check the input and settings, print the plan, extract nothing")

    t = add_command(
        group, "train-qa", _train_qa, "train the offline cause-effect QA model (models/causal-qa)",
        description=(
            "Fine-tune a QA span head on the MiniLM encoder with the gold sentences in\n"
            "snapshots/qa-training (Causal News Corpus, SemEval-2010 Task 8), asked in the extractor's\n"
            "question templates. Saves the model, its tokenizer and a manifest (data checksums,\n"
            "steps, validation scores) to extract.qa_model."
        ),
    )
    t.add_argument("--output", metavar="DIR", help="model folder (default: extract.qa_model)")
    t.add_argument("--data", metavar="DIR", help="folder with train.jsonl and val.jsonl (default: extract.train_data)")
    t.add_argument("--steps", type=int, metavar="N", help="optimiser steps (default: extract.train_steps)")
    t.add_argument("--batch-size", type=int, metavar="N", help="examples per step (default: extract.train_batch_size)")
    t.add_argument("--learning-rate", type=float, metavar="LR", help="default: extract.train_learning_rate")
    t.add_argument("--seed", type=int, metavar="N", help="default: extract.train_seed")
    t.add_argument("--base-model", metavar="NAME", help="encoder to fine-tune (default: extract.train_base_model)")
    t.add_argument("--device", metavar="DEV", help="auto | cpu | cuda (default: extract.device)")
    t.add_argument("--if-missing", action="store_true",
                   help="do nothing when the model folder exists and matches its training manifest")
    t.add_argument("--dry-run", action="store_true", help="check the data and settings, train nothing")


def _extract(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.extract import describe_outputs, extract

    result = extract(cfg, extractor=args.extractor, input=args.input, output=args.output,
                     shard_size=args.shard_size, lenient=args.lenient, force=args.force,
                     dry_run=args.dry_run, limit=args.limit)
    print(describe_outputs(result))
    return 0


def _train_qa(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.train_qa import train_qa

    result = train_qa(cfg, output=args.output, data=args.data, steps=args.steps, batch_size=args.batch_size,
                      learning_rate=args.learning_rate, seed=args.seed, base_model=args.base_model,
                      if_missing=args.if_missing, device=args.device, dry_run=args.dry_run)
    if result.skipped:
        if result.reason == "dry run":
            plan = dict(result.manifest.get("training", {}))
            plan["output"] = str(result.output)
            print(json.dumps(plan, indent=2))
        else:
            print(f"nothing to do: {result.reason}")
        return 0
    v = result.validation
    tuned = v.get("at_tuned_threshold", {})
    print(f"trained {result.steps} steps in {result.seconds:.0f} s; saved to {result.output}")
    print(f"validation ({v.get('questions')} questions): F1 {tuned.get('f1', 0):.1f}, exact {tuned.get('exact', 0):.1f}, "
          f"has-answer F1 {tuned.get('has_ans_f1', 0):.1f}, no-answer accuracy {tuned.get('no_ans_acc', 0):.1f} "
          f"(no-answer threshold {v.get('null_threshold')}, checkpoint of step {v.get('selected_step')})")
    return 0
