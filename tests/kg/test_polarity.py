"""Polarity, modality and direction of extracted pairs (kg/polarity.py) on real sentences.

Every sentence is quoted from the bundled snapshot corpus (data/corpus/corpus.jsonl, built from
snapshots/enwiki; English Wikipedia, CC BY-SA 4.0) or, where marked, from the Causal News
Corpus (CC0); the spans are what an extractor returns for them.
"""

from __future__ import annotations

import pytest

from causalkg.kg.polarity import DEFAULT_DROP, assess


def _span(sentence: str, text: str) -> tuple[int, int]:
    i = sentence.index(text)
    return i, i + len(text)


def run(sentence: str, cause: str, effect: str):
    return assess(sentence, _span(sentence, cause), _span(sentence, effect))


NEGATED = [
    ("Several others may have been injured as well but no one was killed in the gunfire.",
     "the gunfire", "no one was killed"),
    ("Visual observations indicated that little ice meltwater was produced during the eruption, so that an "
     "outburst flood (jökulhlaup) was not expected.", "the eruption", "an outburst flood"),
    ("The car was immediately jerked forward by the starter motor, but the engine did not start due to low RPM.",
     "low RPM", "the engine did not start"),
]

HEDGED = [
    # a pair inside the "that" clause of a theory or a claim, however far back the noun (held-out dev)
    ("The New York Times published an analysis on 24 October 2023 casting doubt on the theory that the rocket "
     "seen in the Al Jazeera video had caused the explosion at the hospital.", "the rocket", "the explosion"),
    ("Hobbes held the belief that clerical pretensions had contributed significantly to the trouble during the "
     "civil war.", "clerical pretensions", "the trouble"),
    # what a place is vulnerable to, or at risk of, has not happened (held-out dev)
    ("Libya's vulnerability to such disasters was blamed on its civil war, which damaged critical "
     "infrastructure and left it in poor condition before the storm.", "its civil war", "such disasters"),
    ("The storm raised the risk of landslides across the valley.", "The storm", "landslides"),
    ("The drought increased the threat of famine in the region.", "The drought", "famine"),
    ("Russia's media supervision body, Roskomnadzor, stated that publication of the cartoons could lead to "
     "criminal charges.", "publication of the cartoons", "criminal charges"),
    ("The attacks affected business at high-profile venues and shopping centres in Paris, and many Parisians "
     "were concerned the attacks might lead to a marginalisation of Muslims in the city.",
     "the attacks", "a marginalisation of Muslims"),
    ("A study commissioned by National Geographic magazine in 1999, using AME computer modelling, stated that "
     "the explosion could have been caused by a mine, but no definitive evidence was found.",
     "a mine", "the explosion"),
]

REVERSED = [
    # the extractor's pair, the wrong way round
    ("This excess ammonium perchlorate later caught fire and the magnitude of the resulting explosion "
     "destroyed the PEPCON facility and the neighboring Kidd & Co marshmallow factory.",
     "the resulting explosion", "caught fire"),
    ("A number of these reforms led to public discontent which provides circumstances for an Iranian revolution.",
     "an Iranian revolution", "public discontent"),
    ("Three buildings in the World Trade Center collapsed due to fire-induced structural failure.",
     "Three buildings in the World Trade Center collapsed", "fire-induced structural failure"),
]

