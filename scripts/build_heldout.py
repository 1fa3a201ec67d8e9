"""Build the held-out Wikipedia event set (``snapshots/heldout/``) from six sources.

1. SW100 (Araki and Mitamura, COLING 2018): 100 Simple English Wikipedia articles in ten
   domains, kept as plain text in https://github.com/karshyap/Event_Detection. We take the six
   domains that hold events (disaster, disease, economics, geology, history, politics): ids
   2000000001-2000000060.
2. HESE: the English Wikipedia lead sections of historical conflicts (wars, battles, invasions,
   revolutions, crusades) with their Wikidata QIDs, kept in ``data.json`` of
   https://github.com/DinisSousa2003/Historical-Events-Search-Engine at HESE_COMMIT. Pages of the bundled snapshot (``snapshots/enwiki``), list
   pages and events SW100 already holds are left out; of the rest, the first ``HESE_COUNT`` by a
   salted title hash are taken, grouped into kinds by their title (``KINDS``): ids from
   2000000061 on, in kind then title order.

3. FreshWiki (Shao et al., NAACL 2024): full English Wikipedia articles among the most edited
   of February 2022 - September 2023, kept as text in ``FreshWiki/txt/`` of
   https://github.com/stanford-oval/storm at FRESHWIKI_COMMIT. The event articles of its list,
   chosen by title alone (``FRESHWIKI_TITLES``: natural hazards, attacks, accidents, elections,
   political crises): ids after HESE's, in kind then title order. No QIDs (none of the titles is in
   ``HISTORIC_EVENTS_JSON``).

4. LLM-Attributor (Lee et al., 2024): whole English Wikipedia articles on events of 2023-2024,
   kept in ``data/disaster.json`` and ``data/wiki/wiki_created_after_jul_2023.json`` of
   https://github.com/poloclub/LLM-Attributor at LLMA_COMMIT: the 12 that are neither news
   items nor already held (``LLMA_TITLES``, chosen by title alone; Hurricane Hilary is a FreshWiki
   article), in two kinds (``LLMA_KINDS``): ids after FreshWiki's. No QIDs.

5. WikiGenBench (a Wikipedia-generation benchmark): whole English Wikipedia articles of the ``wikimedia/wikipedia``
   20231101.en dump that its 20220301 dump did not hold (created or renamed in between), kept
   as ``data/wiki/<page id>.json`` of https://github.com/zhzihao/WikiGenBench at
   WIKIGEN_COMMIT: the 52 event articles of its 308 (``WIKIGEN_TITLES``, chosen by title alone,
   with their kind): ids after LLM-Attributor's. No QIDs. Only the Wikipedia text is taken.

6. chinapedia: whole English Wikipedia articles of the 2019-07-20 dump converted to text, kept as
   ``Page/<title>.md`` of https://github.com/chinapedia/wikipedia.abstract.en at
   CHINAPEDIA_COMMIT: its event pages of 6,000 characters or more that are not elections
   (``CHINAPEDIA_FILES``, chosen by title alone), in four kinds (``CHINAPEDIA_KINDS``): ids after
   WikiGenBench's. No QIDs.

Each article becomes a corpus record (``CorpusDocument``); within each domain or kind the titles
are sorted by a salted SHA-256 and dealt alternately to ``dev`` and ``test``, fixed before anyone
reads the text (one FreshWiki article read before its split was fixed goes to dev:
``FRESHWIKI_READ_BEFORE``). The records of each source follow those of the sources before it, so
adding a source leaves the earlier records and their splits as they were.

Usage: python scripts/build_heldout.py GIT_DIR HESE_GIT_DIR [HISTORIC_EVENTS_JSON [STORM_GIT_DIR [LLMA_GIT_DIR [WIKIGEN_GIT_DIR [CHINAPEDIA_GIT_DIR]]]]]
  GIT_DIR: a clone (or bare git directory) of karshyap/Event_Detection at COMMIT below.
  HESE_GIT_DIR: a clone (or bare git directory) of DinisSousa2003/Historical-Events-Search-Engine
  holding HESE_COMMIT.
  HISTORIC_EVENTS_JSON: optional Wikidata event QID <-> enwiki title map (historicEvents.json)
  used to fill the SW100 records' ``document_concept`` where the title matches; other SW100
  documents stay unresolved (the HESE records carry their own QIDs).
  STORM_GIT_DIR: optional clone (or bare git directory) of stanford-oval/storm holding
  FRESHWIKI_COMMIT; without it the FreshWiki records are left out.
  LLMA_GIT_DIR: optional clone (or bare git directory) of poloclub/LLM-Attributor holding
  LLMA_COMMIT (needs STORM_GIT_DIR); without it the LLM-Attributor records are left out.
  WIKIGEN_GIT_DIR: optional clone (or bare git directory) of zhzihao/WikiGenBench holding
  WIKIGEN_COMMIT (needs LLMA_GIT_DIR); without it the WikiGenBench records are left out.
  CHINAPEDIA_GIT_DIR: optional clone (or bare git directory) of chinapedia/wikipedia.abstract.en
  holding CHINAPEDIA_COMMIT (needs WIKIGEN_GIT_DIR); without it the chinapedia records are left out.
"""

