"""Continuation log-probabilities from a local causal language model (transformers), batched.

The token-probability judge of causal epistemic consistency (``evaluation.judging.consistency``) needs,
for a prefix such as "The cause and the intermediate, so" and a continuation (the effect), the
sum of the log-probabilities the model gives the continuation's tokens: log CS(E | C + I).
``CausalLMScorer`` computes that for many (prefix, continuation) pairs at once: sorted by length,
right-padded batches, one forward pass per batch, answers cached on disk by (model id, prefix,
continuation) so a rerun after a kill asks nothing twice.

The continuation's tokens are found from the fast tokenizer's character offsets of the whole
text "prefix continuation" (so BPE merges across the boundary cannot shift them); with a slow
tokenizer, prefix and continuation are tokenised apart and concatenated.
"""

from __future__ import annotations

import logging
import math
from typing import Sequence

from causalkg.core.cache import DiskCache, cached_scores
from causalkg.core.errors import ModelError
from causalkg.core.progress import progress
from causalkg.evaluation.judging.hf_models import PretrainedScorer

log = logging.getLogger(__name__)


class CausalLMScorer(PretrainedScorer):
    """Sum of log-probabilities of a continuation given a prefix, for a local causal LM."""

    kind = "causal-lm"

    def __init__(self, name_or_path: str, *, device: str = "auto", batch_size: int = 16,
                 cache: DiskCache | None = None):
        super().__init__(name_or_path, device=device, batch_size=batch_size, cache=cache)
        tok = self.tokenizer
        self.pad_id = next((i for i in (tok.pad_token_id, tok.eos_token_id, 0) if i is not None), 0)

    def _encode(self, prefix: str, continuation: str) -> tuple[list[int], int]:
        """Token ids of "prefix continuation" and the index of the first continuation token."""
        tok = self.tokenizer
        text = f"{prefix} {continuation}"
        boundary = len(prefix) + 1
        if getattr(tok, "is_fast", False):
            enc = tok(text, add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
            ids = list(enc["input_ids"])
            special = enc["special_tokens_mask"]
            offsets = enc["offset_mapping"]
            cont = [i for i, ((s, e), sp) in enumerate(zip(offsets, special)) if not sp and e > s and s >= boundary - 1]
            if not cont:
                raise ModelError(f"the continuation {continuation!r} has no tokens under {self.name}")
            first = cont[0]
            # Special tokens after the continuation (BERT's [SEP]) are not part of it: cut them.
            ids = ids[: cont[-1] + 1]
        else:  # pragma: no cover - every tokenizer we ship is fast; kept for slow-only models
            p_ids = tok(prefix, add_special_tokens=False)["input_ids"]
            c_ids = tok(" " + continuation, add_special_tokens=False)["input_ids"]
            bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
            ids, first = bos + p_ids + c_ids, len(bos) + len(p_ids)
        if first == 0:
            bos = tok.bos_token_id if tok.bos_token_id is not None else tok.cls_token_id
            if bos is None:
                raise ModelError(f"the prefix {prefix!r} has no tokens under {self.name}")
            ids, first = [bos] + ids, 1
        return ids, first

    def logprobs(self, prefixes: Sequence[str], continuations: Sequence[str], *, desc: str | None = None) -> list[float]:
        """``log P(continuation | prefix)`` for each pair: the sum over the continuation's tokens."""
        import torch

        out, todo = cached_scores(self.cache, "causal-lm", self.model_id, prefixes, continuations)
        encoded = {i: self._encode(prefixes[i], continuations[i]) for i in todo}
        todo.sort(key=lambda i: len(encoded[i][0]))
        bar = progress(total=len(todo), desc=desc or f"scoring with {self.name}", unit="text")
        try:
            for start in range(0, len(todo), self.batch_size):
                batch = todo[start : start + self.batch_size]
                width = max(len(encoded[i][0]) for i in batch)
                ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    seq = encoded[i][0]
                    ids[row, : len(seq)] = torch.tensor(seq)
                    mask[row, : len(seq)] = 1
                # Logits at position t predict token t+1: the continuation tokens first..len-1 are
                # read at positions first-1..len-2. Only those rows are normalised over the vocabulary,
                # in float32: a float32 log-softmax over every position of the batch would take
                # several times the memory of the logits themselves with a 100k-token vocabulary.
                rows, cols = [], []
                for row, i in enumerate(batch):
                    seq, first = encoded[i]
                    for t in range(first - 1, len(seq) - 1):
                        rows.append(row)
                        cols.append(t)
                r_idx, c_idx = torch.tensor(rows), torch.tensor(cols)
                with torch.inference_mode():
                    logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                    picked = logits[r_idx.to(logits.device), c_idx.to(logits.device)].float()
                    target = ids[r_idx, c_idx + 1].to(logits.device)
                    token_lp = (picked.gather(-1, target.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(picked, dim=-1)).cpu()
                sums = torch.zeros(len(batch), dtype=torch.float64).index_add_(0, r_idx, token_lp.double())
                for row, i in enumerate(batch):
                    value = float(sums[row])
                    if not math.isfinite(value):
                        raise ModelError(f"{self.name} gave a non-finite log-probability for {continuations[i]!r}")
                    out[i] = value
                    if self.cache is not None:
                        self.cache.put(value, "causal-lm", self.model_id, prefixes[i], continuations[i])
                bar.update(len(batch))
        finally:
            bar.close()
        return [float(v) for v in out]  # type: ignore[arg-type]
