"""Causal epistemic consistency, reading the judge's answers: the seed intermediates, the stronger
and weaker versions, and a ranking of ten letters; an unusable answer raises ``ParseError`` so the
question is asked again (``evaluation.judging.llm_answers``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from causalkg.evaluation.judging.consistency_metrics import LETTERS
from causalkg.evaluation.judging.consistency_input import _clean


# --- parsing the judge's answers -------------------------------------------------------------

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$", re.M)


def _json_object(text: str) -> Any:
    """The first JSON object or array in ``text`` (code fences and prose around it ignored)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    body = _FENCE.sub("", text.strip())
    decoder = json.JSONDecoder()
    for i, ch in enumerate(body):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(body[i:])
                return value
            except json.JSONDecodeError:
                continue
    raise ParseError("no JSON object found in the answer")


def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z]+", "_", key.lower()).strip("_")


def parse_seed(text: str) -> dict[str, str]:
    """``{"supporter": ..., "defeater": ...}`` from the seeding answer (ParseError otherwise)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    value = _json_object(text)
    if not isinstance(value, dict):
        raise ParseError("expected a JSON object with keys supporter and defeater")
    got = {_norm_key(k): v for k, v in value.items()}
    out = {}
    for key in ("supporter", "defeater"):
        v = got.get(key)
        if not isinstance(v, str) or not v.strip():
            raise ParseError(f"the key {key!r} must hold a non-empty statement")
        out[key] = _clean(v)
    if out["supporter"].lower() == out["defeater"].lower():
        raise ParseError("the supporter and the defeater are the same statement")
    return out


VARIANT_KEYS = ("much_stronger", "slightly_stronger", "slightly_weaker", "much_weaker")


def parse_variants(text: str, original: str | None = None) -> dict[str, str]:
    """The four versions of a supporter or defeater, keyed by ``VARIANT_KEYS`` (ParseError otherwise)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    value = _json_object(text)
    if not isinstance(value, dict):
        raise ParseError(f"expected a JSON object with the keys {', '.join(VARIANT_KEYS)}")
    got = {_norm_key(k): v for k, v in value.items()}
    missing = [k for k in VARIANT_KEYS if not isinstance(got.get(k), str) or not got[k].strip()]
    if missing:
        raise ParseError(f"missing or empty key(s): {', '.join(missing)}")
    out = {k: _clean(got[k]) for k in VARIANT_KEYS}
    texts = [v.lower() for v in out.values()] + ([original.lower()] if original else [])
    if len(set(texts)) != len(texts):
        raise ParseError("the versions must differ from each other and from the original statement")
    return out


_LABEL_ITEM = re.compile(r"^\W*(?:statement|option|item)?\s*\(?\[?([A-Za-z])\)?\]?(?:[.:)\]\s-]|$)")


def _label_of(item: Any, labels: str) -> str | None:
    if not isinstance(item, str):
        return None
    s = item.strip()
    if len(s) == 1:
        return s.upper() if s.upper() in labels else None
    m = _LABEL_ITEM.match(s)
    if m and m.group(1) in labels:  # beyond a bare letter, only capitals count as labels
        return m.group(1)
    return None


def _check_permutation(seq: list[str], labels: str) -> list[str]:
    from causalkg.evaluation.judging.llm_answers import ParseError

    missing = [x for x in labels if x not in seq]
    repeated = sorted({x for x in seq if seq.count(x) > 1})
    if missing or repeated or len(seq) != len(labels):
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if repeated:
            parts.append(f"repeated {', '.join(repeated)}")
        if len(seq) != len(labels) and not parts:
            parts.append(f"{len(seq)} items instead of {len(labels)}")
        raise ParseError(f"the ranking must use each of the letters {', '.join(labels)} exactly once: " + "; ".join(parts))
    return seq


def parse_ranking(text: str, labels: str = LETTERS) -> list[str]:
    """The labels in ranked order, from a JSON answer (``{"ranking": ["C", "A", ...]}`` or a bare
    list), or failing that from a line such as ``C > A > ...`` / ``C, A, ...`` or a numbered list
    with one label per line. Every label must occur exactly once (ParseError otherwise)."""
    from causalkg.evaluation.judging.llm_answers import ParseError

    try:
        value = _json_object(text)
    except ParseError:
        value = None
    if isinstance(value, dict):
        lists = [v for k, v in value.items() if isinstance(v, list)]
        ranked = value.get("ranking", lists[0] if len(lists) == 1 else None)
        if not isinstance(ranked, list):
            raise ParseError('expected {"ranking": [the letters in order]}')
        value = ranked
    if isinstance(value, list):
        seq = [_label_of(x, labels) for x in value]
        if None in seq:
            bad = value[seq.index(None)]
            raise ParseError(f"{bad!r} in the ranking is not one of the letters {', '.join(labels)}")
        return _check_permutation([s for s in seq if s], labels)
    # No JSON: a one-line ranking, or one label per line.
    body = _FENCE.sub("", text.strip())
    token = re.compile(r"(?<![A-Za-z])([" + labels + r"])(?![A-Za-z])")
    for line in body.splitlines():
        stripped = re.sub(r"^\s*(?:ranking|answer|order)\s*[:=]", "", line, flags=re.I)
        if re.fullmatch(r"[\s" + labels + r",;>→<\-\[\]()\"'.]*", stripped) and stripped.strip():
            seq = token.findall(stripped)
            if len(seq) >= 2:
                return _check_permutation(seq, labels)
    per_line = [_label_of(re.sub(r"^\s*\d+\s*[.)]\s*", "", line), labels) for line in body.splitlines() if line.strip()]
    per_line = [x for x in per_line if x]
    if len(per_line) >= 2:
        return _check_permutation(per_line, labels)
    raise ParseError('no ranking found: answer with {"ranking": [the ten letters in order]}')
