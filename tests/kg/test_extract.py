"""The extraction stage end to end (kg.extract): inputs, shards, resume, skip, the QA extractor on
a tiny model trained here for a few steps, and the ``causalkg kg extract`` / ``train-qa`` CLI."""

from __future__ import annotations

import json
import shutil

import pytest

from causalkg.core.config import load_config
from causalkg.core.contracts import Extraction
from causalkg.core.errors import ConfigError, SchemaError
from causalkg.testing.tiny_models import tiny_qa_model
from causalkg.kg.extract import extract, side_paths
from causalkg.kg.extractors import create_extractor
from causalkg.kg.train_qa import train_qa

from tests.conftest import FIXTURES

FIX = FIXTURES / "extract"
WIKI = FIX / "wiki_docs.jsonl"
# These tests are about the stage's mechanics and the QA extractor: the cue gate needs no model
# (tests/kg/test_gate.py covers the learned gate).
CUE_GATE = {"extract.gate.kind": "cues"}


@pytest.fixture(scope="module")
def trained_tiny(tmp_path_factory):
    """A tiny BERT QA model trained for a few steps on the gold fixture sentences."""
    root = tmp_path_factory.mktemp("trained")
    base = tiny_qa_model(root / "base", seed=1)
    data = root / "data"
    data.mkdir()
    lines = (FIX / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (data / "train.jsonl").write_text("".join(lines[:18]), encoding="utf-8")
    (data / "val.jsonl").write_text("".join(lines[18:]), encoding="utf-8")
    cfg = load_config(search_cwd=False, overrides={
        "extract.qa.train.data": str(data), "extract.qa.train.steps": 6, "extract.qa.train.batch_size": 8,
        "extract.qa.train.eval_every": 3, "extract.qa.train.selection_questions": 20, "extract.device": "cpu",
        "extract.qa.train.learning_rate": 0.001})
    out = root / "causal-qa"
    train_qa(cfg, output=out, base_model=str(base))
    return out


@pytest.fixture(scope="module")
def small_wiki(tmp_path_factory):
    """The wiki fixture with the long article cut to its lead and first section: QA runs stay short."""
    docs = read(WIKI)
    long = docs[2]
    keep = [s for s in long["sections"] if s["heading"] in (None, "Tsunami")]
    end = min(keep[-1]["end"], 4000)
    long.update(text=long["text"][:end], sections=[{**s, "end": min(s["end"], end)} for s in keep])
    path = tmp_path_factory.mktemp("small") / "wiki_small.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


def qa_cfg(model, **over):
    overrides = {"extract.qa.model": str(model), "extract.device": "cpu", "extract.qa.null_threshold_from_model": False,
                 "extract.gate.kind": "cues",
                 "extract.qa.null_threshold": -1e9, "extract.qa.min_score": 0.0, "extract.shard_size": 2,
                 "extract.qa.max_causes": 1}  # one cause per sentence unless a test names more
    overrides.update(over)
    return load_config(search_cwd=False, overrides=overrides)


def read(path):
    return [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines()]


def docs_by_id():
    return {str(d["id"]): d for d in read(WIKI)}


def check_offsets(records):
    docs = docs_by_id()
    for r in records:
        Extraction.model_validate(r)
        text = docs[r["doc_id"]]["text"]
        for key in ("sentence", "cause", "effect"):
            assert text[r[key]["start"] : r[key]["end"]] == r[key]["text"], (key, r)
        s = r["sentence"]
        assert s["start"] <= r["cause"]["start"] and r["cause"]["end"] <= s["end"]
        assert s["start"] <= r["effect"]["start"] and r["effect"]["end"] <= s["end"]


def test_qa_extractor_end_to_end_on_a_trained_tiny_model(trained_tiny, small_wiki, tmp_path):
    cfg = qa_cfg(trained_tiny)
    out = tmp_path / "kg" / "extractions.jsonl"
    res = extract(cfg, extractor="qa", input=small_wiki, output=out)
    recs = read(out)
    assert res.extractions == len(recs) > 0 and res.documents == 3
    check_offsets(recs)
    assert {r["extractor"] for r in recs} == {"qa"}
    assert {r["model"] for r in recs} == {str(trained_tiny)}
    assert all(r["question"] for r in recs)
    # Anchored questions name a concept of the page, and that side of the pair is the mention.
    anchored = [r for r in recs if "anchor" in r]
    assert anchored
    for r in anchored:
        assert r["anchor"]["text"].lower() in r["question"].lower()
        assert r["anchor"] in (r["cause"], r["effect"])
    assert any(r["anchor"].get("qid") == "Q8070" for r in anchored)
    # Unanchored pairs carry the cause question and the effect question naming the cause.
    chained = [r for r in recs if "cause_question" in r]
    assert chained and all(r["cause_question"] == "What is the cause?" for r in chained)
    # Provenance from the corpus record rides along.
    assert {r["title"] for r in recs} <= {d["title"] for d in docs_by_id().values()}
    assert all(r["url"].startswith("https://en.wikipedia.org/wiki/") for r in recs)
    sections = {r["sentence"]["section"] for r in recs}
    assert "Tsunami" in sections
    man = json.loads(side_paths(out)[1].read_text())
    assert man["counts"]["extractions"] == len(recs) and man["counts"]["documents"] == 3
    assert man["models"]["extractor"]["model_sha256"]
    assert man["inputs"]["input"]["sha256"]
    assert man["extractor_stats"]["questions"] >= man["extractor_stats"]["unique_questions"] > 0


def test_qa_thresholds_are_honoured(trained_tiny, small_wiki, tmp_path):
    WIKI = small_wiki
    loose = extract(qa_cfg(trained_tiny), extractor="qa", input=WIKI, output=tmp_path / "a.jsonl")
    scores = sorted(r["score"] for r in read(tmp_path / "a.jsonl"))
    assert loose.extractions > 4
    cut = scores[len(scores) // 2]
    extract(qa_cfg(trained_tiny, **{"extract.qa.min_score": cut}), extractor="qa", input=WIKI,
            output=tmp_path / "b.jsonl")
    mid = read(tmp_path / "b.jsonl")
    # Anchored pairs score their answer; chained pairs the product of two answers (each >= cut).
    assert 0 < len(mid) < loose.extractions
    assert all(r["score"] >= cut - 1e-6 or "cause_question" in r for r in mid)
    none = extract(qa_cfg(trained_tiny, **{"extract.qa.min_score": 1.0}), extractor="qa", input=WIKI,
                   output=tmp_path / "c.jsonl")
    assert none.extractions == 0 and read(tmp_path / "c.jsonl") == []
    abstain = extract(qa_cfg(trained_tiny, **{"extract.qa.null_threshold": 1e9}), extractor="qa", input=WIKI,
                      output=tmp_path / "d.jsonl")
    assert abstain.extractions == 0


def test_qa_on_empty_very_long_and_non_english_documents(trained_tiny, tmp_path):
    # Invented edge cases around a real sentence of the wiki fixture: an empty and a blank
    # document, one "sentence" of 30,000 characters (cut at max_sentence_chars, then read in
    # windows), and texts in Chinese, Arabic and German with and without an English cue.
    real = "The earthquake triggered a tsunami that struck the coasts of the Indian Ocean."
    texts = [
        {"id": "empty", "text": ""},
        {"id": "blank", "text": " \n\n\t "},
        {"id": "long", "text": " and ".join([real[:-1]] * 380) + "."},
        {"id": "zh", "text": "2004年印度洋地震引发了海啸。海啸导致超过二十万人死亡。"},
        {"id": "ar", "text": "تسبب الزلزال في حدوث تسونامي أدى إلى مقتل الآلاف."},
        {"id": "de", "text": "Das Erdbeben verursachte einen Tsunami. " + real},
    ]
    src = tmp_path / "edge.jsonl"
    src.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    assert len(texts[2]["text"]) > 30_000
    res = extract(qa_cfg(trained_tiny, **{"extract.shard_size": 10}), extractor="qa", input=src,
                  output=tmp_path / "edge_out.jsonl")
    recs = read(tmp_path / "edge_out.jsonl")
    assert res.documents == 6 and res.counts["empty_documents"] == 2
    by_id = {t["id"]: t["text"] for t in texts}
    for r in recs:
        Extraction.model_validate(r)
        for key in ("sentence", "cause", "effect"):
            assert by_id[r["doc_id"]][r[key]["start"] : r[key]["end"]] == r[key]["text"]
        assert len(r["sentence"]["text"]) <= 2000
    assert {r["doc_id"] for r in recs} <= {"long", "zh", "ar", "de"}
    # The long sentence became pieces of at most max_sentence_chars, each longer than one
    # window of max_seq_length tokens: more features (windows) than questions.
    assert res.counts["sentences"] >= 2 + 15
    stats = json.loads(side_paths(tmp_path / "edge_out.jsonl")[1].read_text())["extractor_stats"]
    assert stats["features"] > stats["unique_questions"]


def _reversed_pairs(recs):
    """Anchored records whose reverse (cause and effect swapped, spans overlapping) is in the same sentence."""
    def ov(a, b):
        return a["start"] < b["end"] and b["start"] < a["end"]
    return [a for a in recs if "anchor" in a for b in recs if a is not b and a["doc_id"] == b["doc_id"]
            and a["sentence"]["start"] == b["sentence"]["start"] and ov(a["cause"], b["effect"]) and ov(a["effect"], b["cause"])]


def test_anchored_answers_need_a_causal_sentence_and_no_reverse(trained_tiny, small_wiki, tmp_path):
    # The tiny model answers every question (thresholds off), as a direction-blind model does:
    # "What caused X?" and "What did X cause?" get the same span. Without the unanchored cause
    # question, a sentence reads as causal only by its cue.
    base = {"extract.qa.question_cause": "", "extract.qa.drop_reversed_anchored": False}
    off = extract(qa_cfg(trained_tiny, **base, **{"extract.qa.anchored_needs_causal_sentence": False}),
                  extractor="qa", input=small_wiki, output=tmp_path / "off.jsonl")
    assert off.counts.get("dropped_not_causal", 0) == 0
    on = extract(qa_cfg(trained_tiny, **base), extractor="qa", input=small_wiki, output=tmp_path / "on.jsonl")
    loose, gated = read(tmp_path / "off.jsonl"), read(tmp_path / "on.jsonl")
    assert any("cue" not in r for r in loose)  # concept-mention sentences without a cue gave pairs
    assert gated and all("cue" in r for r in gated) and len(gated) < len(loose)
    assert on.counts["dropped_not_causal"] > 0
    # Reversed anchored pairs: present when the check is off, gone (and counted) when it is on.
    assert _reversed_pairs(gated)
    kept = extract(qa_cfg(trained_tiny, **{"extract.qa.question_cause": ""}), extractor="qa", input=small_wiki,
                   output=tmp_path / "rev.jsonl")
    rev = read(tmp_path / "rev.jsonl")
    assert rev and not _reversed_pairs(rev) and kept.counts["dropped_reversed"] >= len(_reversed_pairs(gated))
    check_offsets(rev)


def test_the_model_manifest_threshold_is_used_unless_turned_off(trained_tiny):
    from causalkg.kg.train_qa import recommended_null_threshold

    on = create_extractor("qa", qa_cfg(trained_tiny, **{"extract.qa.null_threshold_from_model": True}))
    assert on.null_threshold == recommended_null_threshold(trained_tiny)
    assert on.describe()["null_threshold_source"] == "model manifest"
    off = create_extractor("qa", qa_cfg(trained_tiny, **{"extract.qa.null_threshold": 1.5}))
    assert off.null_threshold == 1.5


def test_patterns_on_text_jsonl_and_corpus_jsonl(tmp_path):
    cfg = load_config(search_cwd=False, overrides=CUE_GATE)
    text_in = tmp_path / "texts.jsonl"
    # Invented edge cases: an empty document, a non-English one, an integer id.
    text_in.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"id": "t1", "text": "The drought led to a famine. Prices rose because of the war."},
        {"id": "t2", "text": ""},
        {"id": 7, "text": "Der Krieg führte zu einer Hungersnot. Το σεισμός προκάλεσε τσουνάμι."},
    ]) + "\n", encoding="utf-8")
    res = extract(cfg, extractor="patterns", input=text_in, output=tmp_path / "p.jsonl")
    recs = read(tmp_path / "p.jsonl")
    pairs = {(r["doc_id"], r["cause"]["text"], r["effect"]["text"]) for r in recs}
    assert pairs == {("t1", "The drought", "a famine"), ("t1", "the war", "Prices rose")}
    assert res.counts["empty_documents"] == 1 and res.documents == 3
    # The manifest names the extractor by its versioned registry name.
    assert json.loads(res.manifest_path.read_text())["settings"]["extractor"] == "patterns.v1"
    res2 = extract(cfg, extractor="patterns", input=WIKI, output=tmp_path / "w.jsonl")
    recs2 = read(tmp_path / "w.jsonl")
    check_offsets(recs2)
    assert res2.counts["candidates"] < res2.counts["sentences"]
    assert any("cue" in r for r in recs2)


