"""Build the bundled English Wikipedia dump snapshot (the offline default of `causalkg corpus build`).

Writes, in the real multistream dump format, so that the offline path runs exactly the code a
full dump runs:

- ``snapshots/enwiki/enwiki-snapshot-pages-articles-multistream.xml.bz2``: MediaWiki export XML
  (export-0.10), cut into independent bz2 streams as Wikimedia does: the ``<mediawiki>`` header
  with ``<siteinfo>`` alone in the first stream, then streams of at most 100 ``<page>``
  elements in page-id order, then ``</mediawiki>`` alone in the last stream.
- ``snapshots/enwiki/enwiki-snapshot-pages-articles-multistream-index.txt.bz2``: the index, one
  ``offset:page_id:title`` line per page (titles XML-escaped, as in Wikimedia's index files).
- ``snapshots/enwiki/event_infoboxes.json``: WEC's list of event infoboxes, copied unchanged.
- ``snapshots/enwiki/SOURCE.md`` and ``LICENSE-WEC``: origin, licences, and every page with its
  ids, saying which ids were assigned here.

Sources (read from ``--shared``, default ``/work/shared/data``; never read by tests):

- ``gensim-enwiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``: a real
  2016-05-01 enwiki dump excerpt (206 pages: 106 articles, 100 redirects, one project page).
  Its ``<siteinfo>`` and every ``<page>`` element are copied byte for byte.
- ``wec-event-wikitext/*.json``: the raw wikitext of 61 real pages (about 2018-2020) without ids,
  revisions or timestamps. Each becomes a ``<page>`` with an assigned page id (1,000,000,001 on)
  and revision id (3,000,000,001 on), far above any id enwiki has issued, so they cannot collide
  with the excerpt's real ids. They have no ``<timestamp>`` and no ``<contributor>``: the source
  does not say, and we do not invent them. Two titles are corrected from the wikitext itself
  (see TITLE_FIXES); two pages that are also in the excerpt are taken from the excerpt only.

Run: ``.venv/bin/python scripts/build_enwiki_snapshot.py`` (about 10 s). The output is
byte-identical from run to run (bz2 is deterministic; nothing depends on the clock).
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from causalkg.corpus.dump import iter_index, write_multistream  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "snapshots" / "enwiki"
DUMP_NAME = "enwiki-snapshot-pages-articles-multistream.xml.bz2"
INDEX_NAME = "enwiki-snapshot-pages-articles-multistream-index.txt.bz2"

GENSIM_FILE = "gensim-enwiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
WEC_DIR = "wec-event-wikitext"
WEC_FILES = (
    "accident.json", "civil_attack.json", "concrete_general.json", "disaster.json",
    "election.json", "extractfrompage.json", "others.json", "reject.json",
)
PAGES_PER_STREAM = 100
ASSIGNED_PAGE_ID_BASE = 1_000_000_000
ASSIGNED_REV_ID_BASE = 3_000_000_000

# WEC title -> real title, each with the evidence in the page's own wikitext.
TITLE_FIXES = {
    "Charlie Habdo": (
        "Charlie Hebdo shooting",
        "the JSON title is misspelt; the wikitext opens with {{DISPLAYTITLE:''Charlie Hebdo'' shooting}}",
    ),
    "United States elections 2008": (
        "2009 United States elections",
        "the wikitext is the 2009 article: its infobox says year = 2009 and its lead is "
        "\"The '''2009 United States elections''' were held on Tuesday, November 3\"",
    ),
}


def mediawiki_sha1(text: str) -> str:
    """The ``<sha1>`` of a revision as MediaWiki writes it: SHA-1 of the UTF-8 text in base 36."""
    n = int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest(), "big")
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out.rjust(31, "0")


def read_gensim(path: Path) -> tuple[bytes, list[dict]]:
    """The excerpt's header (``<mediawiki>`` + ``<siteinfo>``) and its pages, byte for byte."""
    data = bz2.decompress(path.read_bytes())
    first = data.index(b"  <page>")
    header = data[:first]
    pages = []
    for m in re.finditer(rb"  <page>\n.*?</page>\n", data, re.S):
        raw = m.group(0)
        title = re.search(rb"<title>(.*?)</title>", raw).group(1).decode("utf-8")
        page_id = int(re.search(rb"<id>(\d+)</id>", raw).group(1))
        rev_id = int(re.search(rb"<revision>\s*<id>(\d+)</id>", raw).group(1))
        ns = int(re.search(rb"<ns>(-?\d+)</ns>", raw).group(1))
        redirect = re.search(rb'<redirect title="([^"]*)"', raw)
        pages.append({
            "raw": raw, "title_xml": title, "page_id": page_id, "rev_id": rev_id, "ns": ns,
            "redirect": redirect is not None, "source": GENSIM_FILE, "assigned": False,
        })
    tail = data[m.end():].strip()
    if tail != b"</mediawiki>":
        raise SystemExit(f"unexpected end of {path}: {tail[:60]!r}")
    return header, pages


