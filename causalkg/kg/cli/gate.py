"""The trainers of the extraction's learned parts, each one function of the Python API with its
result class and its parser, in this module (``import causalkg as ck`` re-exports the functions
and classes).

- ``train_gate`` / ``GateTraining`` / ``causalkg kg train-gate`` (the work: ``kg.gate.train_gate``)
- ``train_tagger`` / ``TaggerTraining`` / ``causalkg kg train-tagger`` (the work: ``kg.tagger.train_tagger``)
- ``train_verifier`` / ``VerifierTraining`` / ``causalkg kg train-verifier`` (the work:
  ``kg.verifier.train_verifier``)

Each command prints the result's ``to_table(--format)``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from causalkg.core.config import CfgLike, Config, PathLike, resolve_config
from causalkg.core.results import TrainingResult
from causalkg.options import add_command, add_format


@dataclass
class GateTraining(TrainingResult):
    """What ``train_gate`` did: trained (the validation threshold, recall, share kept) or skipped (why)."""

    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)

    def _trained_lines(self) -> list[str]:
        v = self.validation
        at = v["at_threshold"]
        return [
            f"trained the sentence gate in {self.seconds:.0f} s; saved to {self.output}",
            f"validation ({v['sentences']} sentences, {v['causal']} causal): threshold {v['threshold']:.4f} keeps "
            f"{100 * at['recall']:.1f}% of causal sentences and {100 * at['kept']:.1f}% of all (mix {v['mix']}, "
            f"C {v['c']}, {v['words']} word n-grams)",
        ]


def train_gate(*, output: PathLike | None = None, data: PathLike | None = None, if_missing: bool = False,
               cfg: CfgLike = None) -> GateTraining:
    """Train the learned sentence gate (``causalkg kg train-gate``) on ``data`` (a folder with
    train.jsonl and val.jsonl; default extract.gate.train.data) into ``output`` (default
    extract.gate.model). ``if_missing``: do nothing when the folder holds a gate trained with the
    same data and settings. Raises ConfigError on missing or one-class data."""
    from causalkg.kg.gate import train_gate as _train_gate

    return GateTraining.from_run(_train_gate(resolve_config(cfg), output=output, data=data, if_missing=if_missing))


@dataclass
class TaggerTraining(TrainingResult):
    """What ``train_tagger`` did: trained (steps, validation pair scores) or skipped (why)."""

    steps: int = 0
    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)

    def _trained_lines(self) -> list[str]:
        v = self.validation
        p = v["pair"]
        return [
            f"trained {self.steps} steps in {self.seconds:.0f} s; saved to {self.output}",
            f"validation ({v['sentences']} sentences, {v['relations']} relations): pair "
            f"P {p['precision']:.3f} R {p['recall']:.3f} F1 {p['f1']:.3f} (checkpoint of step {v['selected_step']})",
        ]


def train_tagger(*, output: PathLike | None = None, data: PathLike | None = None, steps: int | None = None,
                 base_model: str | None = None, device: str | None = None, if_missing: bool = False,
                 cfg: CfgLike = None) -> TaggerTraining:
    """Train the span-tagging extractor (``causalkg kg train-tagger``) on ``data`` (default
    extract.tagger.train.data) into ``output`` (default extract.tagger.model); ``steps``,
    ``base_model`` and ``device`` override the settings for this call. ``if_missing``: do nothing
    when the folder is current."""
    from causalkg.kg.tagger import train_tagger as _train_tagger

    return TaggerTraining.from_run(_train_tagger(resolve_config(cfg), output=output, data=data, steps=steps,
                                                 base_model=base_model, if_missing=if_missing, device=device))


@dataclass
class VerifierTraining(TrainingResult):
    """What ``train_verifier`` did: trained (threshold, accuracy, F1 per class) or skipped (why)."""

    seconds: float = 0.0
    validation: dict[str, Any] = field(default_factory=dict)

    def _trained_lines(self) -> list[str]:
        at = self.validation["at_threshold"]
        # per_class is in the order of the verifier's classes (kg.verifier.LABELS)
        per = ", ".join(f"{n} F1 {c['f1']:.3f}" for n, c in at["per_class"].items())
        return [
            f"trained the pair verifier in {self.seconds:.0f} s; saved to {self.output}",
            f"validation ({at['pairs']} pairs): threshold {self.validation['threshold']:.2f}, accuracy "
            f"{at['accuracy']:.3f}, macro F1 {at['macro_f1']:.3f} ({per})",
        ]


def train_verifier(*, output: PathLike | None = None, data: PathLike | None = None, if_missing: bool = False,
                   cfg: CfgLike = None) -> VerifierTraining:
    """Train the pair verifier (``causalkg kg train-verifier``) on ``data`` (default
    kg.verifier.train_data) into ``output`` (default kg.verifier.model). ``if_missing``: do
    nothing when the folder holds a verifier trained with the same data and settings. Raises
    ConfigError on missing or one-class data, SchemaError on a bad record."""
    from causalkg.kg.verifier import train_verifier as _train_verifier

    return VerifierTraining.from_run(_train_verifier(resolve_config(cfg), output=output, data=data,
                                                     if_missing=if_missing))


# --- the command line ----------------------------------------------------------------------


def register(group: Any) -> None:
    """Add ``train-gate``, ``train-tagger`` and ``train-verifier`` to the ``kg`` group."""
    g = add_command(
        group, "train-gate", _train_gate_cli, "train the learned sentence gate (models/causal-gate)",
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
    add_format(g)

    t = add_command(
        group, "train-tagger", _train_tagger_cli, "train the span-tagging extractor (models/causal-tagger)",
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
    add_format(t)

    v = add_command(
        group, "train-verifier", _train_verifier_cli, "train the pair verifier (models/causal-verifier)",
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
    add_format(v)


def _train_gate_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(train_gate(output=args.output, data=args.data, if_missing=args.if_missing, cfg=cfg).to_table(args.format))


def _train_tagger_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(train_tagger(output=args.output, data=args.data, steps=args.steps, base_model=args.base_model,
                       device=args.device, if_missing=args.if_missing, cfg=cfg).to_table(args.format))


def _train_verifier_cli(args: argparse.Namespace, cfg: Config) -> None:
    print(train_verifier(output=args.output, data=args.data, if_missing=args.if_missing, cfg=cfg).to_table(args.format))


# What ``import causalkg as ck`` gives from this module (listed again in causalkg.COMMANDS).
__all__ = ["train_gate", "train_tagger", "train_verifier", "GateTraining", "TaggerTraining", "VerifierTraining"]
