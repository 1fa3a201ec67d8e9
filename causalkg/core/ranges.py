"""The allowed range of every numeric configuration key, checked when the config is loaded.

One table, ``RANGES``, keyed by the dotted name of each numeric key of ``defaults.toml``; the
loader (``core/config.py``) checks the resolved values against it after each layer (defaults,
the user file, ``--set``, a command's flags), so a bad value fails at start-up with one line
naming the key, the value and the range, before anything runs. The entries are plain data so
that they can move with their keys into per-component config blocks.

Kinds used below: durations are seconds >= 0 (a timeout > 0); sizes and counts >= 1 (0 only
where the default documents 0 as "all", "none" or "one per core"); ratios, probabilities and
similarities in [0, 1]; retries >= 0; ports 1-65535; seeds >= 0. Every value must be finite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from causalkg.core.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """Allowed values of one numeric key: ``low <= value <= high`` (a bound of None is open);
    ``low_exclusive`` makes the low bound strict (a timeout must be above 0)."""

    low: float | None = None
    high: float | None = None
    low_exclusive: bool = False
    integer: bool = False

    def allows(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_exclusive else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        what = "an integer" if self.integer else "a finite number"
        low = _fmt(self.low) if self.low is not None else None
        high = _fmt(self.high) if self.high is not None else None
        if low is not None and high is not None and not self.low_exclusive:
            return f"{what} in [{low}, {high}]"
        if low is not None and high is not None:
            return f"{what} in ({low}, {high}]"
        if low is not None:
            return f"{what} {'>' if self.low_exclusive else '>='} {low}"
        if high is not None:
            return f"{what} <= {high}"
        return what


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# The kinds, named once.
ANY = Range()                                   # any finite number (scores, logits, ratings)
DURATION = Range(0.0)                           # seconds, 0 allowed where 0 means "none"
TIMEOUT = Range(0.0, low_exclusive=True)        # seconds, above 0
RATIO = Range(0.0, 1.0)                         # shares, probabilities, similarities
RATE = Range(0.0, low_exclusive=True)           # learning rates, K factors
COUNT = Range(1, integer=True)                  # sizes, counts, steps
COUNT0 = Range(0, integer=True)                 # counts where 0 means all / none / one per core
RETRIES = Range(0, integer=True)
SEED = Range(0, integer=True)
PORT = Range(1, 65535, integer=True)

RANGES: dict[str, Range] = {
    "run.workers": COUNT0,
    "run.ray_max_retries": RETRIES,
    "run.ray_actors": COUNT0,
    "run.network_deadline": DURATION,
    "wikidata.timeout": TIMEOUT,
    "wikidata.max_retries": RETRIES,
    "wikidata.backoff_base": DURATION,
    "wikidata.backoff_cap": DURATION,
    "wikidata.page_size": COUNT,
    "wikidata.values_batch": COUNT,
    "wikidata.snapshot_disk_mb": Range(0.0),
    "wikidata.probe_timeout": TIMEOUT,
    "wikidata.max_examples": COUNT0,
    "wikipedia.max_redirect_hops": COUNT0,
    "linking.threshold": RATIO,
    "linking.instance_threshold": RATIO,
    "linking.top_k": COUNT,
    "linking.sense_strong": RATIO,
    "linking.sense_context": RATIO,
    "linking.context_bonus": RATIO,
    "linking.batch_size": COUNT,
    "linking.hnsw_m": COUNT,
    "linking.hnsw_ef_construction": COUNT,
    "linking.hnsw_ef_search": COUNT,
    "linking.ivf_nlist": COUNT0,
    "linking.ivf_nprobe": COUNT0,
    "extract.shard_size": COUNT,
    "extract.workers": COUNT0,
    "extract.cue_min_count": COUNT,
    "extract.cue_min_precision": RATIO,
    "extract.max_sentence_chars": Range(50, integer=True),
    "extract.max_document_chars": COUNT,
    "extract.gate.threshold": ANY,  # negative = the tuned threshold; above 1 keeps no sentence
    "extract.gate.batch_size": COUNT,
    "extract.gate.first_pass_keep": Range(0.0, 1.0, low_exclusive=True),
    "extract.gate.train.target_recall": RATIO,
    "extract.gate.train.encoder_layers": COUNT0,  # 0 = all of the encoder's layers
    "extract.qa.train.encoder_layers": COUNT0,    # 0 = all of the encoder's layers
    "extract.qa.train.distill_weight": RATIO,
    "extract.qa.train.distill_temperature": RATE,
    "extract.gate.train.steps": COUNT,
    "extract.gate.train.batch_size": COUNT,
    "extract.gate.train.learning_rate": RATE,
    "extract.gate.train.c": RATE,                # each of the list
    "extract.gate.train.mix": RATIO,             # each of the list
    "extract.gate.train.warmup": RATIO,
    "extract.gate.train.seed": SEED,
    "extract.qa.batch_size": COUNT,
    "extract.qa.max_anchors": COUNT0,
    "extract.qa.max_seq_length": COUNT,
    "extract.qa.doc_stride": COUNT,
    "extract.qa.max_question_tokens": COUNT,
    "extract.qa.max_answer_tokens": COUNT,
    "extract.qa.min_score": RATIO,
    "extract.qa.null_threshold": ANY,            # a logit margin
    "extract.qa.max_causes": COUNT,
    "extract.qa.max_effects": COUNT,
    "extract.qa.train.steps": COUNT,
    "extract.qa.train.batch_size": COUNT,
    "extract.qa.train.learning_rate": RATE,
    "extract.qa.train.warmup": RATIO,
    "extract.qa.train.seed": SEED,
    "extract.qa.train.max_seq_length": COUNT,
    "extract.qa.train.eval_every": COUNT,
    "extract.qa.train.selection_questions": COUNT,
    "extract.qa.train.reversed_share": RATIO,
    "extract.tagger.batch_size": COUNT,
    "extract.tagger.max_seq_length": COUNT,
    "extract.tagger.max_relations": COUNT,
    "extract.tagger.min_score": RATIO,
    "extract.tagger.train.steps": COUNT,
    "extract.tagger.train.batch_size": COUNT,
    "extract.tagger.train.learning_rate": RATE,
    "extract.tagger.train.warmup": RATIO,
    "extract.tagger.train.seed": SEED,
    "extract.tagger.train.frozen_layers": COUNT0,
    "extract.tagger.train.eval_every": COUNT,
    "extract.llm.max_attempts": COUNT,
    "extract.llm.passage_chars": COUNT,
    "kg.shard_size": COUNT,
    "kg.keep_generations": COUNT,
    "kg.structured_min_link": RATIO,
    "kg.min_confidence": RATIO,
    "kg.min_support": COUNT,
    "kg.nt_chunk_triples": COUNT,
    "kg.upload_chunk_triples": COUNT,
    "kg.timeout": TIMEOUT,
    "kg.max_retries": RETRIES,
    "kg.backoff_base": DURATION,
    "kg.backoff_cap": DURATION,
    "kg.top": COUNT,
    "kg.max_cycles": COUNT,
    "kg.cycle_length": COUNT,
    "kg.verifier.threshold": Range(None, 1.0),  # negative = the threshold tuned on validation
    "kg.verifier.batch_size": COUNT,
    "kg.verifier.train_steps": COUNT,
    "kg.verifier.train_batch_size": COUNT,
    "kg.verifier.train_learning_rate": RATE,
    "kg.verifier.train_warmup": RATIO,
    "kg.verifier.train_seed": SEED,
    "kg.verifier.max_length": COUNT,
    "kg.verifier.train_frozen_layers": COUNT0,
    "llm.timeout": TIMEOUT,
    "llm.max_retries": RETRIES,
    "llm.backoff_base": DURATION,
    "llm.backoff_cap": DURATION,
    "llm.concurrency": COUNT,
    "llm.prices.*": Range(0.0),                  # USD per million tokens, each of [input, output]
    "eval.precision.tries": COUNT,
    "eval.precision.temperature": Range(0.0, 2.0),
    "eval.precision.seed": SEED,
    "eval.precision.max_tokens": COUNT,
    "eval.precision.limit": COUNT0,
    "eval.precision.batch_size": COUNT,
    "eval.sqc.embedding_threshold": RATIO,
    "eval.sqc.tau_percentile": Range(0.0, 100.0),
    "eval.sqc.tau": Range(None, 1.0),            # negative = from tau_percentile
    "eval.sqc.max_attempts": COUNT,
    "eval.sqc.batch_size": COUNT,
    "eval.consistency.limit": COUNT0,
    "eval.consistency.seed": SEED,
    "eval.consistency.max_attempts": COUNT,
    "eval.consistency.temperature": Range(0.0, 2.0),
    "eval.consistency.batch_size": COUNT,
    "eval.soft.thresholds.*": ANY,               # BLEURT's theta is negative
    "eval.soft.partial_weight": RATIO,
    "eval.elo.k": RATE,
    "eval.elo.start": ANY,
    "eval.elo.rounds": COUNT,
    "eval.elo.seed": SEED,
    "eval.meta.bootstrap": COUNT,
    "eval.meta.seed": SEED,
    "eval.meta.theta_grid.*": ANY,
    "eval.align.timeout": TIMEOUT,
    "web.port": PORT,
    "web.query_timeout": TIMEOUT,
    "web.result_cap": COUNT,
    "web.queue_seed": SEED,
}


def _numbers(value: Any):
    """The numbers in a value: itself, or the items of a list (``[input, output]`` prices)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)


