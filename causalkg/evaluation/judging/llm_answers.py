"""Asking a chat model for answers in a fixed format, and asking again when the answer is unusable.

Used by the judging-the-judges measures (``evaluation.judging.sqc``: the LLM matcher and complementer;
``evaluation.judging.consistency``: generating and ranking intermediates). Every prompt goes out through
the shared ``causalkg.core.llm.ChatClient`` (concurrency, retries on HTTP faults, disk cache, cost
accounting); this module adds the layer above it: each answer is handed to a strict parser, and
an answer the parser rejects is sent back to the model with the reason ("your answer could not
be read: ...") up to ``max_attempts`` times in all. What could not be read in the end is
reported, never guessed.

Prompts live as text files in ``evaluation/judging/prompts/`` and are filled with ``string.Template``
(``$name`` placeholders): values are inserted once and never re-interpreted, so braces, dollar
signs or instructions inside the data stay data.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable, Generic, Sequence, TypeVar

from causalkg.core.errors import CausalKGError, ConfigError
from causalkg.core.llm import ChatClient, ChatRequest

T = TypeVar("T")

CORRECTION = (
    "Your answer could not be used: {reason}\n"
    "Answer the original request again, following the required format exactly, with nothing else."
)


class ParseError(ValueError):
    """An answer does not follow the required format; the message says what is wrong."""


@dataclass
class Outcome(Generic[T]):
    """The parsed value of one request, or why there is none. ``answers`` holds every raw answer
    the model gave (one per attempt), ``errors`` the parser's complaint about each rejected one."""

    value: T | None = None
    error: str | None = None
    answers: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def attempts(self) -> int:
        return len(self.answers)


def load_prompt(name: str) -> string.Template:
    """The prompt template ``evaluation/judging/prompts/<name>.txt``."""
    try:
        text = resources.files(__package__).joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no prompt template evaluation/judging/prompts/{name}.txt") from None
    return string.Template(text)


def render(template: string.Template, **values: Any) -> str:
    """Fill a template; a placeholder without a value is a ConfigError (never left in the prompt)."""
    try:
        return template.substitute(**{k: str(v) for k, v in values.items()})
    except KeyError as exc:
        raise ConfigError(f"prompt template needs a value for ${exc.args[0]}") from None
    except ValueError as exc:
        raise ConfigError(f"bad prompt template: {exc}") from None


def ask_parsed(
    client: ChatClient,
    prompts: Sequence[str],
    parse: Callable[[str], T] | Sequence[Callable[[str], T]],
    *,
    max_attempts: int = 3,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    desc: str | None = None,
) -> list[Outcome[T]]:
    """Ask every prompt, parse every answer, and re-ask (with the parser's reason) those that fail.

    ``parse`` raises ``ParseError`` (or ``ValueError``) on an unusable answer; give one parser for
    all prompts or one per prompt (when what is acceptable depends on the prompt). All first attempts
    go out together (``chat_many``: concurrent, cached, deduplicated), then the failures' second
    attempts together, and so on. A request the server keeps refusing (``SourceError`` after the
    client's own retries) ends that item at once with the error. Returns one ``Outcome`` per
    prompt, in order.
    """
    if max_attempts < 1:
        raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
    parsers = list(parse) if isinstance(parse, Sequence) else [parse] * len(prompts)
    if len(parsers) != len(prompts):
        raise ValueError("give one parser, or one per prompt")
    outcomes: list[Outcome[T]] = [Outcome() for _ in prompts]
    pending = list(range(len(prompts)))
    for attempt in range(max_attempts):
        if not pending:
            break
        requests = []
        for i in pending:
            messages: list[dict[str, str]] = [{"role": "user", "content": prompts[i]}]
            if attempt:
                messages.append({"role": "assistant", "content": outcomes[i].answers[-1]})
                messages.append({"role": "user", "content": CORRECTION.format(reason=outcomes[i].errors[-1])})
            requests.append(ChatRequest.of(messages, temperature=temperature, max_tokens=max_tokens,
                                           try_index=attempt))
        label = desc if not attempt else f"{desc or 'asking'} (attempt {attempt + 1})"
        results = client.chat_many(requests, desc=label, return_exceptions=True)
        still: list[int] = []
        for i, result in zip(pending, results):
            out = outcomes[i]
            if isinstance(result, Exception):
                if not isinstance(result, CausalKGError):
                    raise result
                out.error = f"request failed: {result}"
                continue
            out.answers.append(result.text)
            try:
                out.value = parsers[i](result.text)
                out.error = None
            except ValueError as exc:  # ParseError is a ValueError
                reason = str(exc) or "unreadable answer"
                if result.finish_reason == "length":
                    reason += " (the answer was cut off at the token limit)"
                out.errors.append(reason)
                out.error = f"no usable answer after {attempt + 1} attempt(s): {reason}"
                still.append(i)
        pending = still
    return outcomes
