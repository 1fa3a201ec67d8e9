"""Does a linked concept mean what the phrase means? A check of the linker's answers.

The linker ranks concepts by the similarity of a phrase to their labels and aliases; similar is
not the same: "tsunami waves" is close to *seismic wave*, "initial depression" (of the sea) to
*Long Depression*, "revolutionary atmosphere" to *air pollution*, "behavior" to *consumer
behavior*. ``SenseCheck.filter`` keeps a candidate only when it passes these rules, calibrated
on the hand-judged mentions of the snapshot KG (``tests/fixtures/judged/``):

1. **Head.** The phrase is cut to its first noun group (before a preposition, a relative
   pronoun, a conjunction or a verb-like word such as "was"), whose last word is the head and
   the words before it the modifiers. A nearest-neighbour candidate must contain the head (the
   same stem, Porter-style: "flooding" / "floods" / "flood") in its matched surface form or its
   label, unless the similarity reaches ``linking.sense_strong`` (default 0.75: a synonym,
   "temblor" -> *earthquake*): "revolutionary atmosphere" -> air pollution fails.
   A light head that only frames its modifiers ("tsunami waves", "bombing incident":
   ``LIGHT_HEADS``) may link to the concept its modifiers name exactly (*tsunami*).
2. **No invented modifiers.** Every content word of the candidate's matched surface form must
   stem-match a word of the phrase, so the concept is not narrower than the phrase:
   "tsunami waves" -> *seismic wave* ("seismic") or *rogue wave* (by its alias "extreme
   wave"), "behavior" -> *consumer behavior*, "event" -> *historical event*, "initial
   depression" -> *Long Depression*, "Radiation" -> *nuclear accident* (by its alias
   "radiation incident", similarity 0.81) fail. (Applied when the head matched; a synonym let
   in by rule 1 is not compared word by word.)
   A phrase may be narrower than its concept ("a series of steam explosions" -> *explosion*,
   "the undersea megathrust earthquake" -> *earthquake*), never the other way round. The cost:
   a correct broader concept with a modifier of its own is refused too ("the Krakatoa
   eruption" -> *volcanic eruption*): precision first.
3. **Generic words.** A phrase that is (after normalisation) one word listed in
   ``GENERIC_HEADS`` ("event", "incident", "situation", "behavior", "channels", "attacks",
   "effect", "activity", ...) links only when the sentence is about that concept: the cosine of
   the sentence with the concept's label and description, with the linker's encoder, reaches
   ``linking.sense_context`` (default 0.35). "event" -> *historical event* in "the event was
   televised" fails; "channels" -> *channel* fails.

4. **Another kind of the same thing.** A concept whose label qualifies the head with a word
   of its own ("property damage") does not mean a phrase that qualifies it with another
   ("liver damage"), even when the concept was found by its bare head ("damage" is an alias
   of *property damage*). The phrase is read as written in its sentence: a span the extractor
   cut from its noun group ("the liver [damage] caused by the virus") is compared with the
   whole group (``written_group``). Modifiers in ``GENERIC_MODIFIERS`` ("massive", "economic")
   and capitalised ones (a name: "the Krakatoa eruption") are not another kind.

The check never adds a candidate; it returns each phrase's candidates in order up to the first
rejected one (an empty list: NIL): when the best answer does not mean the phrase, a lower one
that merely shares its words is no better (on the alias hold-out of ``bench linking``, falling
back to lower candidates lowered accuracy among answered queries, stopping raised it). ``explain`` returns the reason for one decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from causalkg.linking.normalize import fold, normalise

# Words that end the first noun group of a phrase.
BOUNDARY = {
    "of", "in", "on", "at", "by", "from", "with", "for", "during", "to", "into", "onto", "over", "under",
    "between", "among", "against", "after", "before", "following", "since", "through", "across", "around",
    "that", "which", "who", "whom", "whose", "where", "when", "while", "as", "and", "or", "but", "than",
    "was", "were", "is", "are", "be", "been", "being", "has", "had", "have", "did", "does", "do",
    "caused", "led", "resulted", "produced", "triggered", "including", "such", "like", "about",
    "within", "without", "near", "inside", "outside", "throughout", "toward", "towards", "upon", "via", "per",
    "amid", "along", "beyond", "behind", "despite", "except", "because", "due", "can", "could", "may", "might",
    "will", "would", "should", "must", "equivalent", "similar", "comparable", "there", "here",
}
# Heads that are a quantity, a part or a kind of what follows "of": "the rapid series of power
# failures", "the effects of the tsunami", "the level of damage".
OF_HEADS = {"series", "wave", "waves", "spate", "number", "numbers", "string", "chain", "round", "rounds", "bout",
            "bouts", "period", "periods", "episode", "episodes", "amount", "amounts", "level", "levels", "extent",
            "scale", "lot", "lots", "kind", "kinds", "type", "types", "form", "forms", "act", "acts", "case", "cases",
            "effect", "effects", "impact", "impacts", "consequence", "consequences", "outbreak", "outbreaks",
            "threat", "risk", "state", "sense", "wake", "aftermath", "result", "results", "part", "rest", "site"}
STOP = {"the", "a", "an", "of", "and", "or", "in", "on", "at", "to", "for", "by", "with", "from", "into", "as", "s", "its",
        "their", "his", "her"}
# Modifiers that do not change what the head names.
GENERIC_MODIFIERS = {
    "initial", "first", "second", "third", "final", "last", "early", "late", "later", "new", "old", "recent",
    "large", "small", "big", "huge", "major", "minor", "main", "great", "greater", "severe", "serious",
    "heavy", "light", "massive", "widespread", "extensive", "significant", "considerable", "substantial",
    "further", "additional", "other", "several", "many", "numerous", "multiple", "various", "more", "most",
    "total", "overall", "general", "local", "regional", "national", "international", "global", "worldwide",
    "widespread", "immediate", "subsequent", "resulting", "ensuing", "direct", "indirect", "possible",
    "potential", "actual", "real", "deadly", "fatal", "devastating", "catastrophic", "destructive",
    "violent", "sudden", "rapid", "gradual", "prolonged", "long", "short", "continued", "ongoing",
    "repeated", "frequent", "mass", "public", "human", "civilian", "military", "economic", "political",
    "social", "physical", "extreme", "high", "low", "higher", "lower", "increased", "reduced", "growing",
    "rising", "falling", "strong", "weak", "whole", "entire", "partial", "complete", "some", "any",
    "much", "little", "few", "wide", "broad", "deep", "vast", "enormous", "terrible", "horrible", "this",
    "these", "those", "that", "such", "same", "own", "one", "two", "three", "four", "five", "hundreds",
    "thousands", "millions", "dozens", "numbers", "number", "tens",
}
GENERIC_HEADS = {
    "event", "events", "incident", "incidents", "situation", "situations", "behavior", "behaviour",
    "behaviors", "behaviours", "channel", "channels", "effect", "effects", "impact", "impacts", "activity",
    "activities", "action", "actions", "change", "changes", "development", "developments", "process",
    "problem", "problems", "issue", "issues", "condition", "conditions", "factor", "factors", "circumstance",
    "circumstances", "thing", "things", "case", "cases", "matter", "phenomenon", "phenomena", "result",
    "results", "outcome", "consequence", "consequences", "response", "responses", "reaction", "reactions",
    "attack", "attacks", "operation", "operations", "movement", "movements", "pressure", "force", "forces",
    "environment", "atmosphere", "climate", "movement", "wave", "waves", "system", "systems", "damage",
    "loss", "losses", "failure", "failures", "crisis", "conflict", "disaster", "tragedy", "accident",
    "violence", "unrest", "tension", "tensions", "collapse", "destruction", "death", "deaths",
}
# Heads that only count or frame what their modifiers name: "tsunami waves", "bombing incident".
LIGHT_HEADS = {"wave", "waves", "incident", "incidents", "event", "events", "episode", "episodes", "outbreak",
               "outbreaks", "case", "cases", "spate", "series", "effect", "effects"}
# Generic heads that are also the name of a well-defined effect class: they link on exact
# match without the context test (a death is a death).
CLEAR_GENERIC = {"damage", "loss", "losses", "death", "deaths", "destruction", "violence",
                 "unrest", "failure", "failures", "crisis", "conflict", "disaster", "accident", "tension",
                 "tensions", "tragedy"}

_WORD = re.compile(r"[a-z0-9]+")


def forms(word: str) -> set[str]:
    """The forms a word is compared by: its stem, and the word without a final "s" (the stem
    keeps "crisis", "tsunamis" needs the plain cut)."""
    w = word.lower()
    out = {stem(w), w}
    if w.endswith("s") and len(w) > 3:
        out.add(w[:-1])
    return out


def _match(a: str, bs: set[str]) -> bool:
    return bool(forms(a) & bs)


def stem(word: str) -> str:
    """A crude stem for matching a phrase's words against a surface form's: plural and verb
    endings off ("floods", "flooding", "flooded" -> "flood"; "explosions" -> "explosion";
    "casualties" -> "casualty"; "behaviour" -> "behavior")."""
    w = word.lower().replace("our", "or") if word.lower().endswith("our") else word.lower()
    for suf, rep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            if suf == "es" and not w.endswith(("ches", "shes", "xes", "sses", "zes", "oes")):
                continue
            if suf == "s" and w.endswith(("ss", "us", "is")):
                continue
            w = w[: -len(suf)] + rep
            break
    return w


def words(text: str) -> list[str]:
    return _WORD.findall(fold(text))


@dataclass(frozen=True)
class Parsed:
    head: str | None  # stem of the head word
    head_word: str | None
    modifiers: tuple[str, ...]  # words before the head in the first noun group
    all_stems: frozenset[str]
    n_words: int


def parse(phrase: str) -> Parsed:
    """The first noun group of a normalised phrase: its head and modifiers."""
    ws = words(normalise(phrase).text or phrase)
    group: list[str] = []
    i = 0
    while i < len(ws):
        w = ws[i]
        if w in BOUNDARY and group:
            # "the rapid series of power failures": the group after "of" is the one that counts
            if w == "of" and group[-1] in OF_HEADS and i + 1 < len(ws):
                group = []
                i += 1
                continue
            break
        if w not in BOUNDARY and w not in STOP:
            group.append(w)
        i += 1
    head = group[-1] if group else None
    stems = frozenset(f for w in ws if w not in STOP for f in forms(w))
    return Parsed(stem(head) if head else None, head, tuple(group[:-1]), stems, len(ws))


def _original_modifiers(phrase: str, p: Parsed) -> list[str]:
    """The phrase's modifiers as written (case kept), the first word of the phrase excluded
    (sentence-initial capitals say nothing)."""
    raw = re.findall(r"[A-Za-z0-9]+", phrase)
    low = {m for m in p.modifiers}
    return [w for i, w in enumerate(raw) if i > 0 and w.lower() in low]


# Words that may stand just before a noun group's first word without belonging to it.
_LEFT_STOP = STOP | BOUNDARY | {"this", "these", "those", "that", "some", "any", "no", "each", "every", "all",
                                "both", "such", "our", "your", "my", "whose", "which", "what"}
# Endings of the words before a span that are not a noun modifier: verbs ("causes", "caused",
# "causing") and adjectives or adverbs ("moderate", "national", "severely"), which say how much
# or what like, not which kind.
_NOT_NOUN_ENDINGS = ("s", "ed", "ing", "ly", "ate", "al", "ive", "ous", "ful", "ic", "ant", "ent", "ible", "able",
                     "less", "ish", "ary", "ory")
_LEFT_WORD = re.compile(r"([A-Za-z][A-Za-z-]*)\s+$")


def written_group(sentence: str, start: int, end: int, *, text: str | None = None, max_words: int = 2) -> str:
    """The span ``sentence[start:end]`` with the lower-case words written just before it that
    belong to its noun group (at most ``max_words``): "the liver damage caused by the virus"
    with the span "damage" gives "liver damage". The span itself when nothing qualifies it; ""
    when the offsets do not fit the sentence (or do not hold ``text``, when given)."""
    if not (0 <= start < end <= len(sentence)) or (text is not None and sentence[start:end] != text):
        return ""
    span = sentence[start:end]
    left = sentence[:start]
    added: list[str] = []
    while len(added) < max_words:
        m = _LEFT_WORD.search(left)
        if m is None:
            break
        w = m.group(1)
        if not w.islower() or w in _LEFT_STOP or w in GENERIC_MODIFIERS or w.endswith(_NOT_NOUN_ENDINGS):
            break
        added.insert(0, w)
        left = left[: m.start()]
    return " ".join([*added, span]) if added else span


def core(phrase: str) -> str:
    """The first noun group of a phrase as text (modifiers and head): "Inadvertent explosion of
    core during emergency shutdown" -> "inadvertent explosion"; the phrase itself when it has none."""
    p = parse(phrase)
    return " ".join([*p.modifiers, p.head_word]) if p.head_word else phrase