def test_resume_after_an_interrupted_run_gives_the_same_output(trained_tiny, small_wiki, tmp_path):
    WIKI = small_wiki
    cfg = qa_cfg(trained_tiny, **{"extract.shard_size": 1})
    full = tmp_path / "full.jsonl"
    extract(cfg, extractor="qa", input=WIKI, output=full)
    ext = create_extractor("qa", cfg)
    calls = {"n": 0}
    real = ext.extract

    def dies_on_third_shard(docs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(docs)

    ext.extract = dies_on_third_shard
    part = tmp_path / "part.jsonl"
    with pytest.raises(KeyboardInterrupt):
        extract(cfg, extractor="qa", input=WIKI, output=part, extractor_obj=ext)
    assert not part.exists()  # the output is only written whole
    shards = side_paths(part)[0]
    assert sorted(p.name for p in shards.glob("*.done.json")) == ["00000.done.json", "00001.done.json"]
    res = extract(cfg, extractor="qa", input=WIKI, output=part)
    assert res.counts["shards_resumed"] == 2 and res.counts["shards"] == 3
    assert part.read_bytes() == full.read_bytes()


def test_worker_processes_give_the_one_process_bytes_and_resume(trained_tiny, small_wiki, tmp_path):
    # extract.workers: spawned processes, each loading the segmenter and the model once, shards
    # written in order by this process: the same output, counts and checkpoints as one process.
    one = extract(qa_cfg(trained_tiny, **{"extract.shard_size": 1}), extractor="qa", input=small_wiki,
                  output=tmp_path / "one.jsonl")
    cfg = qa_cfg(trained_tiny, **{"extract.shard_size": 1, "extract.workers": 2})
    out = tmp_path / "two.jsonl"
    two = extract(cfg, extractor="qa", input=small_wiki, output=out)
    assert one.extractions > 0 and out.read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert two.counts == one.counts
    man = json.loads(side_paths(out)[1].read_text())
    assert man["workers"] == 2 and man["engine"] == "local"
    assert man["models"]["extractor"]["model_sha256"]  # described by a worker
    # a run cut short: the last shard's checkpoint and the output gone; the rerun does that shard only
    shards = side_paths(out)[0]
    for p in shards.glob("00002*"):
        p.unlink()
    out.unlink()
    again = extract(cfg, extractor="qa", input=small_wiki, output=out)
    assert again.counts["shards_resumed"] == 2 and again.counts["shards"] == 3
    assert out.read_bytes() == (tmp_path / "one.jsonl").read_bytes()


@pytest.mark.parametrize("die", [False, True], ids=["raises", "dies"])
def test_a_failing_or_dying_worker_stops_the_run_and_the_rerun_resumes(tmp_path, die):
    from causalkg.core.errors import SourceError
    from causalkg.testing.flaky import FlakyFactory, InjectedFailure

    cfg = load_config(search_cwd=False, overrides={**CUE_GATE, "extract.shard_size": 1, "extract.workers": 2})
    one = tmp_path / "one.jsonl"
    extract(cfg.with_overrides({"extract.workers": 1}), extractor="patterns", input=WIKI, output=one)
    marker = tmp_path / "marker"
    marker.touch()
    out = tmp_path / "out.jsonl"
    last = str(read(WIKI)[-1]["id"])  # the last shard fails; the ones before it are finished
    with pytest.raises(SourceError if die else InjectedFailure) as err:
        extract(cfg, extractor="patterns", input=WIKI, output=out,
                extractor_factory=FlakyFactory(cfg, "patterns", str(marker), last, once=False, die=die))
    if die:
        assert "extraction worker process died on shard" in err.value.message and "extract.workers" in err.value.hint
    assert not out.exists() and (side_paths(out)[0] / "00000.done.json").is_file()
    marker.unlink()
    again = extract(cfg, extractor="patterns", input=WIKI, output=out)
    assert again.counts["shards_resumed"] >= 1 and out.read_bytes() == one.read_bytes()


def test_a_worker_process_that_cannot_load_its_model_fails_with_the_models_error(small_wiki, tmp_path):
    from causalkg.core.errors import ModelError

    cfg = qa_cfg(tmp_path / "no-such-model", **{"extract.shard_size": 1, "extract.workers": 2})
    with pytest.raises(ModelError, match="no-such-model") as err:
        extract(cfg, extractor="qa", input=small_wiki, output=tmp_path / "out.jsonl")
    assert err.value.hint  # the hint crossed the process boundary
    with pytest.raises(ConfigError, match="extract.workers"):
        extract(qa_cfg(tmp_path, **{"extract.workers": -1}), extractor="qa", input=small_wiki,
                output=tmp_path / "out.jsonl")


def test_unchanged_inputs_and_settings_skip_the_work(tmp_path):
    cfg = load_config(search_cwd=False, overrides=CUE_GATE)
    out = tmp_path / "x.jsonl"
    first = extract(cfg, extractor="patterns", input=WIKI, output=out)
    assert not first.skipped
    second = extract(cfg, extractor="patterns", input=WIKI, output=out)
    assert second.skipped and second.extractions == first.extractions
    # "patterns" and "patterns.v1" are one extractor: naming the version redoes nothing.
    assert extract(cfg, extractor="patterns.v1", input=WIKI, output=out).skipped
    changed = load_config(search_cwd=False, overrides={**CUE_GATE, "extract.candidates_only": False})
    third = extract(changed, extractor="patterns", input=WIKI, output=out)
    assert not third.skipped and third.counts["shards_resumed"] == 0
    out.write_text("tampered\n")
    assert not extract(changed, extractor="patterns", input=WIKI, output=out).skipped


def test_bad_input_lines_fail_with_path_and_line_or_are_skipped_when_lenient(tmp_path):
    cfg = load_config(search_cwd=False, overrides=CUE_GATE)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "The storm caused floods."}\n{"id": "b"}\nnot json\n', encoding="utf-8")
    with pytest.raises(SchemaError, match=r"bad.jsonl:2: text: Field required"):
        extract(cfg, extractor="patterns", input=bad, output=tmp_path / "o.jsonl")
    res = extract(cfg, extractor="patterns", input=bad, output=tmp_path / "o.jsonl", lenient=True)
    assert res.documents == 1 and res.counts["invalid_lines_skipped"] == 2 and res.extractions == 1
    with pytest.raises(ConfigError, match="input not found"):
        extract(cfg, extractor="patterns", input=tmp_path / "none.jsonl", output=tmp_path / "o.jsonl")
    with pytest.raises(ConfigError, match="unknown extractor 'regex'"):
        extract(cfg, extractor="regex", input=WIKI, output=tmp_path / "o.jsonl")


