"""Offline WordNet for NLTK, so that METEOR works with no network.

METEOR (``nltk.translate.meteor_score``) matches synonyms through WordNet, and NLTK's own
downloader needs the internet. Debian's ``wordnet-base`` package ships WordNet 3.0 in
``/usr/share/wordnet`` (the ``index.*``, ``data.*`` and ``*.exc`` files NLTK reads), but not the
``lexnames`` file NLTK also opens; that file is a fixed 45-line table (WordNet's ``lexnames(5WN)``
manual page), written here from ``LEXNAMES``.

``setup_wordnet`` copies the files (NLTK 3.9+ refuses symlinked and hard-linked corpus files) plus the generated ``lexnames`` and
``index.sense`` into ``<folder>/corpora/wordnet/``, by default ``<venv>/nltk_data``, a folder NLTK
searches, so ``nltk.corpus.wordnet`` works too. ``load_wordnet`` opens it without touching NLTK's global state; METEOR callers get a
``ModelError`` naming ``causalkg eval setup-wordnet`` when it is missing. Part of the evaluation
stage (soft edge measures).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from causalkg.core.errors import ConfigError, ModelError

# WordNet 3.0's lexicographer files: (number, name, syntactic category 1=noun 2=verb 3=adj 4=adv),
# from the table in lexnames(5WN).
LEXNAMES: tuple[tuple[int, str, int], ...] = (
    (0, "adj.all", 3), (1, "adj.pert", 3), (2, "adv.all", 4), (3, "noun.Tops", 1),
    (4, "noun.act", 1), (5, "noun.animal", 1), (6, "noun.artifact", 1), (7, "noun.attribute", 1),
    (8, "noun.body", 1), (9, "noun.cognition", 1), (10, "noun.communication", 1),
    (11, "noun.event", 1), (12, "noun.feeling", 1), (13, "noun.food", 1), (14, "noun.group", 1),
    (15, "noun.location", 1), (16, "noun.motive", 1), (17, "noun.object", 1),
    (18, "noun.person", 1), (19, "noun.phenomenon", 1), (20, "noun.plant", 1),
    (21, "noun.possession", 1), (22, "noun.process", 1), (23, "noun.quantity", 1),
    (24, "noun.relation", 1), (25, "noun.shape", 1), (26, "noun.state", 1),
    (27, "noun.substance", 1), (28, "noun.time", 1), (29, "verb.body", 2), (30, "verb.change", 2),
    (31, "verb.cognition", 2), (32, "verb.communication", 2), (33, "verb.competition", 2),
    (34, "verb.consumption", 2), (35, "verb.contact", 2), (36, "verb.creation", 2),
    (37, "verb.emotion", 2), (38, "verb.motion", 2), (39, "verb.perception", 2),
    (40, "verb.possession", 2), (41, "verb.social", 2), (42, "verb.stative", 2),
    (43, "verb.weather", 2), (44, "adj.ppl", 3),
)

# The database files NLTK's WordNetCorpusReader reads; ``lexnames`` and ``index.sense`` are
# generated (Debian ships the latter in a separate package).
REQUIRED_FILES = (
    "index.adj", "index.adv", "index.noun", "index.verb",
    "data.adj", "data.adv", "data.noun", "data.verb",
    "adj.exc", "adv.exc", "noun.exc", "verb.exc",
)
OPTIONAL_FILES = ("cntlist.rev", "LICENSE")
SETUP_HINT = "run `causalkg eval setup-wordnet` (Debian/Ubuntu: apt-get install wordnet-base first)"


def lexnames_text() -> str:
    """The ``lexnames`` file: one ``NN<TAB>name<TAB>category`` line per lexicographer file."""
    return "".join(f"{num:02d}\t{name}\t{cat}\n" for num, name, cat in LEXNAMES)


def default_target() -> Path:
    """``<sys.prefix>/nltk_data``: inside the virtualenv, and on NLTK's search path."""
    return Path(sys.prefix) / "nltk_data"


@dataclass
class WordNetSetup:
    """What ``setup_wordnet`` did: the corpus folder and the files it linked, copied or wrote."""

    corpus_dir: Path
    source: Path
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


_SS_TYPES = {"n": 1, "v": 2, "a": 3, "r": 4, "s": 5}
_POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