from __future__ import annotations

import bz2
import hashlib
import json
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Iterable

COMMIT = "6571469254ed7ed0b8978668a252b6a4c94ea7ee"
DOMAINS = ("disaster", "disease", "economics", "geology", "history", "politics")
SALT = "causalkg-heldout-v1"
FIRST_ID = 2000000001  # assigned ids, far from enwiki's and the snapshot's ranges
REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "snapshots" / "heldout"
SNAPSHOT_INDEX = REPO / "snapshots" / "enwiki" / "enwiki-snapshot-pages-articles-multistream-index.txt.bz2"

# HESE: data.json of DinisSousa2003/Historical-Events-Search-Engine at commit HESE_COMMIT (git
# blob HESE_BLOB); its records with a ``wikipedia_summary`` are taken.
HESE_COMMIT = "85613835f31b64507fc20319e3e9cba365fd151b"
HESE_BLOB = "2f61f73ecdf342ea6a12c94f2095faef1bf7aba9"
HESE_COUNT = 300  # how many of the eligible lead sections are taken (the first by PICK_SALT hash)
PICK_SALT = "causalkg-heldout-v1-pick"
# Kind of a HESE article from its title: the first pattern that matches (case-insensitive).
KINDS = (
    ("battle", r"\bbattle\b|\bsiege\b"),
    ("civil-war", r"\bcivil war\b"),
    ("revolution", r"revolution|rebellion|revolt|uprising|insurrection|coup|mutiny|riot|protest"),
    ("crusade", r"crusade"),
    ("invasion", r"invasion|conquest|campaign|expedition|intervention|occupation|raid"),
    ("war", r"\bwars?\b"),
    ("conflict", r""),
)

# FreshWiki: FreshWiki/txt/<title with underscores>.txt of stanford-oval/storm at this commit
# (the text is CC BY-SA 4.0, FreshWiki/LICENSE).
FRESHWIKI_COMMIT = "599d8e416ba2496333a62af1a4d979edaf1e0f91"
# The event articles of FreshWiki's 100, chosen by their titles before any text was read.
FRESHWIKI_TITLES = (
    "2022 Luzon earthquake", "2022 Pakistan floods", "2022 West Java earthquake", "2023 Emilia-Romagna floods",
    "Cyclone Batsirai", "Cyclone Mocha", "Hurricane Hilary", "Hurricane Idalia", "Storm Eunice", "Typhoon Hinnamnor",
    "2022 Crimean Bridge explosion", "2022 Istanbul bombing", "2022 New York City Subway attack",
    "2023 Monterey Park shooting", "Banjska attack", "Killing of Amir Locke",
    "2023 Odisha train collision", "2023 Wagner Group plane crash", "China Eastern Airlines Flight 5735",
    "SpaceX Starship Integrated Flight Test",
    "2022 Hungarian parliamentary election", "2022 United States Senate election in Pennsylvania",
    "July 2022 United Kingdom government crisis", "October 2022 United Kingdom government crisis",
    "Joe Biden classified documents incident",
)
# Read (its opening sections) while the source was looked at, before the split was fixed: dev.
FRESHWIKI_READ_BEFORE = ("2022 Luzon earthquake",)
# Kind of a FreshWiki article from its title: the first pattern that matches (case-insensitive).
FRESHWIKI_KINDS = (
    ("election", r"election"),
    ("crisis", r"crisis|incident"),
    ("accident", r"collision|crash|flight"),
    ("attack", r"attack|bombing|shooting|killing|explosion"),
    ("hazard", r"earthquake|flood|cyclone|hurricane|storm|typhoon"),  # not "disaster": an SW100 domain
)
# Headings after which a FreshWiki article holds no prose of its own.
FRESHWIKI_END = {"references", "see also", "external links", "notes", "further reading", "bibliography"}
_CITATION = re.compile(r"\s*\[\d+\]")