ASSERTED = [
    # "hundreds if not thousands": an estimate that grows, neither a negation nor a condition (held-out dev)
    ("The conflict resulted in the deaths of hundreds if not thousands of people and the displacement of "
     "hundreds of thousands.", "conflict", "deaths"),
    ("The flood damaged many if not most of the houses in the valley.", "The flood", "the houses"),
    ("As usual in wars of this era, disease caused more deaths than combat.", "disease", "more deaths"),
    ("Three buildings in the World Trade Center collapsed due to fire-induced structural failure.",
     "fire-induced structural failure", "Three buildings in the World Trade Center collapsed"),
    ("The explosions were caused by homemade organic peroxide-based devices packed into backpacks.",
     "homemade organic peroxide-based devices", "The explosions"),
    ("A number of these reforms led to public discontent which provides circumstances for an Iranian revolution.",
     "public discontent", "an Iranian revolution"),
    ("He reports mass graves containing over 60,000 people in Meskene and large numbers of mounds of corpses, "
     "as the Armenians died due to hunger and disease.", "hunger and disease", "the Armenians died"),
    ("As well as the sideways movement between the plates, the sea floor is estimated to have risen by several "
     "metres, displacing an estimated 30 km3 of water and triggering devastating tsunami waves.",
     "the sea floor is estimated to have risen", "devastating tsunami waves"),
    ("The race was cancelled in 1936 due to general strikes in France, and the outbreak of World War II in "
     "1939 resulted in a ten-year hiatus.", "the outbreak of World War II", "a ten-year hiatus"),
    ("This would later lead to the collapse of the government.", "This", "the collapse of the government"),
    ("The quake struck in May and caused a tsunami.", "The quake", "a tsunami"),
    # "the fact that" holds what happened; an inquiry's finding is no theory
    ("Investigators found that the fact that the dam had been poorly built caused the flood.",
     "the dam had been poorly built", "the flood"),
    # a risk is no hedge when the span is not what is at risk
    ("The earthquake left the town vulnerable, and its aftershocks caused the collapse of the bridge.",
     "its aftershocks", "the collapse of the bridge"),
]


@pytest.mark.parametrize("sentence,cause,effect", NEGATED)
def test_negated_relations_are_flagged(sentence, cause, effect):
    a = run(sentence, cause, effect)
    assert a.negated, a.evidence
    assert "negated" in a.dropped_by(DEFAULT_DROP)
    assert any(e.startswith("negation:") for e in a.evidence)


@pytest.mark.parametrize("sentence,cause,effect", HEDGED)
def test_hypotheses_and_expectations_are_flagged(sentence, cause, effect):
    a = run(sentence, cause, effect)
    assert a.hedged, a.evidence
    assert not a.negated


@pytest.mark.parametrize("sentence,cause,effect", REVERSED)
def test_reversed_pairs_are_flagged(sentence, cause, effect):
    a = run(sentence, cause, effect)
    assert a.reversed, a.evidence
    assert any(e.startswith("reversed:") for e in a.evidence)


def test_if_not_before_a_verb_stays_a_condition():
    a = run("The fire, if not stopped, would have caused the collapse of the bridge.", "The fire", "the collapse")
    assert a.hedged and a.negated, a.evidence
    a = run("The treaty, if not this war, would have caused the famine.", "The treaty", "the famine")
    assert a.hedged and a.negated, a.evidence


@pytest.mark.parametrize("sentence,cause,effect", ASSERTED)
def test_asserted_relations_are_kept(sentence, cause, effect):
    a = run(sentence, cause, effect)
    assert a.dropped_by(DEFAULT_DROP) == [], a.evidence


def test_a_question_is_not_a_statement():
    # Causal News Corpus (subtask 1 train), a question about a cause
    s = "Will the strike by transport workers cause shortages in the city?"
    a = run(s, "the strike by transport workers", "shortages")
    assert a.question and a.hedged is False or a.question
    assert "question" in a.dropped_by(DEFAULT_DROP)


def test_an_estimate_of_something_else_is_not_a_cause():
    s = ("Using the most restrictive definition of the Holocaust produces a death toll of around six million Jews, "
         "the figure cited by Adolf Eichmann, one of the Holocaust's architects.")
    a = run(s, "the most restrictive definition of the Holocaust", "a death toll of around six million Jews")
    assert a.estimate and "estimate" in a.dropped_by(DEFAULT_DROP)