def unescape_xml(s: str) -> str:
    return s.replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def wec_page_xml(title: str, page_id: int, rev_id: int, text: str) -> bytes:
    """A ``<page>`` in the excerpt's layout (export-0.10), for a WEC page. No timestamp or
    contributor: the source has neither."""
    body = (
        "  <page>\n"
        f"    <title>{escape(title)}</title>\n"
        "    <ns>0</ns>\n"
        f"    <id>{page_id}</id>\n"
        "    <revision>\n"
        f"      <id>{rev_id}</id>\n"
        "      <model>wikitext</model>\n"
        "      <format>text/x-wiki</format>\n"
        f"      <text xml:space={quoteattr('preserve')}>{escape(text, {chr(34): '&quot;'})}</text>\n"
        f"      <sha1>{mediawiki_sha1(text)}</sha1>\n"
        "    </revision>\n"
        "  </page>\n"
    )
    return body.encode("utf-8")


def read_wec(folder: Path, taken_titles: set[str]) -> tuple[list[dict], list[str]]:
    pages, notes = [], []
    n = 0
    for name in WEC_FILES:
        for item in json.loads((folder / name).read_text(encoding="utf-8")):
            title = item["title"]
            if title in TITLE_FIXES:
                new, why = TITLE_FIXES[title]
                notes.append(f"`{title}` (WEC `{name}`) is written as **{new}**: {why}.")
                title = new
            if title in taken_titles:
                notes.append(
                    f"`{title}` (WEC `{name}`) is left out: the 2016 excerpt has the same page with its "
                    "real page id and revision, and a dump holds one page per title."
                )
                continue
            n += 1
            page_id, rev_id = ASSIGNED_PAGE_ID_BASE + n, ASSIGNED_REV_ID_BASE + n
            pages.append({
                "raw": wec_page_xml(title, page_id, rev_id, item["text"]), "title_xml": escape(title),
                "page_id": page_id, "rev_id": rev_id, "ns": 0, "redirect": False,
                "source": f"{WEC_DIR}/{name}", "assigned": True,
            })
    return pages, notes