LLMA_COMMIT = "a96b17e9cba5928f7eb1b64be817ae682d6cc90c"
LLMA_FILES = ("data/disaster.json", "data/wiki/wiki_created_after_jul_2023.json")  # the first holding a title wins
# Its English Wikipedia event articles, chosen by title before any text was read, with their kind.
LLMA_TITLES = {
    "2023 Hawaii wildfires": "hazard", "2023 Al Haouz earthquake": "hazard", "Storm Daniel": "hazard",
    "2023 Herat earthquakes": "hazard", "Hurricane Otis": "hazard", "2024 Noto earthquake": "hazard",
    "2024 Pakistan floods": "hazard", "2024 Chile wildfires": "hazard",
    "2023 Johannesburg building fire": "human", "Israel–Hamas war": "human",
    "Al-Ahli Arab Hospital explosion": "human", "2023 Guyana–Venezuela crisis": "human",
}

WIKIGEN_COMMIT = "aecded550348b565a122534b348128b8cf40ca49"
# Its event articles (``data/wiki/<page id>.json``), chosen by title alone before any text was
# read, with their kind: page id, kind.
WIKIGEN_TITLES = {
    "Tropical Storm Alex (2022)": (70933153, "hazard"), "Tropical Storm Harold": (74958528, "hazard"),
    "Cyclone Tej": (75111353, "hazard"), "March 2023 North American winter storm": (74837690, "hazard"),
    "November 2013 North American storm complex": (75075849, "hazard"),
    "July 2023 Northeastern United States floods": (74308955, "hazard"),
    "Humanitarian response to Cyclone Freddy": (73571248, "hazard"), "Weather of 1946": (73725759, "hazard"),
    "2022 Oder environmental disaster": (71511975, "hazard"), "Negros famine": (71522047, "hazard"),
    "2022–2023 mpox outbreak in India": (70939867, "epidemic"),
    "2022–2023 mpox outbreak in the Philippines": (71411975, "epidemic"),
    "Ngiao rebellion": (70276618, "war"), "Battle of Pailin": (70675810, "war"), "Battle of Soledar": (71456406, "war"),
    "Sack of Sarajevo": (72234599, "war"), "Dutch invasions in Brazil": (74985128, "war"),
    "War in Amhara": (74490445, "war"), "May 2023 Gaza–Israel clashes": (73760189, "war"),
    "Evacuation of the northern Gaza Strip": (75057918, "war"),
    "Colorado Springs nightclub shooting": (72299414, "violence"),
    "Indonesian Ulema Council shooting": (73704363, "violence"),
    "Shooting of Jason Harley Kloepfer": (72833793, "violence"), "Nduga hostage crisis": (72976036, "violence"),
    "Hazel's Inn raid": (74164885, "violence"), "Carol City murders": (70739382, "violence"),
    "Shakahola Forest incident": (73923491, "violence"),
    "Reactions to the 2023 Brazilian Congress attack": (72705131, "violence"),
    "2022 alleged plot to kill Coutts RCMP officers": (72395377, "violence"),
    "Death of Keenan Anderson": (72737526, "violence"), "Killing of Missy Bevers": (70389805, "violence"),
    "Murder of Joanne Witt": (70921112, "violence"), "Murder of Ruth Waymire": (71907286, "violence"),
    "2002-2003 UK firefighter dispute": (146341, "crisis"), "1983 women's march, Lahore": (70544829, "crisis"),
    "Third impeachment and removal of Pedro Castillo": (72496067, "crisis"),
    "Removal of Eduardo Cunha": (74979583, "crisis"), "Lady R incident": (73798864, "crisis"),
    "2023 Hong Kong electoral changes": (73719794, "crisis"),
    "1994 Manila Film Festival scandal": (74102410, "crisis"),
    "2022 UEFA Champions League final chaos": (70906450, "crisis"),
    "2022 Philippine House of Representatives elections in Metro Manila": (70264925, "election"),
    "1917 Minsk City Duma election": (70269039, "election"), "2022 Argyll and Bute Council election": (70509028, "election"),
    "2022 United States local elections": (72537224, "election"),
    "2023 Maldivian presidential election": (72545839, "election"),
    "2011 Mississippi elections": (72807149, "election"),
    "2024 United States House of Representatives elections in Florida": (72275775, "election"),
    "August 2023 Ohio Issue 1": (73773369, "election"), "November 2023 Ohio Issue 1": (74436919, "election"),
    "1986 New York State Comptroller election": (73985306, "election"),
    "1989 Serbian general election": (74596949, "election"),
}
_SENTENCE_END = re.compile(r"[.!?:;\"”)\]]$")