def range_of(dotted: str) -> Range | None:
    """The declared range of a key, or of the entries of a free-form table (``llm.prices.X``)."""
    if dotted in RANGES:
        return RANGES[dotted]
    return RANGES.get(dotted.rsplit(".", 1)[0] + ".*")


def check_ranges(data: Mapping[str, Any], origin: str, prefix: str = "") -> None:
    """Raise ConfigError for the first numeric value outside its declared range.

    ``origin`` says where the values came from (a file, ``--set``, an option) for the message.
    A numeric key with no declared range is refused too: every numeric key must have one.
    """
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            check_ranges(value, origin, prefix=f"{dotted}.")
            continue
        numbers = list(_numbers(value))
        if not numbers:
            continue
        rng = range_of(dotted)
        if rng is None:
            raise ConfigError(f"{dotted} has no declared range", hint="add it to RANGES in causalkg/core/ranges.py")
        for number in numbers:
            if not rng.allows(float(number)):
                raise ConfigError(f"{origin}: {dotted} = {number!r} is out of range: must be {rng.describe()}",
                                  hint="see docs/configuration.md")


def check_option(name: str, value: Any, rng: Range) -> None:
    """Check a command-line option (``--limit``) against a range; None (not given) passes."""
    if value is None or isinstance(value, bool):
        return
    if not rng.allows(float(value)):
        raise ConfigError(f"{name} {value!r} is out of range: must be {rng.describe()}")


# Numeric command-line options, by their argparse name (``--shard-size`` -> shard_size): checked
# by the CLI before the command runs. Options that set a config key are also checked there.
OPTION_RANGES: dict[str, Range] = {
    # --tries, --steps, --min-support, --top-k and the linker's thresholds are checked by their
    # commands, with messages of their own.
    "limit": COUNT0, "shard_size": COUNT, "workers": COUNT0, "top": COUNT, "batch_size": COUNT,
    "concurrency": COUNT, "chunk_triples": COUNT, "timeout": TIMEOUT, "temperature": Range(0.0, 2.0),
    "seed": SEED, "bootstrap": COUNT, "rounds": COUNT, "learning_rate": RATE, "tau_percentile": Range(0.0, 100.0),
    "tau": Range(None, 1.0), "w": RATIO, "k": RATE, "start": ANY, "port": Range(0, 65535, integer=True),
}


def check_options(options: Mapping[str, Any]) -> None:
    """Check the numeric command-line options in ``options`` (an argparse namespace's dict)."""
    for dest, rng in OPTION_RANGES.items():
        value = options.get(dest)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            check_option("--" + dest.replace("_", "-"), value, rng)