def test_a_sequence_in_time_is_not_an_edge_by_default():
    # issue 13's own example of a non-causal reading: treaty -> reform
    s = ("Prospects for reforms faded rapidly following the signing of the Berlin treaty, as security conditions "
         "in the Armenian provinces went from bad to worse and abuses proliferated.")
    a = run(s, "the signing of the Berlin treaty", "Prospects for reforms faded")
    assert a.temporal and not a.reversed
    assert a.dropped_by(DEFAULT_DROP) == ["temporal"]
    assert a.dropped_by(["negated"]) == []  # kg.drop without "temporal" keeps it, flagged


def test_as_dict_records_every_flag_and_the_evidence():
    a = run(*NEGATED[0])
    d = a.as_dict()
    assert set(d) == {"negated", "hedged", "question", "estimate", "reversed", "unstated", "temporal", "evidence"}
    assert d["negated"] is True and d["evidence"]


def test_judged_sample_of_flagged_pairs():
    """tests/fixtures/judged/assertions.jsonl: 30 pairs of the patterns extractor over the
    snapshot corpus that an earlier version of the rules flagged, each judged by reading
    (``should_drop``: the sentence does not assert cause -> effect as a fact in that
    direction). 25 of those 30 drops were right; the rules now drop none of the 5 wrong ones
    and still drop most of the right ones."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "fixtures" / "judged" / "assertions.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    dropped = []
    for r in rows:
        a = run(r["sentence"], r["cause"], r["effect"])
        dropped.append(bool(a.dropped_by(DEFAULT_DROP)))
    wrong = [r["sentence"][:60] for r, d in zip(rows, dropped) if d and not r["should_drop"]]
    assert wrong == []
    right = sum(1 for r, d in zip(rows, dropped) if d and r["should_drop"])
    assert right >= 16  # of the 25 that should go


# Errors read in the default QA KG of the bundled snapshot (issue 13): each was an edge before
# these rules. The spans are what the QA extractor returned.
READ_IN_THE_KG = [
    # "followed by": the earthquake came first; the extractor asked what caused the earthquake
    ("The earthquake (followed by the tsunami) was felt in Bangladesh, India, Malaysia, Myanmar, Thailand, "
     "Singapore, Sri Lanka and the Maldives.", "tsunami", "earthquake", "reversed"),
    # a compound noun: the flooding of the tsunami, not a tsunami of the flooding
    ("It seems that the tsunami flooding consisted of three main waves, with the second being the largest "
     "and most destructive.", "flooding", "tsunami", "reversed"),
    # the effect span is marked as the cause
    ("In the aftermath of the accident, 237 people suffered from acute radiation sickness (ARS), of whom 31 "
     "died within the first three months.", "sickness", "accident", "reversed"),
    # an association, not a causal claim
    ("Many health professionals and aid workers have reported widespread psychological trauma associated "
     "with the tsunami.", "tsunami", "trauma", "hedged"),
]


@pytest.mark.parametrize("sentence, cause, effect, flag", READ_IN_THE_KG)
def test_errors_read_in_the_default_kg_are_flagged(sentence, cause, effect, flag):
    a = run(sentence, cause, effect)
    assert flag in a.flags(), a.evidence
    assert flag in DEFAULT_DROP


KEPT_IN_THE_KG = [
    # the same constructions, the right way round, stay edges
    ("It seems that the tsunami flooding consisted of three main waves, with the second being the largest "
     "and most destructive.", "tsunami", "flooding"),
    ("In the aftermath of the accident, 237 people suffered from acute radiation sickness (ARS), of whom 31 "
     "died within the first three months.", "accident", "sickness"),
    ("The worst affected area in Tamil Nadu was Nagapattinam district, with a reported 6,051 fatalities "
     "caused by a 5 m (16.4 ft) tsunami, followed by Cuddalore district, with many villages destroyed.",
     "tsunami", "fatalities"),
    ("Many of these deaths were caused by war crimes committed by German and Japanese forces in occupied "
     "territories.", "war crimes", "deaths"),
    ("The tsunami caused the 2004 Sri Lanka tsunami-rail disaster which took at least 1,700 lives, making it "
     "the largest single rail disaster in world history by death toll.", "tsunami", "disaster"),
]


@pytest.mark.parametrize("sentence, cause, effect", KEPT_IN_THE_KG)
def test_the_right_way_round_is_kept(sentence, cause, effect):
    a = run(sentence, cause, effect)
    assert not a.dropped_by(DEFAULT_DROP), a.evidence


def test_followed_by_in_reading_order_is_a_sequence_not_a_cause():
    s = "The earthquake (followed by the tsunami) was felt in Bangladesh."
    a = run(s, "earthquake", "tsunami")
    assert a.temporal and not a.reversed


UNSTATED = [
    # read in the QA KG at the validation-chosen threshold; each was an edge
    ("Injuries and deaths", "Injuries", "deaths"),  # a heading
    ("Conflicts and a cease-fire", "Conflicts", "fire"),
    ("For more information on those deaths, see Countries affected by the 2004 Indian Ocean earthquake#S - Z",
     "earthquake", "deaths"),
    ("The war was a military and economic disaster for the Dutch Republic.", "war", "disaster"),
    ("While the invasion ended as a disaster for the Americans, Arnold's efforts in 1776 delayed any full-scale "
     "British counteroffensive until the Saratoga campaign of 1777.", "disaster", "invasion"),
]


@pytest.mark.parametrize("sentence, cause, effect", UNSTATED)
def test_no_relation_stated_between_the_spans(sentence, cause, effect):
    a = run(sentence, cause, effect)
    assert a.unstated and "unstated" in DEFAULT_DROP, a.evidence


def test_a_cue_between_listed_spans_is_still_a_statement():
    s = "The explosion was caused by a gas leak and a spark."
    assert not run(s, "a gas leak", "The explosion").unstated
    s = "The earthquake and resulting tsunami affected many countries in Southeast Asia."
    a = run(s, "earthquake", "tsunami")
    assert not a.dropped_by(DEFAULT_DROP), a.evidence


def test_time_and_place_between_the_spans_are_no_cause():
    a = run("A series of small earthquakes had commenced at the time of eruption.", "eruption", "earthquakes")
    assert a.temporal, a.evidence
    a = run("The war began with the invasion of the Ethiopian Empire by the armed forces of the Kingdom of Italy.",
            "invasion", "war")
    assert a.temporal, a.evidence
    s = ("The tsunami of 26 December 2004 severely affected the Maldives at a distance of 2,500 km (1553.4 miles) "
         "from the epicenter of the magnitude 9.0 earthquake.")
    a = run(s, "tsunami", "earthquake")
    assert a.unstated and "distance" in a.evidence[0], a.evidence
    s = ("Estimates of the number of deaths that will eventually result from the accident vary enormously.")
    assert run(s, "the accident", "deaths").hedged


def test_attributed_to_reads_right_to_left_and_is_no_description():
    s = "In 1994, Thirty-one deaths were directly attributed to the accident, all among the reactor staff."
    a = run(s, "the accident", "Thirty-one deaths")
    assert not a.dropped_by(DEFAULT_DROP), a.evidence
    assert run(s, "Thirty-one deaths", "the accident").reversed


def test_a_passive_with_words_between_and_a_clause_next_to_a_clause():
    s = ("Before 2004, the tsunami created in both Indian and Pacific Ocean waters by the 1883 eruption of "
         "Krakatoa had probably been the deadliest in the region.")
    a = run(s, "the 1883 eruption of Krakatoa", "the tsunami")
    assert not a.reversed, a.evidence
    s = "Media organisations carried out protests against the shootings."
    a = run(s, "against the shootings", "Media organisations carried out protests")
    assert not a.reversed, a.evidence  # two clauses side by side are no compound noun
    s = ("With the damage to the core columns, the buckling exterior columns could no longer support the "
         "buildings, causing them to collapse.")
    assert not run(s, "the damage to the core columns", "collapse").hedged


# From the held-out DEV split (snapshots/heldout/dev.jsonl: English Wikipedia lead sections,
# CC BY-SA 4.0): pairs the dev judgements found unsupported, each a class of error the rules
# now catch. (The test split is never quoted here.)
DEV_NOT_CAUSAL = [
    ("The conflict thus escalated and became the 1948 Arab–Israeli War.",
     "conflict", "1948 Arab–Israeli War", "unstated"),
    ("The final three months of the conflict escalated to become the Spanish–American War, with United States "
     "forces being deployed in Cuba, Puerto Rico, and the Philippine Islands against Spain.",
     "conflict", "Spanish–American War", "unstated"),
    ("The conflict, fought largely as a guerrilla war by both sides, claimed the lives of 600 to 900 Aboriginal "
     "people and more than 200 British colonists.", "conflict", "guerrilla war", "unstated"),
    ("The war also involved a series of massacres of Jews by de Montfort's supporters, including his sons Henry "
     "and Simon, in attacks aimed at seizing and destroying evidence of baronial debts.",
     "war", "massacres", "unstated"),
    ("The conflict coincided with the Dutch Revolt, 1568–1648, encouraging the participation of the rebellious "
     "Dutch provinces and the Spanish.", "Dutch Revolt", "conflict", "temporal"),
    ("The invasion of Dagestan served as the main casus belli alongside the series of apartment bombings in "
     "September 1999 for the Second Chechen War.", "Second Chechen War", "invasion of Dagestan", "reversed"),
    # a concession (FreshWiki, 2022 Luzon earthquake): the tsunami was seen despite the epicentre
    ("Despite the earthquake having an inland epicentre, a tsunami of around 0.08 m (0.26 ft) was observed in "
     "Currimao, Ilocos Norte.", "earthquake", "tsunami", "unstated"),
    # a type statement across an aside in brackets; a noun phrase with an adjective in -ed
    ("The War of the Mantuan Succession (1628\u20131631) was a conflict related to the Thirty Years' War and was "
     "caused by the death in December 1627 of Vincenzo II.", "War of the Mantuan Succession", "conflict", "unstated"),
    ("The Bangladesh Liberation War (also known as the Bangladesh War of Independence, or simply the Liberation "
     "War in Bangladesh) was a revolution and armed conflict sparked by the rise of the Bengali nationalist "
     "movement in East Pakistan.", "Bangladesh Liberation War", "conflict", "unstated"),
]


@pytest.mark.parametrize("sentence,cause,effect,flag", DEV_NOT_CAUSAL)
def test_dev_split_errors_are_caught(sentence, cause, effect, flag):
    a = run(sentence, cause, effect)
    assert getattr(a, flag), a.evidence


def test_a_change_from_one_to_the_other_is_not_a_cause():
    s = "The reduction in hostilities eventually changed the conflict from a war to a relatively low-level conflict."
    cs = s.index(" war ") + 1
    es = s.rindex("conflict")
    a = assess(s, (cs, cs + 3), (es, es + len("conflict")))
    assert a.unstated and "from ... to" in a.evidence[0]
    # the same change read with the earlier "conflict" as the effect: "from" there names the old
    # state, not a cause
    es = s.index("conflict")
    a = assess(s, (cs, cs + 3), (es, es + len("conflict")))
    assert a.unstated and "'changed'" in a.evidence[0], a.evidence
    # with no change verb before it, "from" is a cause as before
    s = "The deaths from the war were counted."
    assert not run(s, "the war", "The deaths").flags()


@pytest.mark.parametrize("sentence,cause,effect", [
    # a forward cue beside the change words keeps the pair causal
    # an aside in brackets before a causal verb: still a cause
    ("The fire (1666) was the main cause of the collapse.", "The fire", "the collapse"),
    ("The eruption (the largest in a century) was responsible for the famine.", "The eruption", "the famine"),
    ("The protests led to clashes that escalated into a civil war.", "The protests", "clashes"),
    # the casus belli read the right way round
    ("The invasion of Dagestan served as the main casus belli for the Second Chechen War.",
     "The invasion of Dagestan", "the Second Chechen War"),
])
def test_stated_causes_stay(sentence, cause, effect):
    a = run(sentence, cause, effect)
    assert not a.flags(), a.evidence


def test_a_concession_drops_only_the_conceded_span_without_a_cue():
    # a cue between the spans still states the relation inside the concession
    s = "Although the earthquake caused a tsunami, no damage was reported on the coast."
    assert not run(s, "the earthquake", "a tsunami").unstated
    # the concession is its own clause: a pair after it is read as usual
    s = "Despite the warnings, the earthquake caused more than 500 deaths."
    assert not run(s, "the earthquake", "more than 500 deaths").dropped_by(DEFAULT_DROP)
    s = "In spite of the storm having weakened, heavy rain was recorded across the island."
    assert "conceded" in run(s, "the storm", "heavy rain").evidence[0]


def test_both_spans_inside_a_concession_keep_their_relation():
    # the conceded clause can state a cause of its own: nothing after a comma is compared
    s = "Although damaged in the crash, the recording medium was able to be read."
    assert not run(s, "crash", "damaged").unstated
    s = "The engines were found largely intact despite extensive damage from the impact."
    assert not run(s, "impact", "damage").unstated


def test_a_span_conceded_after_the_other_is_not_its_effect():
    s = "The water level inside the pressurizer was rising despite the loss of coolant."
    a = run(s, "the loss of coolant", "The water level")
    assert a.unstated and "despite" in a.evidence[0]


def test_two_noun_phrases_of_one_list_state_no_relation():
    # held-out dev (English Wikipedia, "Effects of Hurricane Matthew in Haiti", 2019 text, CC BY-SA)
    s = ("Haiti, the poorest country in the western hemisphere, was recovering from an ongoing cholera outbreak "
         "and a powerful earthquake in 2010, and many houses damaged during the earthquake were not rebuilt when "
         "Matthew struck.")
    a = run(s, "outbreak", "earthquake")
    assert a.unstated and "listed together (and a powerful)" in a.evidence[0], a.evidence
    # a list of two: "and a" and a noun, modifiers or none, in both orders
    assert run("Minor property damage and a number of sinkholes were reported.", "damage", "sinkholes").unstated
    # an opener of an effect, a verb, or no determiner: not a list of noun phrases
    for s, cause, effect in [
        ("The earthquake and the resulting tsunami affected many countries in Southeast Asia.", "earthquake", "tsunami"),
        ("The storm flooded the valley and destroyed the bridges.", "The storm", "the bridges"),
        ("So far it is mostly a bird disease and rarely infects humans.", "disease", "infects"),
        ("The war and its aftermath caused a famine.", "The war", "a famine"),
    ]:
        assert not run(s, cause, effect).unstated, s


def test_since_a_noun_phrase_with_a_present_perfect_is_a_time():
    # held-out dev (English Wikipedia, "Operation Enduring Freedom", 2019 text, CC BY-SA)
    s = ("Since the invasion, hundreds of schools and mosques have been constructed, millions of dollars in aid "
         "have been distributed, and the occurrence of violence has been reduced.")
    a = run(s, "invasion", "violence")
    assert a.temporal and "since ... have been" in a.evidence[-1], a.evidence
    # a verb in the "since" clause makes it a reason; a past tense after it is read as before
    for s, cause, effect in [
        ("Since the media coverage of the event was so extensive, many tourists have cancelled their trips.",
         "the media coverage", "many tourists have cancelled their trips"),
        ("Since the harvest failed, a famine has spread across the region.", "the harvest failed", "a famine"),
    ]:
        assert not run(s, cause, effect).temporal, s
    s = "Since the war, the town has been rebuilt."
    assert run(s, "the war", "rebuilt").temporal


def test_a_phase_of_the_later_span_is_no_cause():
    # a heading and a sentence of the snapshot; held-out dev (English Wikipedia, "January 2005 Tal
    # Afar shootings", 2019 text, CC BY-SA)
    for s, cause, effect in [
        ("Outbreak of war", "war", "Outbreak"),
        ("The eruption of the Cuban revolt, Weyler's measures, and the popular fury these events whipped up proved "
         "to be a boon to the newspaper industry in New York City.", "eruption", "revolt"),
        ("There was an immediate short burst of gunfire which, according to an internal United States military "
         "report, was aimed at the front tire but photographs suggest approximately seven bullets were fired from "
         "in front of the vehicle at the left side of the windscreen.", "gunfire", "burst"),
    ]:
        a = run(s, cause, effect)
        assert a.unstated and "a phase of the later one" in a.evidence[-1], (s, a.evidence)
    # "deaths" is no phase, and a cue after "of" is a statement
    s = "The deaths of adults in the attacks resulted in over 3,000 children losing a parent."
    assert not run(s, "the attacks", "The deaths").unstated
    assert not run("An outbreak of cholera caused by the flooding killed hundreds.", "the flooding", "An outbreak").unstated  # made up


def test_what_happened_after_the_cause_is_a_time():
    # the snapshot corpus (September 11 attacks, Chernobyl disaster)
    for s, cause, effect in [
        ("Weeks after the attack, the death toll was estimated to be over 6,000, more than twice the number of "
         "deaths eventually confirmed.", "the attack", "the death toll"),
        ("Shortly after the accident, firefighters arrived to try to extinguish the fires.", "accident", "fires"),
        ("After the larger explosion, a number of employees at the power station went outside to get a clearer "
         "view of the extent of the damage.", "explosion", "damage"),
    ]:
        a = run(s, cause, effect)
        assert a.temporal and "'after ..., '" in a.evidence[-1], (s, a.evidence)
    # a cue after the effect ties it to the cause; an "after" inside a clause with its own verb is
    # not the clause's opening time
    s = ("Years after the attacks, legal disputes over the costs of illnesses related to the attacks were still in "
         "the court system.")
    assert not run(s, "the attacks", "illnesses").temporal
    s = ("However, an official inquiry by the British government reported that the tape claiming responsibility "
         "had been edited after the attacks, and that the bombers did not have direct assistance from al-Qaeda.")
    assert not run(s, "the attacks", "direct assistance").temporal
    # a cue between the spans is read as before
    s = "After the earthquake, the resulting tsunami flooded the coast."
    assert not run(s, "the earthquake", "tsunami").temporal


def test_a_cue_between_the_spans_or_a_marker_before_the_cause():
    from causalkg.kg.polarity import cue_between

    def cue(sentence, cause, effect):
        return cue_between(sentence, _span(sentence, cause), _span(sentence, effect))

    # a cue word between the spans, in either order, or a marker before the cause (held-out dev:
    # Simple English Wikipedia "Exxon Valdez Oil Spill", "Arab Spring", English Wikipedia 2019
    # text; the rest the snapshot corpus)
    assert cue("The accident caused a massive oil spill: 10.8 million U.S. gallons (9.0 million imp gal/41 million "
               "L) were spilled into the Prince William Sound.", "accident", "spill")
    assert cue("The Sarajevo Bezistan and Gazi Husrev Begs complex were severely damaged by the fire as well.",
               "the fire", "damaged")
    s = ("In the aftermath of the accident, 237 people suffered from acute radiation sickness (ARS), of whom 31 died "
         "within the first three months.")
    assert cue(s, "the accident", "acute radiation sickness")
    s = ("Hostilities began in the aftermath of the internal explosion of the USS Maine in Havana Harbor in Cuba, "
         "leading to U.S. intervention in the Cuban War of Independence.")
    assert cue(s, "explosion", "Hostilities")
    # no cue: a manner, a source, a place and a time
    assert not cue("The tribunal passed judgements ranging from acquittal to death by hanging.", "hanging", "death")
    assert not cue("These attacks were answered with violence from protestors in some cases.", "protestors", "violence")
    s = ("The tsunami also reached Antarctica, where tidal gauges at Japan's Showa Base recorded oscillations of up "
         "to a metre, with disturbances lasting a couple of days.")
    assert not cue(s, "disturbances", "The tsunami")
