"""Build the held-out Wikipedia event set (``snapshots/heldout/``) from the SW100 articles.

SW100 (Araki and Mitamura, COLING 2018) is 100 Simple English Wikipedia articles in ten
domains, kept as plain text in https://github.com/karshyap/Event_Detection. We take the six
domains that hold events (disaster, disease, economics, geology, history, politics), turn each
article into a corpus record (``CorpusDocument``) and split them into ``dev`` and ``test`` by a
fixed hash of the title, stratified by domain, before anyone reads the text.

Usage: python scripts/build_heldout.py GIT_DIR [HISTORIC_EVENTS_JSON]
  GIT_DIR: a clone (or bare git directory) of karshyap/Event_Detection at COMMIT below.
  HISTORIC_EVENTS_JSON: optional Wikidata event QID <-> enwiki title map (historicEvents.json)
  used to fill ``document_concept`` where the title matches; other documents stay unresolved.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import urllib.parse
from pathlib import Path

COMMIT = "6571469254ed7ed0b8978668a252b6a4c94ea7ee"
DOMAINS = ("disaster", "disease", "economics", "geology", "history", "politics")
SALT = "causalkg-heldout-v1"
FIRST_ID = 2000000001  # assigned ids, far from enwiki's and the snapshot's ranges
OUT = Path(__file__).resolve().parent.parent / "snapshots" / "heldout"

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


def split_of(title: str, domain_titles: list[str]) -> str:
    """dev or test: titles of one domain sorted by salted SHA-256, alternating from dev."""
    order = sorted(domain_titles, key=lambda t: hashlib.sha256(f"{SALT}:{t}".encode()).hexdigest())
    return "dev" if order.index(title) % 2 == 0 else "test"


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True).stdout


def main(argv: list[str]) -> int:
    git_dir = argv[1]
    qids: dict[str, tuple[str, str]] = {}
    if len(argv) > 2:
        for item in json.loads(Path(argv[2]).read_text(encoding="utf-8")):
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
            doc = {
                "schema_version": "1",
                "id": next_id,
                "title": title,
                "url": "https://simple.wikipedia.org/wiki/" + urllib.parse.quote(title.replace(" ", "_")),
                "document_concept": {"id": qid, "label": label or title, "labels": [], "resolved": qid is not None},
                "text": text,
                "first_section": text,
                "categories": [],
            }
            docs[split].append(doc)
            rows.append((next_id, split, domain, title, qid or "", f"SW100/{domain}/{stem}.txt"))
            next_id += 1
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
