"""``build_documents`` (corpus/wikipedia.py): the corpus of the bundled snapshot, and a small
multistream dump cut from it (real pages) for determinism, resume, redirects and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import CorpusDocument
from causalkg.core.errors import ConfigError, SourceError
from causalkg.core.jsonl import read_jsonl
from causalkg.corpus import dump as d
from causalkg.corpus.wikipedia import EventInfoboxes, build_documents

REPO = Path(__file__).resolve().parents[2]
SNAP = REPO / "snapshots" / "enwiki"
DUMP = SNAP / "enwiki-snapshot-pages-articles-multistream.xml.bz2"
CONCEPTS = REPO / "tests" / "fixtures" / "enwiki" / "concepts.jsonl"

# Real pages of the snapshot, in this order: the redirect's target comes before the redirect
# (a sequential read then needs a second pass), a project-namespace page, an article without infobox.
MINI_TITLES = [
    "Maltrata bus crash", "Azerbaijan Airlines Flight 217", "1995 Chiapas earthquake",
    "An American in Paris", "1979 Machchhu dam failure", "Wikipedia:Adding Wikipedia articles to Nupedia",
    "AnAmericanInParis", "Solar eclipse of May 9, 1967", "Aa River", "West Coast Flight 720",
]
# Invented concepts (made-up QIDs and sitelinks), for the matching rules only.
MINI_CONCEPTS = [
    {"id": "Q900000001", "kind": "instance", "label": "invented: redirect sitelink", "aliases": ["inv"],
     "seed_classes": ["Q8065"], "enwiki_title": "AnAmericanInParis"},
    {"id": "Q900000002", "kind": "instance", "label": "invented: direct sitelink", "aliases": [],
     "seed_classes": ["Q7944"], "enwiki_title": "1995_Chiapas_earthquake"},
    {"id": "Q900000003", "kind": "instance", "label": "invented: not in the dump", "aliases": [],
     "seed_classes": [], "enwiki_title": "No such page"},
    {"id": "Q7944", "kind": "class", "label": "earthquake", "aliases": [], "seed_classes": ["Q7944"]},
    {"id": "Q8065", "kind": "class", "label": "natural disaster", "aliases": [], "seed_classes": ["Q8065"]},
]


@pytest.fixture(scope="module")
def mini(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("mini")
    chunks = {d.peek_header(c).title: c for _, c in d.SequentialReader(DUMP)}
    dump = folder / "mini-pages-articles-multistream.xml.bz2"
    index = folder / "mini-pages-articles-multistream-index.txt.bz2"
    d.write_multistream(d.read_header(DUMP), [chunks[t] for t in MINI_TITLES], dump, index, pages_per_stream=3)
    concepts = folder / "concepts.jsonl"
    concepts.write_text("".join(json.dumps(c) + "\n" for c in MINI_CONCEPTS), encoding="utf-8")
    return {"dump": dump, "index": index, "concepts": concepts, "folder": folder}


def cfg_for(paths: dict | None = None, **over):
    o = {"run.workers": 1}
    if paths is not None:
        o.update({"wikipedia.dump": str(paths["dump"]), "wikipedia.index": str(paths["index"])})
    o.update(over)
    return load_config(search_cwd=False, overrides=o)


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


# --- the bundled snapshot --------------------------------------------------------------------


@pytest.fixture(scope="module")
def snapshot_corpus(tmp_path_factory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("snapcorpus")
    result = build_documents(cfg_for(**{"run.workers": 2}), concepts_path=CONCEPTS, out_dir=out)
    return result, out


@pytest.mark.slow
def test_snapshot_corpus_counts_and_fields(snapshot_corpus):
    result, out = snapshot_corpus
    c = result["counts"]
    assert (c["documents"], c["resolved"], c["failures"], c["titles_wanted"], c["titles_missing"]) == (48, 5, 0, 6, 1)
    assert c["fill_rates"]["text"] == c["fill_rates"]["infobox"] == c["fill_rates"]["categories"] == 1.0
    assert "select=auto: both (the bundled snapshot)" in result["notes"]
    docs = list(read_jsonl(out / "corpus.jsonl", CorpusDocument))  # every line keeps the contract
    by_title = {doc.title: doc for doc in docs}
    quake = by_title["2004 Indian Ocean earthquake"]
    assert quake.document_concept.id == "Q130754" and quake.document_concept.resolved
    assert [(e.id, e.label) for e in quake.event_concepts] == [("Q7944", "earthquake"), ("Q8070", "tsunami")]
    assert quake.infobox.fields["magnitude"] == "9.1–9.3 Mw"
    assert quake.url == "https://en.wikipedia.org/wiki/2004_Indian_Ocean_earthquake"
    assert quake.selected_by == ["concepts", "infobox"]
    ww2 = by_title["World War II"]
    assert ww2.document_concept.id is None and ww2.document_concept.resolved is False  # never guessed
    assert ww2.event_concepts == [] and ww2.infobox.event_type == "ATTACK_EVENT"
    assert by_title["Charlie Hebdo shooting"].id == 1000000009  # the real title, not WEC's "Charlie Habdo"
    assert [doc.id for doc in docs] == sorted(doc.id for doc in docs)  # dump order
    for doc in docs:
        assert "[[" not in doc.text and "{{" not in doc.text and "<ref" not in doc.text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"] == c and manifest["failures"] == []
    assert manifest["missing_titles"] == ["2004 Sri Lanka tsunami-rail disaster"]
    assert manifest["inputs"]["dump"]["sha256"] and manifest["selection"]["read"] == "index"
    assert not (out / ".wikipedia-parts").exists()


@pytest.mark.slow
def test_rerun_is_up_to_date(snapshot_corpus):
    result, out = snapshot_corpus
    before = (out / "corpus.jsonl").stat().st_mtime_ns
    again = build_documents(cfg_for(**{"run.workers": 2}), concepts_path=CONCEPTS, out_dir=out)
    assert again["notes"][0].startswith("up to date:")
    assert again["counts"] == result["counts"]
    assert (out / "corpus.jsonl").stat().st_mtime_ns == before


# --- a small dump cut from the snapshot ------------------------------------------------------


def test_redirects_sitelinks_and_selection(mini, tmp_path):
    r = build_documents(cfg_for(mini, **{"wikipedia.select": "both"}), concepts_path=mini["concepts"], out_dir=tmp_path)
    docs = {x["title"]: x for x in lines(tmp_path / "corpus.jsonl")}
    assert list(docs) == ["Maltrata bus crash", "Azerbaijan Airlines Flight 217", "1995 Chiapas earthquake",
                          "An American in Paris", "1979 Machchhu dam failure", "Solar eclipse of May 9, 1967",
                          "West Coast Flight 720"]
    paris = docs["An American in Paris"]
    assert paris["redirects"] == ["AnAmericanInParis"] and paris["selected_by"] == ["concepts"]
    assert paris["document_concept"] == {"id": "Q900000001", "label": "invented: redirect sitelink",
                                         "labels": ["invented: redirect sitelink", "inv"], "resolved": True,
                                         "matched_by": "sitelink via redirect 'AnAmericanInParis'"}
    assert paris["event_concepts"] == [{"id": "Q8065", "label": "natural disaster"}]
    chiapas = docs["1995 Chiapas earthquake"]
    assert chiapas["document_concept"]["id"] == "Q900000002" and chiapas["selected_by"] == ["concepts", "infobox"]
    assert docs["Maltrata bus crash"]["document_concept"]["resolved"] is False
    assert "Aa River" not in docs  # no event infobox, not asked for
    c = r["counts"]
    assert (c["documents"], c["resolved"], c["redirects_followed"], c["titles_missing"]) == (7, 2, 1, 1)
    assert c["streams_read"] == 4 + 1  # all four streams, then the redirect target's again


def test_index_and_sequential_reads_and_worker_counts_agree(mini, tmp_path):
    outs = []
    for name, over in [("idx1", {}), ("idx2", {"run.workers": 2}), ("seq1", {"wikipedia.index": ""}),
                       ("seq2", {"wikipedia.index": "", "run.workers": 2})]:
        out = tmp_path / name
        r = build_documents(cfg_for(mini, **{"wikipedia.select": "both", **over}), concepts_path=mini["concepts"],
                            out_dir=out)
        outs.append((out / "corpus.jsonl").read_bytes())
        assert r["counts"]["documents"] == 7
    assert outs[0] == outs[1] == outs[2] == outs[3]
    manifest = json.loads((tmp_path / "seq1" / "manifest.json").read_text())
    assert manifest["selection"]["read"] == "sequential" and manifest["selection"]["passes"] == 2


def test_select_modes(mini, tmp_path):
    r = build_documents(cfg_for(mini, **{"wikipedia.select": "concepts"}), concepts_path=mini["concepts"],
                        out_dir=tmp_path / "c")
    assert [x["title"] for x in lines(tmp_path / "c" / "corpus.jsonl")] == ["1995 Chiapas earthquake",
                                                                             "An American in Paris"]
    assert r["counts"]["resolved"] == 2
    # auto on a dump that is not the bundled snapshot: concepts only
    r = build_documents(cfg_for(mini), concepts_path=mini["concepts"], out_dir=tmp_path / "a")
    assert r["counts"]["documents"] == 2 and "select=auto: concepts" in r["notes"][0]
    r = build_documents(cfg_for(mini, **{"wikipedia.select": "infobox"}), concepts_path=tmp_path / "none.jsonl",
                        out_dir=tmp_path / "i")
    docs = lines(tmp_path / "i" / "corpus.jsonl")
    assert len(docs) == 6 and all(x["document_concept"]["id"] is None for x in docs)
    assert any("every document is unresolved" in n for n in r["notes"])
    assert "no document matched a Wikidata concept by its sitelink title (0 enwiki titles in the concepts file, " \
           "none of them a page read here): document_concept.id is null and event_concepts empty throughout" \
           in r["notes"]


KILL_SCRIPT = """
import json, os, signal, sys
from pathlib import Path
from causalkg.core.config import load_config
import causalkg.corpus.wikipedia as w
original = w._Parts.write
written = []
def write(self, result):
    meta = original(self, result)
    written.append(result.key)
    if len(written) == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)
    return meta
