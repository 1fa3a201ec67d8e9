"""Judges: language models that answer the yes/no precision prompts, chosen by name.

Stage 4 (evaluation). ``evaluation.wikicausal.precision`` asks a judge one prompt per (pair, try) and reads
the answers; this module holds the small registry of judges behind ``--judge BACKEND:MODEL``:

- ``openai:MODEL``: any OpenAI-compatible chat endpoint through ``causalkg.core.llm.ChatClient``
  (``[llm]`` config: base URL, key variable, concurrency, retries honouring Retry-After, timeout,
  disk cache, token and cost accounting). ``openai:`` alone uses ``llm.model``.
- ``transformers:MODEL``: a local seq2seq (e.g. ``allenai/tk-instruct-3b-def``, the reference's
  judge) or causal LM by hub name or folder, batched, on the GPU when there is one. Answers are
  cached on disk (``<paths.cache>/judge.sqlite``) keyed by model, prompt, parameters and try.

A query is greedy (``sample=False``: temperature 0, no seed, try index 0) or sampled
(temperature from ``eval.precision.temperature``, seed ``eval.precision.seed + try``, the try
index in the cache key), so K sampled tries are K different questions and a greedy one is asked
once. ``answer`` returns one text (or the exception that stopped it) per query, in order.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Sequence

from causalkg.core.cache import DiskCache
from causalkg.core.config import Config
from causalkg.core.errors import ConfigError, ModelError
from causalkg.core.llm import ChatClient, ChatRequest
from causalkg.core.models import resolve_device, stage_device
from causalkg.core.progress import progress
from causalkg.registry import parse_spec, registry
from causalkg.evaluation.judging.hf_models import model_id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeQuery:
    """One question to a judge. ``sample``: decode with temperature and seed; else greedily."""

    prompt: str
    try_index: int = 0
    sample: bool = False


class Judge:
    """The judge interface. ``spec`` is the name it was created from (``openai:gpt-4o-mini``)."""

    spec: str = ""

    def answer(self, queries: Sequence[JudgeQuery], *, desc: str | None = None) -> list[str | Exception]:
        raise NotImplementedError

    def usage(self) -> dict[str, Any]:
        """Requests sent, cache hits, retries, failures, tokens, cost (None when unknown)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """The model and decoding parameters, for manifests and reports."""
        raise NotImplementedError