CHINAPEDIA_COMMIT = "4f3e897da088cbe89a4f1d4cba3fa2e439c3721b"
# Its event articles (``Page/<file name>.md``), chosen by title alone before any text was read:
# every event page of 6,000 characters or more whose title is not an election or referendum.
CHINAPEDIA_FILES = (
    '1257_Samalas_eruption', '1838_San_Andreas_earthquake', '1977_Houston_Anita_Bryant_protests', '1986_United_States_bombing_of_Libya',
    '1988_IRA_attacks_in_the_Netherlands', '2003_California_wildfires', '2016_Chattanooga_school_bus_crash', '2016_Croydon_tram_derailment',
    '2016_Dyn_cyberattack', '2016_Great_Smoky_Mountains_wildfires', '2016_Hoboken_train_crash', '2016_Jerusalem_shooting_attack',
    '2016_Kaikoura_earthquake', '2016_Malta_Fairchild_Merlin_crash', '2016_New_York_drought', '2016_Oakland_warehouse_fire',
    '2016_Quetta_police_training_college_attack', '2016_Samarinda_church_bombing', '2016_shootings_of_Des_Moines_police_officers', 'Aberfan_Disaster_Tribunal',
    'American_Civil_War', 'American_Revolution', 'American_Revolutionary_War', 'Armenian_energy_crisis_of_1990s',
    'Attack_on_Ras_Tanura', 'Bamileke_War', 'Baralong_incidents', 'Battle_of_3_Shevat',
    'Battle_of_Abritus', 'Battle_of_Abu_Hamed', 'Battle_of_Actium', 'Battle_of_Adwa',
    'Battle_of_Agincourt', 'Battle_of_Berestechko', 'Battle_of_Blenheim', 'Battle_of_Bosworth_Field',
    'Battle_of_Bouvines', 'Battle_of_Boz_Qandahari', 'Battle_of_Gettysburg', 'Battle_of_Hatvan',
    'Battle_of_Helsinki', 'Battle_of_Jutland', 'Battle_of_Jutland_(Denmark)', 'Battle_of_Khazir',
    'Battle_of_Kuruyuki', 'Battle_of_Marathon', 'Battle_of_Okinawa', 'Battle_of_Peleliu',
    'Battle_of_Pharsalus', 'Battle_of_Poitiers', 'Battle_of_Ponchatoula', 'Battle_of_Pyongyang_(1950)',
    'Battle_of_Ramillies', 'Battle_of_Stalingrad', 'Battle_of_Vyborg', 'Battle_of_Waterloo',
    'Battle_of_al-Bab', 'Battle_of_the_Nile', 'Campanian_Ignimbrite_eruption', 'Closings_and_cancellations_following_the_September_11_attacks',
    'Communication_during_the_September_11_attacks', 'Cyclone_Qendresa', 'Darkley_killings', 'Effects_of_Hurricane_Matthew_in_Haiti',
    'English_Civil_War', 'Eureka_Rebellion', 'Falklands_War', 'Finnish_Civil_War',
    'First_Battle_of_El_Alamein', 'First_Italo-Ethiopian_War', 'First_Punic_War', 'French_Revolution',
    'Glorious_Revolution', 'Granville_rail_disaster', 'Great_Famine_(Ireland)', 'Hurricane_Matthew',
    'Hurricane_Nicole_(2016)', 'Hurricane_Otto', 'Irish_Civil_War', 'January_2005_Tal_Afar_shootings',
    'Korean_War', 'Kosovo_War', 'Kuwaiti_oil_fires', 'Laconia_incident',
    'Lava_Lake_murders', 'Manx_revolt_of_1275', 'Mass_killings_of_landlords_under_Mao_Zedong', 'Massacre_of_Benares',
    'Memorials_and_services_for_the_September_11_attacks', 'Meteorological_history_of_Hurricane_Matthew', 'Munich_massacre', 'Murder_of_Cooper_Harris',
    'Murder_of_Elsie_Frost', 'Murder_of_Maria_Ladenburger', 'Murder_of_Pentecostals_in_Slaviansk', 'Murders_of_Rhonda_Johnson_and_Sharon_Shaw',
    'Nantucket_during_the_American_Revolutionary_War_era', 'November_2016_Israel_fires', 'November_2016_Jakarta_protests', 'October_2016_Sinai_attacks',
    'October_Revolution', 'Oklahoma_City_bombing', 'Operation_Barbarossa', 'Operation_Enduring_Freedom',
    'Operation_Grandslam', 'Operation_Niki', 'Operation_Orator', 'Operation_Rock_&_Roll',
    'Operation_Sea_Lion', 'Ovillers-la-Boisselle_in_World_War_I', 'Peloponnesian_War', 'Pittsburgh_flood_of_1936',
    'Raid_on_the_Queensland_Government_Printing_Office', 'Rescue_and_recovery_effort_after_the_September_11_attacks_on_the_World_Trade_Center', 'Rovetta_massacre', 'Roxbury_murders',
    'Russian_Civil_War', 'Russian_Revolution', 'Second_Battle_of_El_Alamein', 'Second_Punic_War',
    'Shooting_of_Benjamin_Marconi', 'Shooting_of_Keith_Lamont_Scott', 'Shooting_of_Terence_Crutcher', 'Siege_of_Buda_(1849)',
    'Sino-Indian_War', 'Six-Day_War', 'Stonewall_riots', 'Tainei-ji_incident',
    'Thames_Torso_Murders', 'Tornadoes_of_2017', 'Trapezuntine_Civil_War', 'Trojan_War',
    'Tropical_Storm_Aere_(2016)', 'Typhoon_Haima', 'Typhoon_Megi_(2016)', 'Typhoon_Sarika',
    'U.S._government_response_to_the_September_11_attacks', 'U.S._national_anthem_protests', 'War_of_the_League_of_the_Indies',
)
# Kind of a chinapedia article from its title: the first pattern that matches (case-insensitive).
CHINAPEDIA_KINDS = (
    ("hazard", r"earthquake|eruption|hurricane|typhoon|cyclone|tropical storm|tornado|flood|drought|wildfire|famine"
               r"|israel fires"),
    ("accident", r"crash|derailment|rail disaster|warehouse fire|tribunal"),
    ("violence", r"shooting|murder|killing|massacre|bombing|attack|raid|riots|protests|cyberattack"),
    ("war", r"."),
)
# Titles that turned out not to be events when the records' format was checked: dealt with the
# others (so that no other article changes split), then left out.
CHINAPEDIA_NOT_EVENTS = ("Battle of Jutland (Denmark)",)  # a football rivalry
CHINAPEDIA_END = FRESHWIKI_END | {"sources", "citations", "footnotes", "works cited", "references and notes"}
_CAPTION = re.compile(r"[^.!?\]]*\]\]\s*")  # the rest of an image's caption, "..., January 1963]]"
_EMPHASIS = re.compile(r"(?<!\w)_([^_]+)_(?!\w)")
_IMAGE_FILE = re.compile(r"\S+\.(?:jpe?g|png|gif|svg|tiff?|webm|ogg|ogv)\b\s*", re.IGNORECASE)  # "Matthew_WV_...gif"