w._Parts.write = write
cfg = load_config(search_cwd=False, overrides=json.loads(sys.argv[1]))
w.build_documents(cfg, concepts_path=Path(sys.argv[2]), out_dir=Path(sys.argv[3]))
"""


@pytest.mark.parametrize("index,kill_after", [(True, 3), (False, 1)], ids=["index", "sequential"])
def test_resume_after_kill_gives_identical_output(mini, tmp_path, index, kill_after):
    over = {"run.workers": 1, "wikipedia.select": "both", "wikipedia.dump": str(mini["dump"]),
            "wikipedia.index": str(mini["index"]) if index else ""}
    clean = tmp_path / "clean"
    build_documents(load_config(search_cwd=False, overrides=over), concepts_path=mini["concepts"], out_dir=clean)
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, json.dumps(over), str(mini["concepts"]), str(killed),
                           str(kill_after)], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr  # really killed (SIGKILL) after some checkpoints
    assert not (killed / "corpus.jsonl").exists()
    assert len(list((killed / ".wikipedia-parts").glob("*.jsonl"))) == kill_after
    r = build_documents(load_config(search_cwd=False, overrides=over), concepts_path=mini["concepts"], out_dir=killed)
    assert any(n.startswith(f"resumed: {kill_after} of") for n in r["notes"]), r["notes"]
    assert (killed / "corpus.jsonl").read_bytes() == (clean / "corpus.jsonl").read_bytes()


def test_bad_streams_are_counted_in_the_manifest(mini, tmp_path):
    dump = tmp_path / "damaged-multistream.xml.bz2"
    raw = bytearray(mini["dump"].read_bytes())
    offsets = d.scan_index(mini["index"], ()).offsets
    raw[offsets[1] + 100: offsets[1] + 164] = b"\xff" * 64
    dump.write_bytes(bytes(raw))
    paths = {"dump": dump, "index": mini["index"]}
    with pytest.raises(SourceError, match=f"lost documents: 1 damaged dump stream at byte {offsets[1]}; "
                                          r"1 page lost: .* is left as it is"):
        build_documents(cfg_for(paths, **{"wikipedia.select": "both"}), concepts_path=mini["concepts"],
                        out_dir=tmp_path / "out")
    assert not (tmp_path / "out" / "corpus.jsonl").exists()
    r = build_documents(cfg_for(paths, **{"wikipedia.select": "both"}), concepts_path=mini["concepts"],
                        out_dir=tmp_path / "out", lenient=True)
    c = r["counts"]
    # the stream (reported once, though the redirect target in it is asked for later), and that target
    assert c["failures_by_kind"] == {"missing": 1, "stream": 1}
    assert c["documents"] == 5  # the event pages of the other three streams
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    stream = next(f for f in manifest["failures"] if f["kind"] == "stream")
    assert stream["offset"] == offsets[1] and "corrupt bz2 data" in stream["message"]
    assert any("failures" in n and "stream: 1" in n for n in r["notes"])
    assert any(n.startswith(f"documents lost to a damaged dump (--lenient): 1 damaged dump stream at byte {offsets[1]}")
               for n in r["notes"])


def test_errors_and_dry_run(mini, tmp_path):
    with pytest.raises(SourceError, match="Wikipedia dump not found: .*nope.xml.bz2"):
        build_documents(cfg_for(**{"wikipedia.dump": str(tmp_path / "nope.xml.bz2")}), concepts_path=CONCEPTS,
                        out_dir=tmp_path)
    with pytest.raises(ConfigError, match="wikipedia.select must be one of concepts, infobox, both, auto"):
        build_documents(cfg_for(mini, **{"wikipedia.select": "all"}), concepts_path=CONCEPTS, out_dir=tmp_path)
    with pytest.raises(SourceError, match="no concepts file at .*missing.jsonl") as exc:
        build_documents(cfg_for(mini, **{"wikipedia.select": "concepts"}), concepts_path=tmp_path / "missing.jsonl",
                        out_dir=tmp_path)
    assert "causalkg corpus build --only wikidata" in str(exc.value)
    with pytest.raises(SourceError, match="dump index not found"):
        build_documents(cfg_for(mini, **{"wikipedia.index": str(tmp_path / "x-index.txt.bz2")}),
                        concepts_path=CONCEPTS, out_dir=tmp_path)
    plan = build_documents(cfg_for(mini), concepts_path=mini["concepts"], out_dir=tmp_path / "dry", dry_run=True)
    assert plan["plan"][1].startswith("select: concepts: 3 enwiki titles")
    assert not (tmp_path / "dry").exists()


def test_dump_given_without_its_index_does_not_use_the_bundled_one(mini, tmp_path):
    cfg = load_config(search_cwd=False, overrides={"wikipedia.dump": str(mini["dump"]), "run.workers": 1})
    r = build_documents(cfg, concepts_path=mini["concepts"], out_dir=tmp_path)
    assert any(f"using {mini['index']} found beside the dump" in n for n in r["notes"])


def test_event_infoboxes_follow_wec():
    boxes = EventInfoboxes.load(SNAP / "event_infoboxes.json")
    assert boxes.match("Infobox civilian attack", "Charlie Hebdo shooting") == "ATTACK_EVENT"
    assert boxes.match("Infobox Nuclear weapons test", "Sedan (nuclear test)") == "OTHERS"
    assert boxes.match("Infobox military conflict", "World War II") == "ATTACK_EVENT"
    assert boxes.match("Infobox award", "Grammy Award") is None  # awards need a year or ordinal in the title
    assert boxes.match("Infobox award", "2005 Grammy Awards") == "AWARD_EVENT"
    assert boxes.match("Infobox company", "Mobileye") is None  # include: false
    assert boxes.match("Infobox officeholder", "Werner von Blomberg") is None


def test_cli_corpus_build_wikipedia_only(cli, mini, tmp_path):
    wikidata = tmp_path / "data" / "wikidata"
    wikidata.mkdir(parents=True)
    (wikidata / "concepts.jsonl").write_bytes(mini["concepts"].read_bytes())
    args = ["corpus", "build", "--only", "wikipedia", "--dump", mini["dump"], "--index", mini["index"],
            "--select", "both", "--workers", "1"]
    res = cli(*args, "--dry-run", cwd=tmp_path)
    assert res.code == 0 and "dry run: nothing written" in res.out
    assert "wikipedia plan:\n" in res.out and "\n  select: both: 3 enwiki titles of instance concepts" in res.out
    assert "note: plan:" not in res.out
    assert not (tmp_path / "data" / "corpus").exists()
    res = cli(*args, cwd=tmp_path)
    assert res.code == 0, res.err
    assert "wikipedia:" in res.out and f"corpus: {tmp_path / 'data' / 'corpus' / 'corpus.jsonl'}" in res.out
    assert "  documents: 7" in res.out and "  resolved: 2" in res.out
    assert "  fill_rates: text 100%, first_section 100%," in res.out and "  failures_by_kind: none" in res.out
    assert len(lines(tmp_path / "data" / "corpus" / "corpus.jsonl")) == 7
    res = cli("corpus", "build", "--only", "wikipedia", "--dump", tmp_path / "missing.xml.bz2", cwd=tmp_path)
    assert res.code == 1
    assert res.err.startswith(f"error: Wikipedia dump not found: {tmp_path / 'missing.xml.bz2'} (download enwiki-")


def test_a_copy_of_the_bundled_snapshot_is_still_the_bundled_snapshot(tmp_path):
    # e.g. a fresh clone whose package is installed from another checkout: select=auto must
    # still pick the event articles by infobox, not only the (offline: absent) sitelinked titles
    for name in (DUMP.name, DUMP.name.replace(".xml.bz2", "-index.txt.bz2")):
        (tmp_path / name).write_bytes((SNAP / name).read_bytes())
    paths = {"dump": tmp_path / DUMP.name, "index": tmp_path / DUMP.name.replace(".xml.bz2", "-index.txt.bz2")}
    plan = build_documents(cfg_for(paths), concepts_path=CONCEPTS, out_dir=tmp_path / "out", dry_run=True)
    assert "select=auto: both (the bundled snapshot)" in plan["notes"]
    assert plan["plan"][1].startswith("select: both: 6 enwiki titles")


def test_an_empty_corpus_is_said_loudly(mini, tmp_path, caplog):
    concepts = tmp_path / "concepts.jsonl"
    concepts.write_text(json.dumps(MINI_CONCEPTS[2]) + "\n", encoding="utf-8")  # its title is not in the dump
    r = build_documents(cfg_for(mini, **{"wikipedia.select": "concepts"}), concepts_path=concepts,
                        out_dir=tmp_path / "out")
    assert r["counts"]["documents"] == 0 and (tmp_path / "out" / "corpus.jsonl").read_bytes() == b""
    assert "the corpus is empty: none of the 1 wanted titles is in the dump" in r["notes"]
    assert any(rec.getMessage().startswith("warning: the corpus is empty: none of the 1 wanted titles")
               for rec in caplog.records)