# --- the CLI ----------------------------------------------------------------------------------


def test_cli_extract_patterns_and_dry_run(cli, in_tmp):
    shutil.copy(WIKI, in_tmp / "docs.jsonl")
    r = cli("kg", "extract", "--extractor", "patterns", "--input", "docs.jsonl", "--out", "out/ex.jsonl",
            "--set", "extract.gate.kind=cues")
    assert r.code == 0, r.err
    assert "extractions from 3 documents to out/ex.jsonl" in r.out
    assert "candidate sentences:" in r.out and "manifest: out/ex.manifest.json" in r.out
    assert (in_tmp / "out" / "ex.jsonl").is_file()
    again = cli("kg", "extract", "--extractor", "patterns", "--input", "docs.jsonl", "--output", "out/ex.jsonl",
                "--set", "extract.gate.kind=cues")
    assert again.code == 0 and "is up to date" in again.out  # --output: the old name of --out
    assert again.err.splitlines()[0] == "warning: --output is deprecated; use --out"
    dry = cli("kg", "extract", "--extractor", "patterns", "--input", "docs.jsonl", "--dry-run")
    plan = json.loads(dry.out)
    assert dry.code == 0 and plan["documents"] == 3 and plan["output"].endswith("data/kg/extractions.jsonl")


def test_cli_extract_errors(cli, in_tmp):
    r = cli("kg", "extract", "--extractor", "patterns")
    assert r.code == 2
    assert r.err.strip().startswith("error: input not found:") and "causalkg corpus build" in r.err
    (in_tmp / "t.jsonl").write_text('{"id": 1, "text": "x"}\n')
    r = cli("kg", "extract", "--input", "t.jsonl")  # the default extractor is qa; no model trained here
    assert r.code == 1 and "error: QA model 'models/causal-qa' not found" in r.err
    assert "causalkg kg train-qa" in r.err
    r = cli("kg", "extract", "--input", "t.jsonl", "--extractor", "patterns")  # the learned gate: no model here
    assert r.code == 1 and "error: no trained sentence gate" in r.err and "causalkg kg train-gate" in r.err
    r = cli("kg", "extract", "--input", "t.jsonl", "--extractor", "nope")
    assert r.code == 2 and "error: unknown extractor 'nope'" in r.err and "patterns" in r.err


