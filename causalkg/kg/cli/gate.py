"""``causalkg kg train-gate``, ``causalkg kg train-tagger`` and ``causalkg kg train-verifier``: thin
wrappers over ``kg.gate.train_gate``, ``kg.tagger.train_tagger`` and ``kg.verifier.train_verifier``
(same names, same arguments)."""

from __future__ import annotations

import argparse
from typing import Any

from causalkg.cli import add_command
from causalkg.core.config import Config


def register(group: Any) -> None:
    """Add ``train-gate`` and ``train-tagger`` to the ``kg`` group."""
    g = add_command(
        group, "train-gate", _train_gate, "train the learned sentence gate (models/causal-gate)",
        description=(
            "Train the causal-sentence classifier the extraction gate uses: MiniLM fine-tuned as a\n"
            "classifier, beside a logistic regression over word n-grams and the cue-lexicon hit, from\n"
            "snapshots/gate-training (Causal News Corpus subtask 1, SemEval-2010 Task 8). The\n"
            "threshold keeps extract.gate.train.target_recall of the validation split's causal sentences."
        ),
    )
    g.add_argument("--output", metavar="DIR", help="model folder (default: extract.gate.model)")
    g.add_argument("--data", metavar="DIR", help="folder with train.jsonl and val.jsonl (default: extract.gate.train.data)")
    g.add_argument("--if-missing", action="store_true", help="do nothing when the model folder is current")

    t = add_command(
        group, "train-tagger", _train_tagger, "train the span-tagging extractor (models/causal-tagger)",
        description=(
            "Fine-tune MiniLM as a token classifier (BIO tags of cause / effect / signal, one pass per\n"
            "relation of a sentence) on the Causal News Corpus sentences of extract.tagger.train.data;\n"
            "the checkpoint is picked by validation pair F1."
        ),
    )
    t.add_argument("--output", metavar="DIR", help="model folder (default: extract.tagger.model)")
    t.add_argument("--data", metavar="DIR", help="folder with train.jsonl and val.jsonl (default: extract.tagger.train.data)")
    t.add_argument("--steps", type=int, metavar="N", help="optimiser steps (default: extract.tagger.train.steps)")
    t.add_argument("--base-model", metavar="NAME", help="encoder to fine-tune (default: extract.tagger.train.base_model)")
    t.add_argument("--device", metavar="DEV", help="auto | cpu | cuda (default: extract.device)")
    t.add_argument("--if-missing", action="store_true", help="do nothing when the model folder is current")

    v = add_command(
        group, "train-verifier", _train_verifier, "train the pair verifier (models/causal-verifier)",
        description=(
            "Fine-tune MiniLM as a three-class classifier of a sentence with its cause and effect spans\n"
            "marked (causal as written | reversed | not causal), from snapshots/verifier-training\n"
            "(Causal News Corpus spans, SemEval-2010 Task 8 relations). The threshold on P(not causal)\n"
            "is the one with the best macro F1 on the validation split. Float32, seeded."
        ),
    )
    v.add_argument("--output", metavar="DIR", help="model folder (default: kg.verifier.model)")
    v.add_argument("--data", metavar="DIR", help="folder with train.jsonl and val.jsonl (default: kg.verifier.train_data)")
    v.add_argument("--if-missing", action="store_true", help="do nothing when the model folder is current")


def _train_gate(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.gate import describe_training, train_gate

    print(describe_training(train_gate(cfg, output=args.output, data=args.data, if_missing=args.if_missing)))
    return 0


def _train_verifier(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.verifier import describe_training, train_verifier

    print(describe_training(train_verifier(cfg, output=args.output, data=args.data, if_missing=args.if_missing)))
    return 0


def _train_tagger(args: argparse.Namespace, cfg: Config) -> int:
    from causalkg.kg.tagger import train_tagger

    r = train_tagger(cfg, output=args.output, data=args.data, steps=args.steps, base_model=args.base_model,
                     if_missing=args.if_missing, device=args.device)
    if r.skipped:
        print(f"nothing to do: {r.reason}")
        return 0
    p = r.validation["pair"]
    print(f"trained {r.steps} steps in {r.seconds:.0f} s; saved to {r.output}")
    print(f"validation ({r.validation['sentences']} sentences, {r.validation['relations']} relations): pair "
          f"P {p['precision']:.3f} R {p['recall']:.3f} F1 {p['f1']:.3f} (checkpoint of step {r.validation['selected_step']})")
    return 0
