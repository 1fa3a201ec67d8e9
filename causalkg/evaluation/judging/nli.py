"""Entailment scores from a natural-language-inference model (transformers sequence classification).

The SQC complementer (``evaluation.judging.sqc``) asks, for an extracted fact that matched no gold fact,
how strongly its source text entails it: premise = the source text, hypothesis = the fact written
as a sentence; the score is the model's softmax probability of its entailment label. Any NLI
model works, by hub name or local path (``microsoft/deberta-large-mnli``, ``roberta-large-mnli``,
...): the entailment label is found by name in the model config's ``id2label``, so label order
never has to be known in advance.

A source text longer than the model's input is split at sentence ends into chunks that fit
beside the hypothesis; the score is the best chunk's (a fact is entailed when some passage of
the text entails it). Pairs are scored in sorted, padded batches; answers are cached on disk by
(model id, premise, hypothesis).
"""

from __future__ import annotations

import re
from typing import Sequence

from causalkg.core.cache import DiskCache, cached_scores
from causalkg.core.errors import ModelError
from causalkg.core.progress import progress
from causalkg.evaluation.judging.hf_models import PretrainedScorer

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def entailment_index(id2label: dict) -> int:
    """The class index whose label names entailment (ENTAILMENT, entailment, LABEL_entailment, ...).
    Raises ModelError listing the labels when there is none, or more than one."""
    hits = [int(i) for i, name in id2label.items() if str(name).lower().replace("label_", "").startswith("entail")]
    if len(hits) != 1:
        labels = ", ".join(f"{i}={n}" for i, n in sorted(id2label.items(), key=lambda kv: int(kv[0])))
        raise ModelError(
            f"cannot tell which output is entailment from the model's labels ({labels})",
            hint="use an NLI model whose config names an ENTAILMENT label",
        )
    return hits[0]


class NLIScorer(PretrainedScorer):
    """Probability that a premise entails a hypothesis, from a local or cached NLI model."""

    kind = "sequence-classification"

    def __init__(self, name_or_path: str, *, device: str = "auto", batch_size: int = 16,
                 cache: DiskCache | None = None):
        super().__init__(name_or_path, device=device, batch_size=batch_size, cache=cache)
        self.entail = entailment_index(self.model.config.id2label)
        limits = [getattr(self.model.config, "max_position_embeddings", None), self.tokenizer.model_max_length, 512]
        # RoBERTa-style models reserve two positions for padding offsets.
        self.max_length = min(int(x) for x in limits if x) - 2

    def _chunks(self, premise: str, hypothesis: str) -> list[str]:
        """The premise, or sentence-aligned pieces of it that fit beside the hypothesis."""
        tok = self.tokenizer
        budget = self.max_length - len(tok(hypothesis, add_special_tokens=False)["input_ids"]) - 4
        if budget < 16:
            raise ModelError(f"the fact {hypothesis[:80]!r} is too long for {self.name}")
        if len(tok(premise, add_special_tokens=False)["input_ids"]) <= budget:
            return [premise]
        chunks: list[str] = []
        current: list[str] = []
        size = 0
        for sentence in _SENTENCE_END.split(premise):
            n = len(tok(sentence, add_special_tokens=False)["input_ids"])
            if current and size + n > budget:
                chunks.append(" ".join(current))
                current, size = [], 0
            current.append(sentence)
            size += n
        if current:
            chunks.append(" ".join(current))
        return chunks  # a single sentence over budget is truncated by the tokenizer below

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str], *, desc: str | None = None) -> list[float]:
        """P(entailment) for each (premise, hypothesis) pair, in order."""
        import torch

        out, todo = cached_scores(self.cache, "nli", self.model_id, premises, hypotheses)
        flat: list[tuple[int, str, str]] = [(i, c, hypotheses[i]) for i in todo for c in self._chunks(premises[i], hypotheses[i])]
        flat.sort(key=lambda x: len(x[1]) + len(x[2]))
        best: dict[int, float] = {}
        bar = progress(total=len(flat), desc=desc or f"entailment with {self.name}", unit="pair")
        try:
            for start in range(0, len(flat), self.batch_size):
                batch = flat[start : start + self.batch_size]
                enc = self.tokenizer([c for _, c, _ in batch], [h for _, _, h in batch], padding=True,
                                     truncation="only_first", max_length=self.max_length, return_tensors="pt")
                with torch.inference_mode():
                    logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}).logits
                probs = torch.softmax(logits.float(), dim=-1)[:, self.entail].cpu().tolist()
                for (i, _, _), p in zip(batch, probs):
                    best[i] = max(best.get(i, 0.0), float(p))
                bar.update(len(batch))
        finally:
            bar.close()
        for i in todo:
            out[i] = best[i]
            if self.cache is not None:
                self.cache.put(best[i], "nli", self.model_id, premises[i], hypotheses[i])
        return [float(v) for v in out]  # type: ignore[arg-type]