def _sense_lemma(word: str) -> str:
    # Adjectives carry syntactic markers in the data files ("galore(ip)"); keys do not.
    return _ADJ_MARKER.sub("", word).lower()


def index_sense_lines(source: str | os.PathLike) -> list[str]:
    """The lines of WordNet's ``index.sense`` (sorted), computed from the ``data.*`` files.

    Debian's ``wordnet-base`` leaves this file to another package; NLTK opens it when it loads
    WordNet. Each line is ``sense_key synset_offset sense_number tag_cnt`` as in senseidx(5WN):
    the key is ``lemma%ss_type:lex_filenum:lex_id:head_word:head_id``, where head_word/head_id
    name the first word of an adjective satellite's head synset; the sense number is the
    synset's rank in ``index.<pos>``; tag counts come from ``cntlist.rev`` (0 when absent).
    """
    src = Path(source)
    synsets: dict[tuple[str, str], tuple[str, str, list[tuple[str, int]], str | None]] = {}
    for pos, name in _POS_FILES.items():
        with open(src / f"data.{name}", encoding="latin-1") as fh:
            for line in fh:
                if line.startswith("  "):  # the licence header
                    continue
                parts = line.split(" | ", 1)[0].split()
                offset, lex_filenum, ss_type = parts[0], parts[1], parts[2]
                n_words = int(parts[3], 16)
                words = [(parts[4 + 2 * i], int(parts[5 + 2 * i], 16)) for i in range(n_words)]
                i = 4 + 2 * n_words
                head = None
                for _ in range(int(parts[i])):
                    symbol, target = parts[i + 1], parts[i + 2]
                    if symbol == "&" and ss_type == "s" and head is None:
                        head = target
                    i += 4
                synsets[(pos, offset)] = (ss_type, lex_filenum, words, head)
    sense_numbers: dict[tuple[str, str, str], int] = {}
    for pos, name in _POS_FILES.items():
        with open(src / f"index.{name}", encoding="latin-1") as fh:
            for line in fh:
                if line.startswith("  "):
                    continue
                parts = line.split()
                lemma, synset_cnt = parts[0], int(parts[2])
                offsets = parts[-synset_cnt:]
                for rank, off in enumerate(offsets, 1):
                    sense_numbers[(pos, lemma, off)] = rank
    tag_counts: dict[str, int] = {}
    cntlist = src / "cntlist.rev"
    if cntlist.is_file():
        with open(cntlist, encoding="latin-1") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) == 3:
                    tag_counts[parts[0]] = int(parts[2])
    lines = []
    for (pos, offset), (ss_type, lex_filenum, words, head) in synsets.items():
        head_word = head_id = ""
        if ss_type == "s" and head is not None and ("a", head) in synsets:
            head_word_raw, head_lex_id = synsets[("a", head)][2][0]
            head_word, head_id = _sense_lemma(head_word_raw), f"{head_lex_id:02d}"
        for word, lex_id in words:
            lemma = _sense_lemma(word)
            key = f"{lemma}%{_SS_TYPES[ss_type]}:{lex_filenum}:{lex_id:02d}:{head_word}:{head_id}"
            number = sense_numbers.get((pos, lemma, offset), 0)
            lines.append(f"{key} {offset} {number} {tag_counts.get(key, 0)}\n")
    lines.sort()
    return lines