# File names in SW100 that are not the article's title (typos, abbreviations).
TITLE_FIXES = {
    "Columbine_HS_Massacre": "Columbine High School massacre",
    "Irish_Potate_Famine": "Irish Potato Famine",
    "US_Presiential_Election_2008": "2008 United States presidential election",
    "IMF": "International Monetary Fund",
    "IRS": "Internal Revenue Service",
    "GDP": "Gross domestic product",
    "COPD": "Chronic obstructive pulmonary disease",
}


def corpus_record(doc_id: int, title: str, url: str, text: str, first_section: str,
                  qid: str | None = None, label: str | None = None) -> dict:
    """A ``CorpusDocument`` record (schema 1) of one held-out article; its concept is resolved
    when the source gives a QID."""
    return {
        "schema_version": "1",
        "id": doc_id,
        "title": title,
        "url": url,
        "document_concept": {"id": qid, "label": label or title, "labels": [], "resolved": qid is not None},
        "text": text,
        "first_section": first_section,
        "categories": [],
    }


def wiki_url(title: str, site: str = "en") -> str:
    return f"https://{site}.wikipedia.org/wiki/" + urllib.parse.quote(title.replace(" ", "_"))


def split_of(title: str, domain_titles: list[str]) -> str:
    """dev or test: titles of one domain sorted by salted SHA-256, alternating from dev."""
    order = sorted(domain_titles, key=lambda t: hashlib.sha256(f"{SALT}:{t}".encode()).hexdigest())
    return "dev" if order.index(title) % 2 == 0 else "test"


def kind_of(title: str) -> str:
    return next(k for k, pat in KINDS if re.search(pat, title, re.IGNORECASE))


def snapshot_titles() -> set[str]:
    """The page titles of the bundled snapshot (``snapshots/enwiki``): never held out."""
    return {ln.split(":", 2)[2] for ln in bz2.decompress(SNAPSHOT_INDEX.read_bytes()).decode("utf-8").split("\n") if ln}


def hese_records(git_dir: str, exclude: set[str]) -> list[dict]:
    """The HESE lead sections taken: eligible ones (not a snapshot page, not a list, not an event
    in ``exclude`` (casefolded titles)), the first HESE_COUNT by salted title hash."""
    raw = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{HESE_COMMIT}:data.json"],
                         check=True, capture_output=True).stdout
    blob = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()
    if blob != HESE_BLOB:
        raise SystemExit(f"error: {HESE_COMMIT}:data.json is not git blob {HESE_BLOB} (got {blob})")
    snapshot = snapshot_titles()
    items = []
    for i, rec in enumerate(json.loads(raw)):
        if not rec.get("wikipedia_summary"):
            continue
        title = urllib.parse.unquote(rec["article_en"].rsplit("/wiki/", 1)[1]).replace("_", " ")
        if title in snapshot or title.startswith("List of") or title.casefold() in exclude:
            continue
        items.append({"index": i, "title": title, "rec": rec})
    items.sort(key=lambda it: hashlib.sha256(f"{PICK_SALT}:{it['title']}".encode()).hexdigest())
    return items[:HESE_COUNT]