def write_dump(header: bytes, pages: list[dict], out: Path, index: Path) -> list[tuple[int, dict]]:
    """Write the multistream file and its index (``corpus.dump.write_multistream``, the same
    writer anyone cutting a sample of a dump uses); return (stream offset, page) pairs."""
    write_multistream(header, (p["raw"] for p in pages), out, index, pages_per_stream=PAGES_PER_STREAM)
    offsets = sorted({e.offset for e in iter_index(index)})
    return [(offsets[i // PAGES_PER_STREAM], p) for i, p in enumerate(pages)]


SOURCE_HEAD = """\
# enwiki snapshot: a small real English Wikipedia dump in the multistream format

Built by `scripts/build_enwiki_snapshot.py` (do not edit the dump by hand: rerun the script).
It is the offline default of `causalkg corpus build` (`[wikipedia] dump` and `index` in
`causalkg/core/defaults.toml`), and a test fixture.

## Files

| file | what |
|---|---|
| `{dump}` | MediaWiki export XML (export-0.10) in {n_streams} bz2 streams: the header (`<mediawiki>` + `<siteinfo>`) alone, {n_page_streams} streams of at most 100 pages, `</mediawiki>` alone |
| `{index}` | the index: one `offset:page_id:title` line per page ({n_pages} lines; titles XML-escaped as in Wikimedia's files) |
| `event_infoboxes.json` | WEC's event infobox list (`en_all_event_infoboxs.json`), unchanged |
| `LICENSE-WEC` | the Apache-2.0 licence of the WEC repository |

## Sources and licences

- **Page text: Wikipedia, CC BY-SA** (3.0 for the 2016 pages, 3.0/4.0 for the later ones; also
  GFDL for the 2016 pages). The authors are the Wikipedia contributors listed in each page's
  history (the URL in the table below, `?action=history`). Any copy or derivative of this
  snapshot, the corpus built from it included, must keep this attribution and the same licence.
- **2016 excerpt** (`<siteinfo>` and {n_gensim} pages, byte for byte, real page ids, revision ids,
  timestamps and contributors): `gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2`
  from https://github.com/piskvorky/gensim (commit a3e8a3fafc48554f03d21831d7b5bbf782e7c4ec,
  2016-06-07; the gensim repository is LGPL-2.1). It is a dump of 2016-05-01, MediaWiki
  1.27.0-wmf.22: 106 articles, 100 redirects and one project-namespace page (ns 4).
- **WEC pages** ({n_wec} pages of raw wikitext, about 2018-2020): `src/test/resources/wikipedia/*.json`
  from https://github.com/AlonEirew/extract-wec (HEAD 921a37af44a81b396015bd73177672bf1f2e0a43;
  Apache-2.0, `LICENSE-WEC`). `event_infoboxes.json` is that repository's
  `src/main/resources/infobox_config/en_all_event_infoboxs.json` (commit feaa9cb98b8deb87f98eef9e4029f9b3717df11f).

## What was assigned or changed here (not facts about Wikipedia)

- The WEC source has no page ids, revision ids, timestamps or contributors. **Page ids
  {pid_lo}-{pid_hi} and revision ids {rid_lo}-{rid_hi} are assigned** here (in the order of the
  table below), far above any id enwiki has issued (page ids are in the tens of millions and
  revision ids near 1.3 billion in 2025), so they never collide with the excerpt's real ids.
  Those revisions have **no `<timestamp>` and no `<contributor>`** element (export-0.10.xsd
  requires both; we leave them out rather than invent them), so the corpus has
  `timestamp: null` for them. Their `<sha1>` is computed from the text as MediaWiki does.
- The excerpt's `<siteinfo>` (dbname enwiki, 2016) heads the whole file, WEC pages included.
- Titles: {title_notes}
- The snapshot holds {n_pages} pages: {n_gensim} from the excerpt and {n_wec} from WEC.

## Pages

| page id | revision id | ids | ns | redirect | title | source |
|---:|---:|---|---:|---|---|---|
"""


def write_source(out: Path, located: list[tuple[int, dict]], notes: list[str], n_streams: int) -> None:
    pages = [p for _, p in located]
    wec = [p for p in pages if p["assigned"]]
    text = SOURCE_HEAD.format(
        dump=DUMP_NAME, index=INDEX_NAME, n_streams=n_streams, n_page_streams=n_streams - 2,
        n_pages=len(pages), n_gensim=len(pages) - len(wec), n_wec=len(wec),
        pid_lo=wec[0]["page_id"], pid_hi=wec[-1]["page_id"], rid_lo=wec[0]["rev_id"], rid_hi=wec[-1]["rev_id"],
        title_notes=" ".join(notes),
    )
    rows = []
    for p in pages:
        title = unescape_xml(p["title_xml"])
        link = "https://en.wikipedia.org/wiki/" + title.replace(" ", "_")
        rows.append(
            f"| {p['page_id']} | {p['rev_id']} | {'assigned' if p['assigned'] else 'real'} | {p['ns']} | "
            f"{'yes' if p['redirect'] else ''} | [{title.replace('|', '&#124;')}]({link.replace(' ', '_').replace(')', '%29')}) | {p['source']} |"
        )
    out.write_text(text + "\n".join(rows) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path("/work/shared/data"), help="folder holding gensim-enwiki/ and wec-event-wikitext/")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    header, gensim_pages = read_gensim(args.shared / GENSIM_FILE)
    taken = {unescape_xml(p["title_xml"]) for p in gensim_pages}
    wec_pages, notes = read_wec(args.shared / WEC_DIR, taken)
    pages = sorted(gensim_pages + wec_pages, key=lambda p: p["page_id"])  # dumps are in page-id order
    args.out.mkdir(parents=True, exist_ok=True)
    located = write_dump(header, pages, args.out / DUMP_NAME, args.out / INDEX_NAME)
    shutil.copyfile(args.shared / WEC_DIR / "en_all_event_infoboxs.json", args.out / "event_infoboxes.json")
    shutil.copyfile(args.shared / WEC_DIR / "LICENSE", args.out / "LICENSE-WEC")
    n_streams = 2 + -(-len(pages) // PAGES_PER_STREAM)
    write_source(args.out / "SOURCE.md", located, notes, n_streams)
    size = (args.out / DUMP_NAME).stat().st_size
    print(f"{args.out / DUMP_NAME}: {len(pages)} pages in {n_streams} streams, {size / 1e6:.2f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