def test_cli_extract_qa_with_a_model_flag(cli, in_tmp, trained_tiny):
    shutil.copy(WIKI, in_tmp / "docs.jsonl")
    r = cli("kg", "extract", "--extractor", f"qa:{trained_tiny}", "--input", "docs.jsonl", "--limit", "1",
            "--set", "extract.qa.null_threshold_from_model=false", "--set", "extract.qa.null_threshold=-1000.0",
            "--set", "extract.qa.min_score=0.0", "--set", "extract.gate.kind=cues")
    assert r.code == 0, r.err
    recs = read(in_tmp / "data" / "kg" / "extractions.jsonl")
    assert recs and {x["doc_id"] for x in recs} == {"1"} and {x["model"] for x in recs} == {str(trained_tiny)}


def test_cli_train_qa(cli, in_tmp, trained_tiny):
    r = cli("kg", "train-qa", "--dry-run")  # snapshots/ is not in this working directory
    assert r.code == 2
    assert r.err.startswith("error: QA training data not found") and "extract.qa.train.data" in r.err
    data = in_tmp / "d"
    data.mkdir()
    lines = (FIX / "gold_sentences.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (data / "train.jsonl").write_text("".join(lines[:18]), encoding="utf-8")
    (data / "val.jsonl").write_text("".join(lines[18:]), encoding="utf-8")
    base = str(trained_tiny)
    r = cli("kg", "train-qa", "--data", "d", "--base-model", base, "--steps", "2", "--batch-size", "4",
            "--device", "cpu", "--set", "extract.qa.train.eval_every=1", "--set", "extract.qa.train.selection_questions=8")
    assert r.code == 0, r.err
    assert "trained 2 steps" in r.out and "models/causal-qa" in r.out and "validation (" in r.out
    r = cli("kg", "train-qa", "--data", "d", "--base-model", base, "--steps", "2", "--batch-size", "4",
            "--device", "cpu", "--if-missing", "--set", "extract.qa.train.eval_every=1",
            "--set", "extract.qa.train.selection_questions=8")
    assert r.code == 0 and r.out.startswith("nothing to do:") and "is current" in r.out
    r = cli("kg", "train-qa", "--data", "d", "--steps", "0")
    assert r.code == 2 and "error: train-qa needs steps >= 1" in r.err


def test_max_causes_asks_about_more_than_one_cause_per_sentence(trained_tiny, small_wiki, tmp_path):
    one = extract(qa_cfg(trained_tiny, **{"extract.qa.max_causes": 1}), extractor="qa", input=small_wiki,
                  output=tmp_path / "one.jsonl")
    two = extract(qa_cfg(trained_tiny, **{"extract.qa.max_causes": 2, "extract.qa.max_effects": 2}), extractor="qa",
                  input=small_wiki, output=tmp_path / "two.jsonl")
    a, b = read(tmp_path / "one.jsonl"), read(tmp_path / "two.jsonl")
    check_offsets(b)
    key = lambda r: (r["doc_id"], r["cause"]["start"], r["cause"]["end"], r["effect"]["start"], r["effect"]["end"])  # noqa: E731
    # every chained pair of one cause is still found (anchored pairs may go: a new chained pair can
    # be the reverse of one, see drop_reversed_anchored)
    assert {key(r) for r in a if "cause_question" in r} <= {key(r) for r in b if "cause_question" in r}
    assert two.extractions > one.extractions
    # some sentence now yields chained pairs with two different causes
    causes: dict = {}
    for r in b:
        if "cause_question" in r:
            causes.setdefault((r["doc_id"], r["sentence"]["start"]), set()).add((r["cause"]["start"], r["cause"]["end"]))
    assert any(len(c) > 1 for c in causes.values())