def article_text(paragraphs: Iterable[tuple[str, bool]], end: set[str]) -> tuple[str, str]:
    """(text, first section) of an article from its (paragraph, is a heading) items: headings
    stay as their own paragraphs, as the corpus keeps them; the first section is what comes
    before the first heading; the text ends at the first heading in ``end`` (casefolded)."""
    paras, lead, in_lead = [], [], True
    for text, heading in paragraphs:
        if not text:
            continue
        if heading:
            if text.casefold() in end:
                break
            in_lead = False
        paras.append(text)
        if in_lead:
            lead.append(text)
    return "\n\n".join(paras), "\n\n".join(lead)


def _looks_like_heading(text: str) -> bool:
    """A short paragraph that does not end like a sentence: a section heading."""
    return len(text) < 120 and not _SENTENCE_END.search(text)


def freshwiki_text(raw: str, title: str) -> tuple[str, str]:
    """(text, first section) of a FreshWiki file: its first line is the title, "#" lines are
    headings, citation markers ("[8]") go, and the text ends at the first of ``FRESHWIKI_END``'s
    headings."""
    lines = raw.split("\n")
    if not lines or lines[0].strip().replace("_", " ") != title:
        raise SystemExit(f"error: FreshWiki file of {title!r} starts with {lines[0][:80]!r}, not its title")

    def items():
        for line in (ln.strip() for ln in lines[1:]):
            if line.startswith("#"):
                yield line.lstrip("#").strip(), True
            elif line:
                yield " ".join(_CITATION.sub("", line).split()), False

    return article_text(items(), FRESHWIKI_END)


def freshwiki_records(git_dir: str, first_id: int) -> tuple[list[tuple], dict[str, list[dict]]]:
    """The FreshWiki event articles as (split.tsv rows, records per split), ids from ``first_id``."""
    by_kind: dict[str, list[str]] = {}
    for title in FRESHWIKI_TITLES:
        kind = next(k for k, pat in FRESHWIKI_KINDS if re.search(pat, title, re.IGNORECASE))
        by_kind.setdefault(kind, []).append(title)
    rows, docs, next_id = [], {"dev": [], "test": []}, first_id
    for kind in sorted(by_kind):
        dealt = [t for t in by_kind[kind] if t not in FRESHWIKI_READ_BEFORE]
        for title in sorted(by_kind[kind]):
            path = f"FreshWiki/txt/{title.replace(' ', '_')}.txt"
            text, lead = freshwiki_text(git(git_dir, "show", f"{FRESHWIKI_COMMIT}:{path}"), title)
            split = "dev" if title in FRESHWIKI_READ_BEFORE else split_of(title, dealt)
            docs[split].append(corpus_record(next_id, title, wiki_url(title), text, lead))
            rows.append((next_id, split, kind, title, "", path))
            next_id += 1
    return rows, docs


def llma_records(git_dir: str, first_id: int, held: set[str]) -> tuple[list[tuple], dict[str, list[dict]]]:
    """The LLM-Attributor event articles as (split.tsv rows, records per split), ids from
    ``first_id``. Its texts are plain paragraphs, one per line, without headings or citation
    markers; the articles' sections are not marked, so ``first_section`` is the first paragraph."""
    found: dict[str, tuple[str, str, str]] = {}
    for path in LLMA_FILES:
        data = json.loads(git(git_dir, "show", f"{LLMA_COMMIT}:{path}"))
        if isinstance(data, dict):  # title -> paragraphs
            items = [(t, "\n".join(ps), wiki_url(t)) for t, ps in data.items()]
        else:  # [{title, text, source}], news items among them
            items = [(it["title"], it["text"], it["source"]) for it in data]
        for title, text, url in items:
            if title in LLMA_TITLES and title not in found:
                if not url.startswith("https://en.wikipedia.org/wiki/"):
                    raise SystemExit(f"error: LLM-Attributor item {title!r} comes from {url!r}, not English Wikipedia")
                found[title] = (text, url, path)
    missing = sorted(set(LLMA_TITLES) - set(found))
    if missing:
        raise SystemExit(f"error: LLM-Attributor at {LLMA_COMMIT[:12]} holds no {missing}")
    again = sorted(t for t in LLMA_TITLES if t.casefold() in held)
    if again:
        raise SystemExit(f"error: {again} already in the held-out set")
    rows, docs, next_id = [], {"dev": [], "test": []}, first_id
    for kind in sorted(set(LLMA_TITLES.values())):
        titles = sorted(t for t, k in LLMA_TITLES.items() if k == kind)
        for title in titles:
            text, url, path = found[title]
            paras = [" ".join(p.split()) for p in text.split("\n")]
            paras = [p for p in paras if p]
            split = split_of(title, titles)
            docs[split].append(corpus_record(next_id, title, url, "\n\n".join(paras), paras[0]))
            rows.append((next_id, split, kind, title, "", f"LLM-Attributor/{path}"))
            next_id += 1
    return rows, docs


