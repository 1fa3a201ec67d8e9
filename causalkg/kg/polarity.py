"""Is an extracted cause -> effect pair *asserted* by its sentence, and in that direction?

An extractor finds a cause span and an effect span; the sentence may still say that the
relation did not happen ("no one was killed in the gunfire"), that it was expected, feared or
possible ("an outburst flood was not expected", "could cause", "may lead to"), ask about it
("Did the drought cause the famine?"), describe a measurement of something else ("the most
restrictive definition of the Holocaust produces a death toll of ..."), or state the relation
the other way round ("X caught fire and ... the resulting explosion": the fire causes the
explosion). ``assess`` reads the sentence around the two spans and returns an ``Assessment``:
what it found (``negated``, ``hedged``, ``question``, ``estimate``, ``reversed``, ``unstated``,
``temporal``)
and the words that decided it (``evidence``). The KG assembly stores it on every mention
(``KGMention.assertion``) and drops the pairs whose flags are in ``kg.drop`` (by default every
flag).

How: the spaCy pipeline of ``kg.sentences`` is a blank English tokenizer (no downloaded model,
so no dependency parse is available offline); the rules read word tokens in the *relation
region*: the words between the two spans, the first words of each span (a span that opens with
"no one" / "the resulting" carries the cue itself) and a short stretch before the first span,
cut at clause punctuation (, ; : and the dashes) so that a negation in another clause does not
count. Cues:

- negation: not, n't, never, no, none, nobody, nothing, neither, nor, without, "no one",
  "failed to", "rather than", "instead of", "prevented", "averted"; "not only" is not a negation,
  nor is (nor a hedge) the "if not" of a growing estimate ("hundreds if not thousands", "many if
  not most").
  A "little/few ... so that ... not" construction is found by the same "not".
- hedge: the modals could, might, may, would, should, will ("deaths that will eventually
  result from the accident" is a forecast); verbs and adverbs of expectation or
  belief (expected, predicted, feared, suspected, believed, thought to, hypothesised,
  speculated, possibly, probably, likely, perhaps, potentially, allegedly, risk of, threat of,
  vulnerable or susceptible to); a pair inside the "that" clause of a theory, claim, hypothesis,
  speculation, allegation, rumour, suspicion or belief, however far back in its clause the noun;
  "if", "whether", "unless". "can" states a general capability and is not a hedge. An association
  ("associated with", "correlated with", "correlation between") is not a causal claim either and
  is recorded as a hedge.
- question: the sentence ends with "?".
- estimate: the cause is a measurement or a definition (definition, estimate, figure, count,
  census, calculation, survey, model, study, report, statistics), so the sentence is about
  numbers, not about what caused what.
- reversed: the spans' order disagrees with the cue between them. A forward cue (caused, led
  to, resulted in, produced, triggered, "the resulting", "which provides") reads left cause ->
  right effect; a backward cue (caused by, due to, because (of), as a result of, resulted
  from, after, following, from, since) reads left effect <- right cause. The extractor's
  pair is reversed when the effect span comes first and only forward cues stand between, or the
  cause comes first and only backward cues do; also when the cause span itself opens with
  "the resulting", "the ensuing", "the subsequent" (it is described as an effect); when the
  effect span comes first and is itself marked as a cause ("in the aftermath of the accident,
  ... sickness", "due to the", "after the") with no forward or direct backward cue between; when
  the effect span comes first joined by "followed by" ("the earthquake (followed by the
  tsunami)"), or the cause first joined by "preceded by"; and when the effect span directly
  precedes the cause span with no word between: a compound noun ("the tsunami flooding") reads
  modifier -> head.
- unstated: the sentence states no relation between the spans: it is navigation text ("For more
  information on those deaths, see ..."), the spans are only listed together ("Injuries and
  deaths", a heading; "an ongoing cholera outbreak and a powerful earthquake": two noun phrases
  of one list), or a copula makes the later span a description of the earlier one ("The
  war was a military and economic disaster", "the invasion ended as a disaster", "the war
  (1628-1631) was a conflict": an aside in brackets is not read), a distance
  ("at a distance of 2,500 km from the epicenter of the earthquake"), or a span is the end of a
  hyphenated word ("fire" of "cease-fire"); with no causal cue between the spans, also a change
  of one into the other ("the conflict escalated and became the war", "turned into", "from a war
  to a low-level conflict"), a part ("the war involved massacres", "included") or a manner
  ("fought as a guerrilla war").
- temporal: the only cue between the spans is "after", "following", "before", "during",
  "since", "followed by", "at the time of", "began with" or "coincided with": a sequence or a
  coincidence in time, not a causal claim ("Prospects for reforms faded following the signing of
  the treaty"); also a cause span in a "since" phrase with no verb of its own, before a clause
  in the present perfect ("Since the invasion, ... the occurrence of violence has been reduced").
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from causalkg.core.contracts import Assertion

# The flags, in their declared order (``causalkg.core.contracts.Assertion``).
FLAGS = tuple(name for name in Assertion.model_fields if name != "evidence")
DEFAULT_DROP = FLAGS

_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|n't|[0-9]+|[,;:()\u2013\u2014?!.]|--")
_CLAUSE = {",", ";", ":", "(", ")", "\u2013", "\u2014", "--", ".", "!", "?"}

NEGATIONS = {"not", "n't", "never", "no", "none", "nobody", "nothing", "neither", "nor", "without",
             "cannot", "prevented", "averted", "avoided", "barely"}
NEGATION_PHRASES = (("no", "one"), ("failed", "to"), ("rather", "than"), ("instead", "of"),
                    ("did", "not"), ("was", "not"), ("were", "not"))
NOT_NEGATION = (("not", "only"), ("not", "just"), ("no", "longer"), ("nothing", "but"))
MODALS = {"could", "might", "may", "would", "should", "will"}
HEDGES = {"expected", "expect", "expects", "predicted", "predict", "predicts", "feared", "fear", "fears",
          "suspected", "believed", "believe", "believes", "hypothesized", "hypothesised", "hypothesis",
          "speculated", "speculation", "possibly", "probably", "likely", "unlikely", "perhaps",
          "potentially", "potential", "allegedly", "alleged", "supposedly", "presumably", "presumed",
          "if", "whether", "unless", "theory", "theorized", "theorised", "possible", "threatened", "warned",
          "projected", "forecast", "assumed", "conjectured", "suggested", "suggest", "suggests", "reportedly"}
# A pair inside the "that" clause of one of these nouns is what someone holds, not a fact ("casting
# doubt on the theory that the rocket seen in the ... video had caused the explosion"), however
# far the noun is from the first span within its clause.
HEDGE_THAT_NOUNS = {"theory", "theories", "claim", "claims", "hypothesis", "speculation", "allegation",
                    "allegations", "rumour", "rumours", "rumor", "rumors", "suspicion", "suspicions", "belief"}
# "would" narrating a later fact ("this would later lead to") is not a hedge
_WOULD_NARRATIVE = {"later", "eventually", "ultimately", "soon", "subsequently", "go", "become", "prove"}
HEDGE_PHRASES = (("thought", "to"), ("said", "to"), ("is", "said"), ("in", "order", "to"),
                 # an association is not a causal claim ("psychological trauma associated with the tsunami")
                 ("associated", "with"), ("correlated", "with"), ("correlates", "with"), ("association", "with"),
                 ("correlation", "with"), ("correlation", "between"), ("association", "between"),
                 # a span that is only at risk, or what something is vulnerable to ("vulnerability
                 # to such disasters was blamed on its civil war"), is not said to happen
                 ("risk", "of"), ("threat", "of"), ("vulnerability", "to"), ("vulnerable", "to"),
                 ("susceptibility", "to"), ("susceptible", "to"))
# (not "report", "study", "analysis": a report can cause indignation, "This report poured fuel on
# popular indignation in the U.S.")
MEASURES = {"definition", "definitions", "estimate", "estimates", "figure", "figures", "count", "counts",
            "census", "calculation", "calculations", "statistics", "tally"}
FORWARD = {"caused", "causes", "cause", "causing", "led", "leads", "lead", "leading", "resulted", "results",
           "produced", "produces", "produce", "producing", "triggered", "triggers", "trigger", "triggering",
           "sparked", "sparks", "provoked", "provokes", "prompted", "prompts", "generated", "generates",
           "created", "creates", "brought", "bring", "brings", "contributed", "contributes", "provides",
           "provided", "gave", "gives", "resulting", "ensuing", "therefore", "thus", "hence", "so",
           "destroyed", "killed", "damaged", "forced", "made", "drove", "drives", "fuelled", "fueled",
           "set", "unleashed", "displacing", "triggered", "inflicted", "left", "belli", "pretext", "catalyst"}
# "cause ... by" / "due to" / "because": the right-hand side is the cause
BACKWARD = {"by", "due", "because", "owing", "from", "after", "following", "since", "amid", "caused_by",
            "resulted_from", "result_of", "attributed", "blamed", "thanks"}
TEMPORAL = {"after", "following", "before", "during", "since", "then", "later", "when", "amid"}
# phrases of time or place between the spans: a sequence, a coincidence or a distance, no cause
TEMPORAL_PHRASES = (("at", "the", "time", "of"), ("began", "with"), ("started", "with"), ("opened", "with"),
                    ("begins", "with"), ("starts", "with"), ("coincided", "with"), ("coincides", "with"),
                    ("coinciding", "with"), ("at", "the", "same", "time", "as"))
DISTANCE = {"km", "kilometres", "kilometers", "miles", "mi", "distance", "away"}
# "X and Y", "X, Y": the spans are only listed together (a heading, "Injuries and deaths")
COORDINATION = {"and", "or", "&", ",", "the", "a", "an", "its", "their", "of"}
# "The war was a military and economic disaster": the later span describes the earlier one
COPULAS = ("is", "was", "are", "were", "became", "becomes", "remained", "remains", "ended as", "proved")
# "the conflict escalated and became the war", "turned into", "developed into": one thing changing
# into another, not one causing the other
CHANGE = {"became", "become", "becomes", "becoming", "escalated", "escalates", "escalating", "turned", "turns",
          "evolved", "evolves", "developed", "develops", "transformed", "transforms", "grew", "grows"}
CHANGE_INTO = ("into", "to", "became", "become", "becoming")
# "changed the conflict from a war to a low-level conflict": "from" after one of these names the old
# state of a change, not a cause
CHANGE_FROM = CHANGE | {"changed", "change", "changes", "changing", "shifted", "shifts", "converted", "converts",
                        "switched", "switches", "moved", "moves"}
# "the war also involved massacres", "included": the later span is a part of the earlier one
PART_OF = {"involved", "involves", "involving", "included", "includes", "including", "comprised", "comprises",
           "consisted", "consists"}
# "Outbreak of war", "a short burst of gunfire", "the eruption of the Cuban revolt": a noun naming
# a phase of what follows its "of" (its start, its first moments, what came after it), not a
# cause or an effect of it
PHASE_OF = {"outbreak", "outbreaks", "onset", "outset", "start", "beginning", "burst", "bursts", "eruption",
            "eruptions", "aftermath"}
# text that points elsewhere ("For more information on those deaths, see ...")
NAVIGATION = re.compile(r"^\s*(for (more|further) (information|details)|see also\b|main article\b)", re.I)
# Words opening a concessive clause: what follows them happened all the same, not because of it.
# "a cholera outbreak and a powerful earthquake": the determiners that open a listed noun phrase,
# and the words that cannot be its modifiers (they start a clause, or are verbs and pronouns)
_LIST_DETERMINERS = {"a", "an", "the", "its", "their"}
_FUNCTION_WORDS = {
    "as", "because", "with", "while", "but", "when", "where", "which", "who", "whom", "whose", "that", "due", "to",
    "for", "by", "from", "in", "on", "at", "since", "after", "before", "until", "lest", "so", "then", "thus", "if",
    "although", "though", "whereas", "than", "also", "not", "no", "was", "were", "is", "are", "be", "been", "had",
    "has", "have", "did", "do", "does", "it", "they", "he", "she", "we", "i", "you", "there", "this", "these",
    "those", "many", "some", "all", "both", "each", "other", "into", "over", "under", "through", "during", "per",
}
# "Since the invasion, ... have been constructed": the finite verbs that make a "since" clause
# causal (since = because) and the irregular participles of a present perfect
_SINCE_VERBS = {"is", "was", "are", "were", "has", "have", "had", "be", "been", "did", "does", "do", "can", "could",
                "will", "would", "made", "began", "became", "took"}
_PARTICIPLES = {"grown", "risen", "fallen", "become", "seen", "known", "taken", "made", "built", "given", "shown",
                "left", "lost", "won", "fought", "brought", "kept", "held", "spread", "begun", "gone", "come"}
CONCESSIVE = {"despite", "although", "though", "notwithstanding"}
# "illnesses related to the attacks": words after an effect that tie it to a cause
_TIED_TO = (("related", "to"), ("linked", "to"), ("connected", "to"), ("tied", "to"))
# "Weeks after the attack, ...", "In the days after the flood, ...": the words of time that may
# open a clause before its "after"
_AFTER_OPENERS = {"shortly", "soon", "immediately", "just", "long", "not", "in", "the", "a", "of", "couple", "few",
                  "several", "some", "two", "three", "four", "five", "six", "ten", "minutes", "hours", "days", "weeks",
                  "months", "years", "decades", "moments", "one", "day", "week", "month", "year", "hour"}
EFFECT_OPENERS = {"resulting", "ensuing", "subsequent", "consequent", "consequential", "following"}
# words right before a span that mark it as the cause ("in the aftermath of the accident", "due to
# the fire"); determiners and possessives may stand between the marker and the span
CAUSE_MARKERS = (("aftermath", "of"), ("wake", "of"), ("due", "to"), ("because", "of"), ("caused", "by"),
                 ("result", "of"), ("owing", "to"), ("thanks", "to"), ("after",), ("following",))
_SKIP_BEFORE_SPAN = {"the", "a", "an", "this", "that", "these", "those", "its", "their", "his", "her"}
# backward cues that tie the right-hand span to the left-hand one directly (not "suffered from",
# "after": those may be about other words of the clause)
STRONG_BACKWARD = ("caused by", "due to", "owing to", "because", "result of", "resulted from", "results from",
                   "resulting from", "stemmed from", "stems from", "arose from", "arises from")


class Assessment(Assertion):
    """What ``assess`` decided about one pair, with the cue words behind each flag: the
    ``Assertion`` record that mentions carry (its flags declared there, once), and what reads it."""

    def flags(self) -> list[str]:
        return [f for f in FLAGS if getattr(self, f)]

    def dropped_by(self, drop: Iterable[str]) -> list[str]:
        """The flags set here that ``drop`` names (empty: the pair is kept)."""
        chosen = set(drop)
        return [f for f in self.flags() if f in chosen]

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in FLAGS} | {"evidence": list(self.evidence)}


def _tokens(text: str, offset: int = 0) -> list[tuple[str, int, int]]:
    out = []
    for m in _WORD.finditer(text):
        w = m.group(0)
        # the month, not the modal, when capitalised inside the sentence
        low = "may_month" if w == "May" and m.start() > 0 else w.lower()
        out.append((low, m.start() + offset, m.end() + offset))
    return out


def _clause_tail(tokens: Sequence[tuple[str, int, int]], limit: int) -> list[tuple[str, int, int]]:
    """The last ``limit`` tokens before a span, cut at the nearest clause punctuation."""
    out: list[tuple[str, int, int]] = []
    for tok in reversed(tokens):
        if tok[0] in _CLAUSE or len(out) >= limit:
            break
        out.append(tok)
    return list(reversed(out))


def _phrase_at(words: Sequence[str], i: int, phrase: Sequence[str]) -> bool:
    return tuple(words[i:i + len(phrase)]) == tuple(phrase)


def _phrases_in(words: Sequence[str], phrases: Sequence[Sequence[str]]) -> list[str]:
    """Each occurrence of one of ``phrases`` in ``words``, joined, in reading order."""
    return [" ".join(p) for i in range(len(words)) for p in phrases if _phrase_at(words, i, p)]


# "hundreds if not thousands", "many if not most": an estimate that grows, neither a condition
# nor a negation; "if not stopped", "if not for" stay both
_GRADED = {"most", "all", "more", "many", "much", "longer", "worse", "higher", "larger"}
_NOT_PLURAL = {"this", "thus", "unless", "always", "perhaps", "besides", "whereas"}


def _graded_if_not(words: Sequence[str]) -> set[int]:
    """Positions of "if" and "not" in "X if not Y" where Y is a quantity or a plural noun."""
    out: set[int] = set()
    for i in range(1, len(words) - 2):
        y = words[i + 2]
        if words[i] == "if" and words[i + 1] == "not" and (
                y in _GRADED or y.isdigit() or (len(y) > 3 and y.endswith("s") and not y.endswith("ss")
                                                and y.isalpha() and y not in _NOT_PLURAL)):
            out.update((i, i + 1))
    return out


def _negations(words: Sequence[str]) -> list[str]:
    found = []
    graded = _graded_if_not(words)
    for i, w in enumerate(words):
        if i in graded or any(_phrase_at(words, i, p) for p in NOT_NEGATION):
            continue
        if w in NEGATIONS:
            if w == "no" and i + 1 < len(words) and words[i + 1] in ("doubt", "sooner"):
                continue
            found.append(w)
        elif any(_phrase_at(words, i, p) for p in NEGATION_PHRASES[1:4]):
            found.append(" ".join(words[i:i + 2]))
    return found


def _hedges(words: Sequence[str]) -> list[str]:
    graded = _graded_if_not(words)
    found = [w for i, w in enumerate(words) if (w in MODALS or w in HEDGES) and i not in graded
             and not (w == "would" and i + 1 < len(words) and words[i + 1] in _WOULD_NARRATIVE)
             # "could no longer support": what did happen, not a possibility
             and not (w == "could" and tuple(words[i + 1:i + 3]) == ("no", "longer"))]
    return found + _phrases_in(words, HEDGE_PHRASES)


def _direction_cues(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """Forward and backward cue words of the text between the spans."""
    fwd, back = [], []
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        prev = words[i - 1] if i > 0 else ""
        if w == "by" and prev in ("followed", "preceded"):
            continue  # a sequence in time (see _sequence), not a causal cue
        if w == "by" and prev not in FORWARD:
            # a passive with words between: "the tsunami created in both ... waters by the eruption"
            for j in range(len(fwd) - 1, -1, -1):
                k = _last_index(words[:i], fwd[j])
                if k is not None and i - k <= 8 and fwd[j].endswith(("ed", "made", "brought", "set", "left")) \
                        and not any(x in _CLAUSE for x in words[k:i]):
                    back.append(f"{fwd.pop(j)} ... by")
                    break
            continue
        if w == "by" and prev in FORWARD:
            back.append(f"{prev} by")
            if fwd and fwd[-1] == prev:
                fwd.pop()
            continue
        if w in ("resulted", "results", "result", "resulting", "stemmed", "stems", "arose", "arises") and nxt == "from":
            back.append(f"{w} from")
            continue
        if w == "result" and nxt == "of":
            back.append("result of")
            continue
        if (w, nxt) in (("attributed", "to"), ("attributable", "to"), ("blamed", "on"), ("ascribed", "to")):
            back.append(f"{w} {nxt}")
            continue
        if w in ("due", "owing", "thanks") and nxt == "to":
            back.append(f"{w} to")
            continue
        if w == "because":
            back.append(w)
            continue
        if w in ("after", "following", "since", "amid") :
            back.append(w)
            continue
        if w == "from" and prev in ("died", "suffered", "suffer", "die", "dies", "perished", "fled", "deaths"):
            back.append(f"{prev} from")
            continue
        if w in FORWARD and not (w == "following" or w == "so" and nxt in ("called", "that", "much", "many", "far")):
            if w == "left" and nxt not in ("dead", "homeless", "injured", "thousands", "millions", "many"):
                continue
            fwd.append(w)
    return fwd, back


def _last_index(words: Sequence[str], w: str) -> int | None:
    for i in range(len(words) - 1, -1, -1):
        if words[i] == w:
            return i
    return None


def _sequence(words: Sequence[str]) -> str | None:
    """"followed by" (the left span happened first) or "preceded by" (the right one did), if
    either stands between the spans."""
    for i in range(len(words) - 1):
        if words[i + 1] == "by" and words[i] in ("followed", "preceded"):
            return f"{words[i]} by"
    return None


def _piece_of_a_word(sentence: str, span: tuple[int, int], name: str) -> str | None:
    """A span cut out of the end of a hyphenated word ("fire" of "cease-fire") means something
    else. (The head of "earthquake-induced" is not cut this way: its first part is the cause.)"""
    s, e = span
    before = sentence[max(0, s - 2):s]
    if len(before) == 2 and before[1] == "-" and before[0].isalpha():
        word = re.search(r"[\w-]*$", sentence[:s]).group(0) + sentence[s:e] + re.match(r"[\w-]*", sentence[e:]).group(0)
        return f"the {name} span is a piece of the word '{word}'"
    return None


def _unstated(sentence: str, between: Sequence[str], fwd: Sequence[str], back: Sequence[str],
              before_first: Sequence[str] = (), first_words: Sequence[str] = ()) -> str | None:
    """Why the sentence states no relation between the spans, if it does not: navigation text,
    spans only listed together, the later span describing the earlier one, being a part of it, or
    the earlier one turning into it, or a phase of it (``before_first``: the words right before the
    first span, determiners left out; ``first_words``: the first span's words)."""
    before_first = [w for w in before_first if w not in _SKIP_BEFORE_SPAN]
    if NAVIGATION.match(sentence):
        return "navigation text"
    if any(w in DISTANCE for w in between) and "from" in between and not fwd:
        return "a distance between places, not a cause (" + " ".join(w for w in between if w in DISTANCE | {"from"}) + ")"
    # "thus", "therefore" tie the clause to the sentence before, not one span to the other
    if back or any(w not in ("thus", "therefore", "hence") for w in fwd):
        return None
    # "Despite the earthquake having an inland epicentre, a tsunami was observed": the first span
    # is conceded and the clause after the comma happened all the same; "the level was rising
    # despite the loss of coolant": the second is. No cue says one caused the other. (Both spans
    # inside the conceded clause, "although damaged in the crash", are not cut apart.)
    def concessive(ws: Sequence[str]) -> list[str]:
        return [w for w in ws if w in CONCESSIVE] or _phrases_in(ws, [("in", "spite", "of")])
    conceded = (concessive(before_first) if "," in between else []) or concessive(between)
    if conceded:
        return f"'{conceded[0]}': one span is conceded, not a cause"
    change = [i for i, w in enumerate(between) if w in CHANGE]
    if any(w in ("became", "become", "becoming") for w in between) or (
            change and any(w in CHANGE_INTO for w in between[change[0] + 1:])):
        return "one span turns into the other (" + " ".join(between) + "), no cause stated"
    if fwd:
        return None
    if before_first[-1:] == ["from"] and between[:1] == ["to"]:
        return "a change from one span to the other (from ... to), no cause stated"
    phase = _phase_of(first_words, between)
    if phase:
        return phase
    part = [w for w in between if w in PART_OF]
    if part:
        return f"'{part[0]}': the later span is a part of the earlier one, no cause stated"
    if "as" in between and between.index("as") + 1 < len(between) and between[between.index("as") + 1] in ("a", "an"):
        return "'as a': the later span describes the earlier one"
    if between and all(w in COORDINATION for w in between) and any(w in ("and", "or", "&") for w in between):
        return "the spans are only listed together (" + " ".join(between) + ")"
    listed = _listed_with_modifiers(between)
    if listed:
        return "the spans are only listed together (" + listed + ")"
    # an aside in brackets between the spans ("The war (1628-1631) was a conflict") is not read
    plain = _outside_brackets(between)
    text = " ".join(plain)
    for c in COPULAS:
        if text == c or text.startswith(c + " "):
            rest = plain[len(c.split()):]
            # "were directly attributed to": a verb, not a description; but after an article a
            # word in -ed right before the later span is its adjective ("was a revolution and
            # armed conflict")
            adjective = len(rest) - 1 if rest[:1] in (["a"], ["an"], ["the"]) else None
            if any(w in ("to", "by", "from", "for", "in", "on") for w in rest) or any(
                    w.endswith("ed") and i != adjective for i, w in enumerate(rest)):
                return None
            return f"'{c}': the later span describes the earlier one"
    return None


def _few_modifiers(words: Sequence[str], not_ending: tuple[str, ...] = ()) -> bool:
    """At most two words that may modify a noun: letters only, no function word, none ending in
    ``not_ending`` ("ing", "ed": verb forms)."""
    return len(words) <= 2 and all(w.isalpha() and w not in _FUNCTION_WORDS and not w.endswith(not_ending)
                                   for w in words)


def _phase_of(first_words: Sequence[str], between: Sequence[str]) -> str | None:
    """"Outbreak of war", "the eruption of the Cuban revolt": the first span ends in a noun that
    names a phase of the later span (``PHASE_OF``), joined to it by "of" and at most a determiner
    and two modifiers. The outbreak of a war is the war beginning, neither its cause nor its
    effect. ("the deaths of adults in the attacks" is not read here: "deaths" is no phase.)"""
    if not first_words or first_words[-1] not in PHASE_OF or between[:1] != ["of"]:
        return None
    if not _few_modifiers([w for w in between[1:] if w not in _SKIP_BEFORE_SPAN], ("ing",)):
        return None
    return f"'{first_words[-1]} of': the first span is a phase of the later one, no cause stated"


def _after_then(clause: Sequence[str], between: Sequence[str], after_effect: Sequence[str] = ()) -> str | None:
    """"After the disaster, the pools were flooded", "Weeks after the attack, the death toll was
    estimated": the cause span is the object of an "after" that opens the clause (a determiner and
    at most two modifiers between; ``clause``: the clause's words before the cause span, where only
    words of time may stand before "after"), and a comma parts it from the effect; with no cue
    between them, the sentence says what happened after the cause, not what the cause did. A cue in
    the effect's clause after it ("illnesses related to the attacks") may tie the two, so the rule
    then does not apply (``after_effect``: the words after the effect span)."""
    tail = []
    for w in after_effect:
        if w in _CLAUSE:
            break
        tail.append(w)
    if _direction_cues(tail)[1] or _phrases_in(tail, _TIED_TO):
        return None
    k = _last_index(clause, "after")
    if k is None or "," not in between:
        return None
    if not _few_modifiers([w for w in clause[k + 1:] if w not in _SKIP_BEFORE_SPAN]):
        return None
    if any(not (w.isdigit() or w in _AFTER_OPENERS) for w in clause[:k]):
        return None  # "The bridge collapsed after the flood, ...": "after" inside a clause of its own
    return "'after ..., ': a sequence in time"


def _listed_with_modifiers(between: Sequence[str]) -> str | None:
    """``between`` (no cue in it) joins two noun phrases of one list: "and" or "or" right after the
    first span, a determiner opening the second noun phrase, and at most two words before the
    later span that are neither function words nor verb forms ("an ongoing cholera outbreak and a
    powerful earthquake"). "and the resulting tsunami" is not a list ("resulting" opens an effect),
    nor are "and caused", "and rarely infects" (no determiner) or "and the first wave came"
    once a verb stands between."""
    if not between or between[0] not in ("and", "or", "&"):
        return None
    i = 0
    while i < len(between) and between[i] in COORDINATION:
        i += 1
    rest = between[i:]
    if not rest or not _LIST_DETERMINERS & set(between[:i]) or rest[0] in EFFECT_OPENERS:
        return None
    if not _few_modifiers(rest, ("ed", "ing")):
        return None
    return " ".join(between)


def _since_then(before_first: Sequence[str], cause_words: Sequence[str], after_cause: Sequence[str]) -> list[str]:
    """``["since ... have been"]`` when the cause span is a "since" phrase without a verb of its
    own and the clause after its comma is in the present perfect: "Since the invasion, hundreds of
    schools have been constructed ... and violence has been reduced" says what has happened since
    then, not what the invasion caused. "Since the coverage was so extensive, tourists cancelled"
    (a verb in the "since" clause: because) is not read here."""
    words = [w for w in before_first if w not in _SKIP_BEFORE_SPAN]
    if words[-1:] != ["since"] or "," not in after_cause:
        return []
    comma = after_cause.index(",")
    if any(w in _SINCE_VERBS or w.endswith("ed") for w in [*cause_words, *after_cause[:comma]]):
        return []
    main = after_cause[comma + 1:comma + 12]
    for i, w in enumerate(main[:-1]):
        nxt = main[i + 1]
        if w in ("has", "have") and (nxt == "been" or nxt.endswith("ed") or nxt in _PARTICIPLES):
            return [f"since ... {w} {nxt}"]
    return []


def _outside_brackets(words: Sequence[str]) -> list[str]:
    """``words`` without those inside round brackets (an unclosed bracket runs to the end)."""
    out: list[str] = []
    depth = 0
    for w in words:
        if w == "(":
            depth += 1
        elif w == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(w)
    return out


def _change_from_to(before_first: Sequence[str], between: Sequence[str], after_last: Sequence[str]) -> str | None:
    """"changed the conflict from a war to a low-level conflict": the first span is what changed,
    the later one (after "from") its old state, a new one follows "to"; no cause is stated."""
    if [w for w in between if w not in _SKIP_BEFORE_SPAN] != ["from"] or after_last[:1] != ["to"]:
        return None
    verb = next((w for w in reversed(before_first) if w in CHANGE_FROM), None)
    return f"a change ('{verb}' ... from ... to), no cause stated" if verb else None


def _marked_as_cause(before: Sequence[str]) -> str | None:
    """The cause marker right before a span ("in the aftermath of [the] X"), if any."""
    words = list(before)
    while words and words[-1] in _SKIP_BEFORE_SPAN:
        words.pop()
    for marker in CAUSE_MARKERS:
        if tuple(words[-len(marker):]) == marker:
            return " ".join(marker)
    return None


def assess(sentence: str, cause: tuple[int, int], effect: tuple[int, int], *, window: int = 5) -> Assessment:
    """Assess one pair. ``cause`` and ``effect`` are (start, end) offsets into ``sentence``."""
    a = Assessment()
    toks = _tokens(sentence)
    words_all = [t[0] for t in toks]
    (cs, ce), (es, ee) = cause, effect
    first_start = min(cs, es)
    lo_end, hi_start = (ce, es) if cs <= es else (ee, cs)
    ahead = [t for t in toks if t[2] <= first_start]  # the tokens before the first span
    before = _clause_tail(ahead, window)
    between = [t for t in toks if t[1] >= lo_end and t[2] <= hi_start]
    cause_toks = [t for t in toks if t[1] >= cs and t[2] <= ce]
    effect_toks = [t for t in toks if t[1] >= es and t[2] <= ee]
    head = lambda ts: [t[0] for t in ts[:3]]  # noqa: E731  the first words of a span carry "no one", "the resulting"
    # Words inside the cause span describe the cause, not the relation: a negated or modal cause
    # is still a cause ("because they could not occupy the captured land", "Britain's alleged
    # reluctance ... resulted in"); the effect's first words are read ("no one was killed").
    region = [t[0] for t in before if t[1] < cs or t[2] > ce] + [t[0] for t in between] + head(effect_toks)
    # A clause break right before the later span cuts the relation off what precedes it only
    # for negation/hedging words far from it; keep the region simple (all of it counts).

    # ... unless the cause span opens with a reporting clause: "Himmler also feared that the mass
    # shootings ...", "Initial reports suggested that a power surge ...": its verb hedges the pair
    cw = [t[0] for t in cause_toks]
    if "that" in cw[1:8]:
        region = region + cw[: cw.index("that", 1)]
    neg = _negations(region)
    # "little ... so that ... not": the negation may sit just after the effect's first words,
    # or (when the effect is the later span) in the rest of its clause: "an outburst flood
    # (jokulhlaup) was not expected"
    tail_eff = [t[0] for t in effect_toks[:6]]
    if es > cs:
        depth = 0
        for t in (t for t in toks if t[1] >= ee):
            if t[0] == "(":
                depth += 1
            elif t[0] == ")":
                depth = max(0, depth - 1)
            elif depth == 0:
                if t[0] in _CLAUSE or len(tail_eff) >= 12:
                    break
                tail_eff.append(t[0])
    tail_graded = _graded_if_not(tail_eff)
    if not neg and any(w in ("not", "n't", "never") and i not in tail_graded for i, w in enumerate(tail_eff)):
        neg = [w for i, w in enumerate(tail_eff) if w in ("not", "n't", "never") and i not in tail_graded]
    if neg:
        a.negated = True
        a.evidence.append("negation: " + ", ".join(dict.fromkeys(neg)))
    hedge = _hedges(region + tail_eff)
    clause = [t[0] for t in _clause_tail(ahead, len(ahead))]
    hedge += [f"{w} that" for i, w in enumerate(clause[:-1]) if w in HEDGE_THAT_NOUNS and clause[i + 1] == "that"]
    if hedge:
        a.hedged = True
        a.evidence.append("hedge: " + ", ".join(dict.fromkeys(hedge)))
    if sentence.rstrip().rstrip("\"'\u201d)").endswith("?") or "?" in words_all[-2:]:
        a.question = True
        a.evidence.append("question: the sentence ends with ?")
    cause_words = [t[0] for t in cause_toks]
    if any(w in MEASURES for w in cause_words[:4]):
        a.estimate = True
        a.evidence.append("estimate: the cause is a measurement: " + ", ".join(w for w in cause_words[:4] if w in MEASURES))

    fwd, back = _direction_cues([t[0] for t in between])
    # "caught fire and ... the resulting explosion": only when the effect span comes first
    # ("the subsequent operation at a level of less than 200 MW led to ..." is forward)
    opener = [w for w in cause_words[:2] if w in EFFECT_OPENERS and w != "following"] if es < cs else []
    between_words = [t[0] for t in between]
    seq = _sequence(between_words)
    first_marked = _marked_as_cause([t[0] for t in before])  # the first span is marked as a cause
    marker = first_marked if es < cs else None
    strong_back = [b for b in back if b in STRONG_BACKWARD]
    if opener:
        a.reversed = True
        a.evidence.append(f"reversed: the cause span opens with '{opener[0]}'")
    elif es < cs and not between_words and len(cause_toks) <= 2 and len(effect_toks) <= 2:
        # "the tsunami flooding": a compound noun reads modifier -> head, never head -> modifier
        a.reversed = True
        a.evidence.append("reversed: the effect span is the modifier of the cause span in one compound")
    elif es < cs and seq == "followed by" and not fwd and not strong_back:
        a.reversed = True
        a.evidence.append("reversed: effect before cause, joined by 'followed by' (the effect came first)")
    elif cs <= es and seq == "preceded by" and not fwd and not strong_back:
        a.reversed = True
        a.evidence.append("reversed: cause before effect, joined by 'preceded by' (the effect came first)")
    elif marker and not fwd and not strong_back:
        # "In the aftermath of the accident, 237 people suffered from acute radiation sickness"
        a.reversed = True
        a.evidence.append(f"reversed: the effect span is marked as a cause by '{marker}'")
    elif cs <= es and back and not fwd and (strong_back or not first_marked):
        # (a cause span marked as a cause itself, "in the aftermath of the accident, ... suffered
        # from ... sickness", is not turned round by a loose backward cue)
        # cause ... backward cue ... effect: the right-hand side (our effect) is the cause
        a.reversed = True
        a.evidence.append("reversed: cause before effect with backward cue(s) " + ", ".join(back))
    elif es < cs and fwd and not back:
        a.reversed = True
        a.evidence.append("reversed: effect before cause with forward cue(s) " + ", ".join(fwd))
    if not a.reversed:
        unstated = _piece_of_a_word(sentence, (cs, ce), "cause") or _piece_of_a_word(sentence, (es, ee), "effect") \
            or _unstated(sentence, between_words, fwd, back, [t[0] for t in before],
                         [t[0] for t in (cause_toks if cs <= es else effect_toks)]) \
            or _change_from_to([t[0] for t in before], between_words,
                               [t[0] for t in toks if t[1] >= max(ce, ee)][:1])
        if unstated:
            a.unstated = True
            a.evidence.append("unstated: " + unstated)
    if not a.reversed and not a.unstated:
        temporal = [w for w in (t[0] for t in between) if w in TEMPORAL] + ([seq] if seq else []) + _phrases_in(
            between_words, TEMPORAL_PHRASES)
        since = _since_then([t[0] for t in before], cause_words, [t[0] for t in toks if t[1] >= ce]) if cs <= es and not fwd \
            and not back else []
        if temporal and not fwd and not any(b in ("because", "due to", "owing to", "result of") or b.endswith(" by")
                                            or b.endswith(" from") for b in back):
            a.temporal = True
            a.evidence.append("temporal: only " + ", ".join(dict.fromkeys(temporal)) + " between the spans")
        elif since:
            a.temporal = True
            a.evidence.append("temporal: what has happened " + since[0] + ", not what the cause did")
        elif cs <= es and not fwd and not back and (after := _after_then(
                clause, between_words, [t[0] for t in toks if t[1] >= ee])):
            a.temporal = True
            a.evidence.append("temporal: " + after)
    return a


def cue_between(sentence: str, cause: tuple[int, int], effect: tuple[int, int]) -> bool:
    """Whether a causal cue ties the two spans: a forward or backward cue word between them ("the
    earthquake *triggered* a tsunami", "deaths *caused by* the flood"), or a cause marker before
    the cause span ("*In the wake of* the war, famine spread", "began *in the aftermath of* the
    internal explosion"; a determiner and two modifiers may stand between). Read by
    the edge confidence (``kg/confidence.py``): on the judged pairs of the snapshot and dev, a pair
    with no cue is much less often stated as a cause."""
    (cs, ce), (es, ee) = cause, effect
    lo, hi = (ce, es) if cs <= es else (ee, cs)
    # the first span's last word is read with the words between: "[damaged] by the fire",
    # "[died] from disease" are a passive and a cause of death
    first = _tokens(sentence[min(cs, es):lo])[-1:]
    fwd, back = _direction_cues([t[0] for t in first + _tokens(sentence[lo:hi])]) if hi > lo else ([], [])
    if fwd or back:
        return True
    # "In the wake of the war, ...", "Hostilities began in the aftermath of the internal explosion":
    # a cause marker before the cause span, a determiner and at most two modifiers between
    words = [t[0] for t in _clause_tail(_tokens(sentence[:cs]), 8)]
    for _ in range(3):
        if _marked_as_cause(words) is not None:
            return True
        while words and words[-1] in _SKIP_BEFORE_SPAN:
            words.pop()
        if not words or not _few_modifiers(words[-1:]):
            return False
        words.pop()
    return False


def assess_in_document(sentence_text: str, sentence_start: int, cause: tuple[int, int], effect: tuple[int, int]) -> Assessment:
    """``assess`` with document offsets (as in ``Extraction``) for the spans."""
    return assess(sentence_text, (cause[0] - sentence_start, cause[1] - sentence_start),
                  (effect[0] - sentence_start, effect[1] - sentence_start))