class OpenAIJudge(Judge):
    """A chat model behind any OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(self, model: str, *, cfg: Config, temperature: float = 0.7, seed: int = 0,
                 max_tokens: int = 10, client: ChatClient | None = None, **client_overrides: Any):
        self.client = client or ChatClient.from_config(cfg, model=model or None, **client_overrides)
        self.spec = f"openai:{self.client.model}"
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.max_tokens = int(max_tokens) if max_tokens else None

    def request(self, q: JudgeQuery) -> ChatRequest:
        if q.sample:
            return ChatRequest.of(q.prompt, temperature=self.temperature, seed=self.seed + q.try_index,
                                  try_index=q.try_index, max_tokens=self.max_tokens)
        return ChatRequest.of(q.prompt, temperature=0.0, max_tokens=self.max_tokens)

    def answer(self, queries: Sequence[JudgeQuery], *, desc: str | None = None) -> list[str | Exception]:
        results = self.client.chat_many([self.request(q) for q in queries], desc=desc, return_exceptions=True)
        return [r if isinstance(r, Exception) else r.text for r in results]

    def usage(self) -> dict[str, Any]:
        return self.client.usage.as_dict()

    def describe(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.client.model, "base_url": self.client.base_url,
                "temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                "concurrency": self.client.concurrency}


class TransformersJudge(Judge):
    """A local seq2seq or causal language model, batched (see the module docstring).

    Sampled tries are generated per try index, after ``torch.manual_seed(seed + try)``, in input
    order and batches of ``batch_size``: a run is reproducible for the same uncached prompts and
    batch size (a batch's random stream is shared by its rows).
    """

    def __init__(self, model: str, *, cfg: Config | None = None, temperature: float = 0.7, seed: int = 0,
                 max_tokens: int = 10, batch_size: int = 16, device: str = "auto", dtype: str = "auto",
                 top_p: float = 1.0, cache: DiskCache | None = None):
        if not model:
            raise ConfigError("transformers judge without a model", hint="use transformers:NAME_OR_PATH")
        self.name = model
        self.spec = f"transformers:{model}"
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.max_tokens = int(max_tokens) or 10
        self.batch_size = max(1, int(batch_size))
        self.top_p = float(top_p)
        self.device_option = device
        self.dtype_option = dtype
        if cache is None and cfg is not None:
            cache = DiskCache(cfg.path("paths.cache") / "judge.sqlite")
        self.cache = cache
        self.identity = model_id(model)
        self._model: Any = None
        self._tok: Any = None
        self.device: str | None = None
        self.seq2seq: bool | None = None
        self._lock = threading.Lock()
        self._usage = {"requests": 0, "cache_hits": 0, "retries": 0, "failures": 0,
                       "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None}

    # -- loading -----------------------------------------------------------------------------

    def _resolve_device(self) -> str:
        return resolve_device(str(self.device_option or "auto"))

    def _resolve_dtype(self, device: str) -> Any:
        import torch

        opt = (self.dtype_option or "auto").lower()
        if opt == "auto":
            if device.startswith("cuda") and torch.cuda.is_bf16_supported():
                return torch.bfloat16  # fp16 overflows in T5-family models such as tk-instruct
            return torch.float32
        try:
            return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[opt]
        except KeyError:
            raise ConfigError(f"eval.precision.dtype {opt!r} is not one of auto, float32, bfloat16, float16") from None

    def load(self) -> None:
        """Load the tokenizer and model (once). Raises ModelError when it cannot be loaded."""
        if self._model is not None:
            return
        try:
            from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers is a dependency
            raise ModelError(f"transformers is not installed: {exc}") from None
        try:
            conf = AutoConfig.from_pretrained(self.name)
            tok = AutoTokenizer.from_pretrained(self.name)
        except (OSError, ValueError) as exc:
            raise ModelError(
                f"cannot load judge model {self.name!r}: {str(exc).splitlines()[0]}",
                hint="give a local folder, or a hub name already in the local cache (downloads need network)",
            ) from None
        self.seq2seq = bool(getattr(conf, "is_encoder_decoder", False))
        if not self.seq2seq:
            tok.padding_side = "left"  # decoder-only models continue the prompt on the right
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        device = self._resolve_device()
        dtype = self._resolve_dtype(device)
        cls = AutoModelForSeq2SeqLM if self.seq2seq else AutoModelForCausalLM
        try:
            model = cls.from_pretrained(self.name, dtype=dtype)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load judge model {self.name!r}: {str(exc).splitlines()[0]}") from None
        self._model = model.to(device).eval()
        self._tok = tok
        self.device = device
        log.info("judge %s loaded on %s (%s)", self.name, device, "seq2seq" if self.seq2seq else "causal LM")

    # -- answering ---------------------------------------------------------------------------

    def _params(self, sample: bool) -> dict[str, Any]:
        if sample:
            return {"sample": True, "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed,
                    "max_new_tokens": self.max_tokens}
        return {"sample": False, "max_new_tokens": self.max_tokens}

    def _key(self, q: JudgeQuery) -> tuple:
        return ("transformers", self.identity, q.prompt, self._params(q.sample), q.try_index if q.sample else 0)

    def _generate(self, prompts: list[str], sample: bool) -> list[str]:
        import torch

        tok, model = self._tok, self._model
        enc = tok(prompts, return_tensors="pt", padding=True, truncation=True).to(self.device)
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_tokens, "pad_token_id": tok.pad_token_id}
        if sample:
            kwargs.update(do_sample=True, temperature=max(self.temperature, 1e-5), top_p=self.top_p, top_k=0)
        else:
            kwargs.update(do_sample=False)
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        if not self.seq2seq:
            out = out[:, enc["input_ids"].shape[1]:]
        texts = tok.batch_decode(out, skip_special_tokens=True)
        self._usage["prompt_tokens"] += int(enc["attention_mask"].sum())
        special = torch.tensor(sorted(set(tok.all_special_ids)), device=out.device)
        self._usage["completion_tokens"] += int((~torch.isin(out, special)).sum())
        return [t.strip() for t in texts]

    def answer(self, queries: Sequence[JudgeQuery], *, desc: str | None = None) -> list[str | Exception]:
        import torch

        out: list[str | Exception | None] = [None] * len(queries)
        todo: dict[tuple, list[int]] = {}  # (sample, try) -> query positions still to generate
        seen: dict[str, int] = {}
        dupes: list[tuple[int, int]] = []
        for i, q in enumerate(queries):
            key = self._key(q)
            fp = DiskCache.key(*key)
            if fp in seen:  # the same question twice in one call: generate it once
                dupes.append((i, seen[fp]))
                continue
            seen[fp] = i
            hit = self.cache.get(*key) if self.cache is not None else None
            if hit is not None:
                out[i] = hit["text"]
                self._usage["cache_hits"] += 1
                continue
            todo.setdefault((q.sample, q.try_index if q.sample else 0), []).append(i)
        total = sum(len(v) for v in todo.values())
        if total:
            self.load()
            bar = progress(total=total, desc=desc or f"asking {self.name}", unit="prompt")
            try:
                for (sample, try_index), positions in sorted(todo.items()):
                    if sample:
                        torch.manual_seed(self.seed + try_index)
                    for start in range(0, len(positions), self.batch_size):
                        chunk = positions[start:start + self.batch_size]
                        try:
                            texts = self._generate([queries[i].prompt for i in chunk], sample)
                        except RuntimeError as exc:  # e.g. CUDA out of memory: fail these, say why
                            err = ModelError(f"judge {self.name} failed on a batch: {str(exc).splitlines()[0]}",
                                             hint="lower eval.precision.batch_size")
                            for i in chunk:
                                out[i] = err
                            self._usage["failures"] += len(chunk)
                            bar.update(len(chunk))
                            continue
                        for i, text in zip(chunk, texts):
                            out[i] = text
                            if self.cache is not None:
                                self.cache.put({"text": text}, *self._key(queries[i]))
                        self._usage["requests"] += len(chunk)
                        bar.update(len(chunk))
            finally:
                bar.close()
        for i, j in dupes:
            out[i] = out[j]
        return [o if o is not None else ModelError("no answer") for o in out]

    def usage(self) -> dict[str, Any]:
        return dict(self._usage)

    def describe(self) -> dict[str, Any]:
        return {"backend": "transformers", "model": self.name, "identity": self.identity,
                "device": self.device or self._resolve_device(), "seq2seq": self.seq2seq,
                "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed,
                "max_new_tokens": self.max_tokens, "batch_size": self.batch_size}


JUDGES = registry("judge")  # causalkg.registry.CATALOG: openai.v1, transformers.v1


def create_judge(spec: str, cfg: Config, **overrides: Any) -> Judge:
    """A judge from its name (``openai:MODEL`` or ``transformers:MODEL``), configured from
    ``[eval]`` (``precision_temperature``, ``precision_seed``, ``precision_max_tokens``, and for
    transformers ``precision_batch_size``, ``precision_device``, ``precision_dtype``) and
    ``[llm]``. ``overrides`` replace those options (``None`` values are ignored); for ``openai``
    any other keyword goes to ``ChatClient`` (``sleep``, ``concurrency``, ``base_url``, ...).
    Raises ConfigError on an unknown backend.
    """
    s = parse_spec(spec)
    ev = cfg["eval"]
    options: dict[str, Any] = {
        "temperature": ev["precision"]["temperature"], "seed": ev["precision"]["seed"],
        "max_tokens": ev["precision"]["max_tokens"],
    }
    if JUDGES.base(s.backend) == "transformers":
        options.update(batch_size=ev["precision"]["batch_size"], device=stage_device(cfg, "eval.precision.device"),
                       dtype=ev["precision"]["dtype"])
    options.update({k: v for k, v in overrides.items() if v is not None})
    return JUDGES.get(s.backend)(s.arg, cfg=cfg, **options)