def wikigen_text(raw: str) -> tuple[str, str]:
    """(text, first section) of a WikiGenBench article's ``text``: paragraphs are lines, a
    heading is a line of its own that does not end like a sentence (never the first), and the
    text ends at the first of ``FRESHWIKI_END``'s headings."""
    texts = [t for t in (" ".join(_CITATION.sub("", line).split()) for line in raw.split("\n")) if t]
    return article_text(((t, i > 0 and _looks_like_heading(t)) for i, t in enumerate(texts)), FRESHWIKI_END)


def wikigen_records(git_dir: str, first_id: int, held: set[str]) -> tuple[list[tuple], dict[str, list[dict]]]:
    """The WikiGenBench event articles as (split.tsv rows, records per split), ids from
    ``first_id``: whole articles of the ``wikimedia/wikipedia`` 20231101.en dump that were not in
    its 20220301 dump. No QIDs."""
    again = sorted(t for t in WIKIGEN_TITLES if t.casefold() in held or t in snapshot_titles())
    if again:
        raise SystemExit(f"error: {again} already in the held-out set or the snapshot")
    rows, docs, next_id = [], {"dev": [], "test": []}, first_id
    for kind in sorted({k for _, k in WIKIGEN_TITLES.values()}):
        titles = sorted(t for t, (_, k) in WIKIGEN_TITLES.items() if k == kind)
        for title in titles:
            path = f"data/wiki/{WIKIGEN_TITLES[title][0]}.json"
            item = json.loads(git(git_dir, "show", f"{WIKIGEN_COMMIT}:{path}"))
            if item["key"] != title:
                raise SystemExit(f"error: WikiGenBench {path} is {item['key']!r}, not {title!r}")
            text, lead = wikigen_text(item["text"])
            split = split_of(title, titles)
            docs[split].append(corpus_record(next_id, title, wiki_url(title), text, lead))
            rows.append((next_id, split, kind, title, "", f"WikiGenBench/{path}"))
            next_id += 1
    return rows, docs


def chinapedia_text(raw: str) -> tuple[str, str]:
    """(text, first section) of a chinapedia page: paragraphs are separated by blank lines; a
    table (indented lines, or a grid of "|") and an image's "thumb|...|caption" go, as do
    citation markers ("[8]"), the remains of image captions ("..., Lancashire, England, January
    1963]]"), image file names ("Matthew_WV_20161004_0745_UTC.gif") and the underscores of
    emphasis; a heading is a one-line paragraph that does not end like a sentence (never the
    first), and the text ends at the first of ``CHINAPEDIA_END``'s headings."""
    def items():
        first = True
        for block in re.split(r"\n\s*\n", raw):
            lines = [ln for ln in block.split("\n") if ln.strip()]
            if not lines or any(ln.startswith("  ") for ln in lines) or block.count("|") >= 2:
                continue  # a table (indented, or a grid of "|"), or an image's "thumb|upright|caption"
            text = " ".join(_EMPHASIS.sub(r"\1", _IMAGE_FILE.sub("", _CAPTION.sub("", _CITATION.sub(
                "", " ".join(lines))))).split())
            if text:
                yield text, not first and len(lines) == 1 and _looks_like_heading(text)
                first = False

    return article_text(items(), CHINAPEDIA_END)


def chinapedia_records(git_dir: str, first_id: int, held: set[str]) -> tuple[list[tuple], dict[str, list[dict]]]:
    """The chinapedia event pages as (split.tsv rows, records per split), ids from ``first_id``:
    whole English Wikipedia articles of the 2019-07-20 dump. Titles already held (HESE's lead
    sections of the same wars, SW100's Simple English articles) and snapshot pages are left out."""
    snapshot = snapshot_titles()
    by_kind: dict[str, list[str]] = {}
    for name in CHINAPEDIA_FILES:
        title = name.replace("_", " ")
        if title.casefold() in held or title in snapshot:
            continue
        kind = next(k for k, pat in CHINAPEDIA_KINDS if re.search(pat, title, re.IGNORECASE))
        by_kind.setdefault(kind, []).append(title)
    rows, docs, next_id = [], {"dev": [], "test": []}, first_id
    for kind in sorted(by_kind):
        titles = sorted(by_kind[kind])
        for title in titles:
            path = f"Page/{title.replace(' ', '_')}.md"
            text, lead = chinapedia_text(git(git_dir, "show", f"{CHINAPEDIA_COMMIT}:{path}"))
            split = split_of(title, titles)
            if title in CHINAPEDIA_NOT_EVENTS:  # its id stays unused
                next_id += 1
                continue
            docs[split].append(corpus_record(next_id, title, wiki_url(title), text, lead))
            rows.append((next_id, split, kind, title, "", f"chinapedia/{path}"))
            next_id += 1
    return rows, docs


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True).stdout