def setup_wordnet(
    source: str | os.PathLike = "/usr/share/wordnet",
    target: str | os.PathLike | None = None,
    *,
    force: bool = False,
) -> WordNetSetup:
    """Install WordNet 3.0 for NLTK into ``target/corpora/wordnet`` from a WordNet ``dict`` folder.

    ``source``: the folder holding ``index.noun``, ``data.noun``, ... (Debian: /usr/share/wordnet).
    ``target``: an NLTK data folder (default ``<venv>/nltk_data``). The database files are
    copied (about 28 MB): NLTK 3.9+ refuses to open a corpus file that is a symlink leaving the
    data folder or a hard link (st_nlink > 1), so links do not work. ``lexnames`` and
    ``index.sense`` are generated. ``force`` replaces files already there (else
    they are kept). Raises ConfigError when the source lacks a required file, naming it.
    """
    src = Path(source).expanduser()
    missing = [f for f in REQUIRED_FILES if not (src / f).is_file()]
    if missing:
        raise ConfigError(
            f"{src}: not a WordNet 3.0 database folder (missing {', '.join(missing)})",
            hint="install Debian's wordnet-base (apt-get install wordnet-base) or pass --source DIR",
        )
    corpus_dir = (Path(target).expanduser() if target is not None else default_target()) / "corpora" / "wordnet"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    done = WordNetSetup(corpus_dir=corpus_dir, source=src)
    for name in REQUIRED_FILES + OPTIONAL_FILES:
        origin = src / name
        if not origin.is_file():
            continue
        dest = corpus_dir / name
        if dest.exists() or dest.is_symlink():
            if not force:
                done.skipped.append(name)
                continue
            dest.unlink()
        tmp = corpus_dir / f".{name}.tmp"
        shutil.copyfile(origin, tmp)
        os.replace(tmp, dest)
        done.files.append(name)
    generated = {"lexnames": lambda: lexnames_text(), "index.sense": lambda: "".join(index_sense_lines(src))}
    for name, make in generated.items():
        dest = corpus_dir / name
        if dest.exists() and not force:
            done.skipped.append(name)
            continue
        tmp = corpus_dir / f".{name}.tmp"
        tmp.write_text(make(), encoding="utf-8")
        os.replace(tmp, dest)
        done.files.append(name)
    _open_reader.cache_clear()
    return done


def find_wordnet(wordnet_dir: str | os.PathLike | None = None) -> Path | None:
    """The WordNet corpus folder to use, or None.

    ``wordnet_dir`` may be the corpus folder itself (holding ``lexnames``) or an NLTK data folder
    (holding ``corpora/wordnet``). Without it, NLTK's search path (``nltk.data.path``, which
    includes ``<venv>/nltk_data`` and ``$NLTK_DATA``) is searched.
    """
    candidates: list[Path] = []
    if wordnet_dir:
        base = Path(wordnet_dir).expanduser()
        candidates += [base, base / "corpora" / "wordnet"]
    else:
        import nltk.data

        candidates += [Path(p) / "corpora" / "wordnet" for p in nltk.data.path]
    for c in candidates:
        if (c / "lexnames").is_file() and all((c / f).exists() for f in REQUIRED_FILES):
            return c
    return None


def _authorise(data_root: Path) -> None:
    """Let NLTK open files under ``data_root``: NLTK 3.9+ only reads corpora inside a folder on
    ``nltk.data.path``, so a folder named explicitly is added there (NLTK's documented way)."""
    import nltk.data

    resolved = data_root.resolve()
    if not any(Path(str(p)).expanduser().resolve() == resolved for p in nltk.data.path if isinstance(p, (str, os.PathLike))):
        nltk.data.path.append(str(resolved))


@functools.lru_cache(maxsize=4)
def _open_reader(path: str):
    import warnings

    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _WordNet30Reader(WordNetCorpusReader):
        # The installed database *is* WordNet 3.0, so NLTK's 3.0-to-loaded-version synset map is
        # the identity; skipping it saves reading two copies of index.sense on every load.
        def map_wn(self, version="wordnet"):
            return None

    _authorise(Path(path).parent.parent)
    with warnings.catch_warnings():
        # "multilingual functions are not available": no Open Multilingual Wordnet is loaded.
        warnings.simplefilter("ignore")
        return _WordNet30Reader(path, None)


def load_wordnet(wordnet_dir: str | os.PathLike | None = None):
    """An NLTK ``WordNetCorpusReader`` over the installed WordNet (cached per folder).

    ``wordnet_dir``: the corpus folder or an NLTK data folder (see ``find_wordnet``); None
    searches NLTK's data path. Raises ModelError, naming the set-up command, when none is found.
    """
    found = find_wordnet(wordnet_dir)
    if found is None:
        where = f" in {wordnet_dir}" if wordnet_dir else " on NLTK's data path"
        raise ModelError(f"METEOR needs WordNet, and none was found{where}", hint=SETUP_HINT)
    try:
        return _open_reader(str(found.resolve()))
    except (OSError, AssertionError, ValueError, PermissionError) as exc:
        raise ModelError(f"{found}: WordNet files are unreadable: {exc}", hint=SETUP_HINT) from exc