class SenseCheck:
    """The rules above, with the linker's concept table (labels, descriptions) and encoder."""

    def __init__(self, concepts: dict[str, dict], *, encoder: Any = None, strong: float = 0.75,
                 context: float = 0.35):
        self.concepts = concepts
        self.encoder = encoder
        self.strong = float(strong)
        self.context = float(context)
        self._desc_cache: dict[str, Any] = {}
        self.names = {fold(c.get("label") or "") for c in concepts.values()} - {""}

    @classmethod
    def from_config(cls, cfg: Any, linker: Any) -> "SenseCheck":
        lk = cfg["linking"]
        return cls(linker.concepts, encoder=lambda texts: linker.embed(texts),
                   strong=float(lk.get("sense_strong", 0.75)), context=float(lk.get("sense_context", 0.35)))

    # --- one decision ------------------------------------------------------------------------

    def explain(self, phrase: str, cand: Any, sentence: str | None = None, *, context_score: float | None = None,
                written: str | None = None) -> str | None:
        """Why ``cand`` (a Candidate) does not mean ``phrase``: a reason, or None when it does.
        ``written``: the phrase's noun group as its sentence writes it (``written_group``), for rule 4."""
        p = parse(phrase)
        if p.head is None:
            return "no head word"
        c = self.concepts.get(cand.qid, {})
        surface_words = [w for w in words(cand.surface) if w not in STOP]
        label_words = [w for w in words(c.get("label") or cand.label or "") if w not in STOP]
        surface_stems = {f for w in surface_words for f in forms(w)}
        label_stems = {f for w in label_words for f in forms(w)}
        other = self._other_kind(written or phrase, label_words, label_stems | surface_stems)
        if other is not None:
            return other
        sim = float((cand.model_extra or {}).get("similarity", cand.score))
        exact = cand.match == "exact"
        if not exact:
            head_ok = _match(p.head_word, surface_stems) or _match(p.head_word, label_stems)
            # "tsunami waves" -> tsunami: a light head whose modifiers name the concept
            mod_forms = {f for m in p.modifiers for f in forms(m)}
            light = (p.head_word in LIGHT_HEADS and bool(p.modifiers) and bool(surface_words)
                     and all(_match(w, mod_forms) for w in surface_words))
            if not head_ok and not light:
                if sim < self.strong:
                    return f"head '{p.head_word}' not in '{cand.surface}'"
                # a synonym ("temblor" -> earthquake): nothing more to compare word by word
            else:
                extra = [w for w in surface_words if not _match(w, set(p.all_stems))]
                # a named modifier ("the Krakatoa eruption") makes the phrase an instance: a
                # class that adds a kind word of its own ("volcanic eruption") may stand for it
                named = any(m[:1].isupper() for m in _original_modifiers(phrase, p))
                if extra and not (named and c.get("kind", cand.kind) == "class" and head_ok):
                    return f"'{cand.surface}' adds {', '.join(extra)}"
        # generic one-word phrases: only when the sentence is about the concept
        single = p.n_words == 1 or (not p.modifiers and len(surface_words) == 1)
        if single and p.head_word in GENERIC_HEADS and p.head_word not in CLEAR_GENERIC:
            score = context_score
            if score is None and sentence and self.encoder is not None:
                score = self.context_scores([sentence], [cand.qid])[0]
            if score is None or score < self.context:
                return f"generic word '{p.head_word}' and the sentence is not about {cand.label!r}" + (
                    f" (context {score:.2f} < {self.context})" if score is not None else "")
        return None

    @staticmethod
    def _other_kind(phrase: str, label_words: list[str], known: set[str]) -> str | None:
        """Rule 4: the label and the phrase qualify the same head with different kind words.
        ``known``: the stems of the label and of the surface form the candidate was found by (an
        alias that holds the phrase's modifier, "criminal damage" of *property damage*, is its name)."""
        p = parse(phrase)
        if p.head is None or not p.modifiers or not _match(p.head_word, known):
            return None
        named = {m.lower() for m in _original_modifiers(phrase, p) if m[:1].isupper()}
        if phrase[:1].isupper() and p.modifiers and phrase.split()[0].lower() == p.modifiers[0]:
            named.add(p.modifiers[0])  # a sentence-initial word may be a name too: not compared
        own = [m for m in p.modifiers if m not in GENERIC_MODIFIERS and m not in named
               and not _match(m, known) and not m.isdigit()]
        head_forms = forms(p.head_word)
        # only a label that holds the head itself qualifies it ("property damage"); a label of
        # other words is a name for the head ("disease" for "acute radiation sickness")
        if not any(forms(w) & head_forms or _match(w, {p.head}) for w in label_words):
            return None
        theirs = [w for w in label_words if w not in GENERIC_MODIFIERS and not (forms(w) & head_forms)
                  and not _match(w, set(p.all_stems))]
        if own and theirs:
            return f"'{phrase}' is another kind of {p.head_word} than {' '.join(label_words)!r}"
        return None

    def context_scores(self, sentences: Sequence[str], qids: Sequence[str]) -> list[float]:
        """Cosine of each sentence with its concept's "label: description"."""
        import numpy as np

        texts = []
        for q in qids:
            c = self.concepts.get(q, {})
            texts.append(f"{c.get('label') or ''}: {c.get('description') or ''}".strip(": "))
        vs = self.encoder(list(sentences))
        vd = self.encoder(texts)
        return [float(x) for x in np.sum(np.asarray(vs) * np.asarray(vd), axis=1)]

    # --- a batch -----------------------------------------------------------------------------

    def filter(self, phrases: Sequence[str], results: Sequence[Sequence[Any]],
               sentences: Sequence[str | None] | None = None,
               written: Sequence[str | None] | None = None) -> list[list[Any]]:
        """Each phrase's candidates minus those that fail the check (order kept). ``written``:
        each phrase's noun group as its sentence writes it (``written_group``), when known."""
        sentences = list(sentences) if sentences is not None else [None] * len(phrases)
        written = list(written) if written is not None else [None] * len(phrases)
        # context scores are needed only for generic single words: compute them in one batch
        need: list[tuple[int, int]] = []
        for i, (ph, cands) in enumerate(zip(phrases, results)):
            p = parse(ph)
            if p.head_word in GENERIC_HEADS and p.head_word not in CLEAR_GENERIC and sentences[i]:
                need += [(i, j) for j in range(len(cands))]
        ctx: dict[tuple[int, int], float] = {}
        if need and self.encoder is not None:
            scores = self.context_scores([sentences[i] for i, _ in need], [results[i][j].qid for i, j in need])
            ctx = dict(zip(need, scores))
        out = []
        for i, (ph, cands) in enumerate(zip(phrases, results)):
            # the candidates up to the first rejected one: when the best answer does not mean the
            # phrase, a lower one that merely shares its words is no better (NIL instead)
            kept = []
            for j, c in enumerate(cands):
                if self.explain(ph, c, sentences[i], context_score=ctx.get((i, j)), written=written[i]) is not None:
                    break
                kept.append(c)
            out.append(kept)
        return out