def main(argv: list[str]) -> int:
    git_dir, hese_dir = argv[1], argv[2]
    qids: dict[str, tuple[str, str]] = {}
    if len(argv) > 3:
        for item in json.loads(Path(argv[3]).read_text(encoding="utf-8")):
            title = urllib.parse.unquote(item["article"].rsplit("/", 1)[1]).replace("_", " ")
            qids[title.casefold()] = (item["event"].rsplit("/", 1)[1], item["label"])
    names = [p for p in git(git_dir, "ls-tree", "-r", "--name-only", COMMIT).split() if p.endswith(".txt")]
    by_domain: dict[str, list[tuple[str, str]]] = {}
    for path in names:
        parts = path.split("/")
        if len(parts) == 3 and parts[1] in DOMAINS:
            stem = parts[2][: -len(".txt")]
            by_domain.setdefault(parts[1], []).append((stem, TITLE_FIXES.get(stem, stem.replace("_", " "))))
    rows, docs = [], {"dev": [], "test": []}
    next_id = FIRST_ID
    for domain in sorted(by_domain):
        titles = [t for _, t in sorted(by_domain[domain])]
        for stem, title in sorted(by_domain[domain]):
            text = " ".join(git(git_dir, "show", f"{COMMIT}:SW100/{domain}/{stem}.txt").split())
            split = split_of(title, titles)
            qid, label = qids.get(title.casefold(), (None, None))
            docs[split].append(corpus_record(next_id, title, wiki_url(title, "simple"), text, text, qid, label))
            rows.append((next_id, split, domain, title, qid or "", f"SW100/{domain}/{stem}.txt"))
            next_id += 1
    # HESE: English Wikipedia lead sections, after the 60 SW100 articles
    taken = hese_records(hese_dir, {title.casefold() for _, _, _, title, _, _ in rows})
    by_kind: dict[str, list[dict]] = {}
    for it in taken:
        by_kind.setdefault(kind_of(it["title"]), []).append(it)
    for kind in sorted(by_kind):
        titles = [it["title"] for it in by_kind[kind]]
        for it in sorted(by_kind[kind], key=lambda it: it["title"]):
            rec, title = it["rec"], it["title"]
            qid = rec["event"].rsplit("/", 1)[1]
            if not re.fullmatch(r"Q[1-9]\d*", qid):
                raise SystemExit(f"error: HESE record {it['index']}: {rec['event']!r} is not a Wikidata entity")
            text = " ".join(rec["wikipedia_summary"].split())
            split = split_of(title, titles)
            docs[split].append(corpus_record(next_id, title, rec["article_en"], text, text, qid, rec["eventLabel"]))
            rows.append((next_id, split, kind, title, qid, f"HESE/data.json[{it['index']}]"))
            next_id += 1
    def add(source: tuple[list[tuple], dict[str, list[dict]]]) -> None:
        src_rows, src_docs = source
        rows.extend(src_rows)
        for split, items in src_docs.items():
            docs[split] += items

    # the optional sources, each after the ones before it: ids run on from FIRST_ID
    if len(argv) > 4:
        add(freshwiki_records(argv[4], FIRST_ID + len(rows)))
    if len(argv) > 5:
        add(llma_records(argv[5], FIRST_ID + len(rows), {row[3].casefold() for row in rows}))
    if len(argv) > 6:
        add(wikigen_records(argv[6], FIRST_ID + len(rows), {row[3].casefold() for row in rows}))
    if len(argv) > 7:
        add(chinapedia_records(argv[7], FIRST_ID + len(rows), {row[3].casefold() for row in rows}))
    OUT.mkdir(parents=True, exist_ok=True)
    for split, items in docs.items():
        with open(OUT / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for doc in items:
                f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    with open(OUT / "split.tsv", "w", encoding="utf-8") as f:
        f.write("id\tsplit\tdomain\ttitle\tqid\tsource_path\n")
        for row in rows:
            f.write("\t".join(str(x) for x in row) + "\n")
    print({s: len(d) for s, d in docs.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
