"""Offline WordNet for METEOR: installed into a temporary NLTK data folder from Debian's
wordnet-base, used without the network and without depending on a global installation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from causalkg.core.errors import ConfigError, ModelError
from causalkg.evaluation.graph.wordnet import LEXNAMES, find_wordnet, lexnames_text, load_wordnet, setup_wordnet

SOURCE = Path("/usr/share/wordnet")  # Debian's wordnet-base (scripts/install_system_deps.sh)


@pytest.fixture(scope="module")
def wordnet_dir(tmp_path_factory):
    import nltk.data

    saved = list(nltk.data.path)
    target = tmp_path_factory.mktemp("nltk_data")
    done = setup_wordnet(SOURCE, target)
    yield done.corpus_dir
    nltk.data.path[:] = saved  # load_wordnet authorises the folder it opens; undo that
    from causalkg.evaluation.graph import wordnet

    wordnet._open_reader.cache_clear()


def test_lexnames_table():
    text = lexnames_text()
    lines = text.splitlines()
    assert len(lines) == 45 == len(LEXNAMES)
    assert lines[0] == "00\tadj.all\t3" and lines[3] == "03\tnoun.Tops\t1" and lines[44] == "44\tadj.ppl\t3"


@pytest.mark.slow
def test_setup_installs_a_readable_wordnet(wordnet_dir):
    assert find_wordnet(wordnet_dir) == wordnet_dir
    assert find_wordnet(wordnet_dir.parent.parent) == wordnet_dir  # the NLTK data folder works too
    # Copies, not links: NLTK refuses symlinks out of its data folder and hard links.
    data = wordnet_dir / "data.noun"
    assert not data.is_symlink() and data.stat().st_nlink == 1
    wn = load_wordnet(wordnet_dir)
    assert wn.get_version() == "3.0"
    assert "dog.n.01" in [s.name() for s in wn.synsets("dog")]
    # The generated index.sense: sense keys resolve, including an adjective satellite's.
    assert wn.lemma_from_key("dog%1:05:00::").synset().name() == "dog.n.01"
    assert wn.lemma_from_key("abandoned%5:00:00:uninhabited:00").name() == "abandoned"
    lines = (wordnet_dir / "index.sense").read_text().splitlines()
    assert lines == sorted(lines) and len(lines) > 200_000


def test_meteor_offline_ours_and_the_studys(wordnet_dir):
    from causalkg.evaluation.graph.similarity import get_similarity

    ours = get_similarity("meteor", wordnet_dir=wordnet_dir)
    # "turbines" stems to "turbin" = "turbine": 1 match, P = 1, R = 1/2,
    # Fmean = 10PR/(R + 9P) = 5/9.5, penalty 0.5 (1 chunk / 1 match)^3 = 0.5: 0.263158.
    assert ours.score("turbines", "turbine structures") == pytest.approx(0.5 / 0.95 * 0.5)
    # Synonyms through WordNet: "car" has the lemma "auto": Fmean 1, penalty 0.5. (NLTK looks up
    # synonyms of the candidate word against the *stemmed* reference, so car ~ automobile
    # ("automobil") does not match.)
    assert ours.score("car", "auto") == pytest.approx(0.5)
    assert ours.score("fear", "dread") == pytest.approx(0.5)
    assert ours.score("car", "bread") == 0.0
    study = get_similarity("ref-meteor", wordnet_dir=wordnet_dir)
    # The study's call scores each reference word on its own: "turbines" vs ["turbine"] alone.
    assert study.score("turbines", "turbine structures") == pytest.approx(0.5)
    assert study.score("", "x") == 0.0


def test_soft_measure_with_meteor(wordnet_dir, cli, tmp_path):
    gold, pred = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    gold.write_text(json.dumps({"id": "1", "edges": [{"src": "dread of crime", "tgt": "air pollution", "direction": "+"}]}) + "\n")
    pred.write_text(json.dumps({"id": "1", "edges": [{"src": "fear of crime", "tgt": "air pollution", "direction": "+"}]}) + "\n")
    r = cli("eval", "soft", gold, pred, "--measure", "meteor=0.5", "--no-write", "--format", "csv",
            "--set", f"eval.soft.wordnet_dir={wordnet_dir}")
    assert r.code == 0, r.err
    row = r.out.splitlines()[1].split(",")
    assert row[:8] == ["meteor", "0.5000", "ours", "1", "1", "0", "0", "0"]


def test_meteor_without_wordnet_names_the_setup_command(tmp_path, cli):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError) as exc:
        load_wordnet(empty)
    assert str(exc.value) == (f"METEOR needs WordNet, and none was found in {empty} "
                              "(run `causalkg eval setup-wordnet` (Debian/Ubuntu: apt-get install wordnet-base first))")
    g = tmp_path / "g.jsonl"
    g.write_text('{"id": "1", "edges": [{"src": "a", "tgt": "b"}]}\n')
    r = cli("eval", "soft", g, g, "--measure", "meteor", "--no-write", "--set", f"eval.soft.wordnet_dir={empty}")
    assert r.code == 1
    assert r.err.strip().startswith("error: METEOR needs WordNet") and "causalkg eval setup-wordnet" in r.err


@pytest.mark.slow
def test_setup_wordnet_command(cli, tmp_path):
    r = cli("eval", "setup-wordnet", "--target", tmp_path / "nd")
    assert r.code == 0, r.err
    assert r.out.strip() == f"WordNet 3.0 for NLTK in {tmp_path / 'nd' / 'corpora' / 'wordnet'}: 15 files written"
    r = cli("eval", "setup-wordnet", "--target", tmp_path / "nd")
    assert "0 files written, 15 already there (--force replaces them)" in r.out
    r = cli("eval", "setup-wordnet", "--source", tmp_path, "--target", tmp_path / "x")
    assert r.code == 2
    assert r.err.startswith(f"error: {tmp_path}: not a WordNet 3.0 database folder (missing index.adj,")


def test_setup_rejects_a_folder_without_wordnet(tmp_path):
    with pytest.raises(ConfigError, match="not a WordNet 3.0 database folder"):
        setup_wordnet(tmp_path, tmp_path / "t")
