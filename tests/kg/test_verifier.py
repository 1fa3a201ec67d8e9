"""The learned pair verifier (kg.verifier): marking the spans, the decision and its threshold,
training on a few dozen pairs of the shipped verifier data with a tiny encoder, ONNX Runtime
against PyTorch, and its verdicts on the mentions of linking and assembly (not causal dropped,
reversed flipped or dropped, the verdict kept in the edge's provenance)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import causalkg as ck

from causalkg.core.config import load_config
from causalkg.core.contracts import Candidate, Extraction, KGEdge
from causalkg.core.errors import ConfigError, ModelError, SchemaError
from causalkg.core.jsonl import read_jsonl
from causalkg.kg.mentions import LinkCounts, link_pairs, verify_extractions
from causalkg.kg.verifier import (HEAD, LABELS, PairVerifier, decide, evaluate, mark_pair, mark_pair_at,
                                  train_verifier, tune_threshold)

REPO = Path(__file__).resolve().parents[2]
SNAP = REPO / "snapshots" / "verifier-training"
FIX = REPO / "tests" / "fixtures" / "kg"


def test_mark_pair_marks_both_spans_and_cuts_around_them():
    t = "Heavy rain caused floods in the valley."
    assert mark_pair(t, (0, 10), (18, 24)) == "<< Heavy rain >> caused [[ floods ]] in the valley."
    # the same spans the other way round are marked the other way round
    assert mark_pair(t, (18, 24), (0, 10)) == "[[ Heavy rain ]] caused << floods >> in the valley."
    # a span inside the other
    assert mark_pair(t, (0, 38), (18, 24)) == "<< Heavy rain caused [[ floods ]] in the valley >> ."
    long = "a " * 300 + t + " b" * 300
    out = mark_pair(long, (600, 610), (618, 624), context=20)
    assert out.startswith("a a") and "<< Heavy rain >> caused [[ floods ]]" in out and out.endswith("b b")
    assert len(out) < 120  # cut at word boundaries about 20 characters around the spans


def test_mark_pair_at_gives_the_offsets_of_the_opening_marks():
    t = "Heavy  rain caused floods in the valley."
    for cause, effect in (((0, 11), (19, 25)), ((19, 25), (0, 11)), ((0, 39), (19, 25))):
        out, (c, e) = mark_pair_at(t, cause, effect)
        assert out == mark_pair(t, cause, effect)
        assert out[c:c + 2] == "<<" and out[e:e + 2] == "[["
    # marks already in the sentence do not mislead the offsets
    out, (c, e) = mark_pair_at("a << b [[ c", (5, 6), (10, 11))
    assert out == "a << << b >> [[ [[ c ]]" and (c, e) == (5, 16)


def test_decide_and_the_threshold_chosen_by_macro_f1():
    probs = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.4, 0.1, 0.5], [0.3, 0.1, 0.6], [0.35, 0.3, 0.35]])
    assert decide(probs, 0.5).tolist() == [0, 1, 2, 2, 0]
    assert decide(probs, 0.3).tolist() == [0, 1, 2, 2, 2]
    gold = np.array([0, 1, 0, 2, 0])
    m = evaluate(decide(probs, 0.55), gold)
    assert m["accuracy"] == 1.0 and m["macro_f1"] == 1.0 and m["confusion"][2] == [0, 0, 1]
    t, tried = tune_threshold(probs, gold, grid=[0.3, 0.55, 0.9])
    assert t == 0.55 and [r["threshold"] for r in tried] == [0.3, 0.55, 0.9]
    worse = evaluate(decide(probs, 0.3), gold)
    assert worse["per_class"]["causal"]["recall"] == pytest.approx(1 / 3, abs=1e-4)


def _slice(path: Path, per_label: int) -> str:
    """The first ``per_label`` pairs of each label of a verifier-training file (real pairs)."""
    seen: dict[str, int] = {}
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        lab = json.loads(line)["label"]
        if seen.get(lab, 0) < per_label:
            seen[lab] = seen.get(lab, 0) + 1
            out.append(line + "\n")
    return "".join(out)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A verifier fine-tuned from a tiny 2-layer encoder on 36 real training pairs (4 steps)."""
    from causalkg.testing.tiny_models import tiny_sentence_encoder

    root = tmp_path_factory.mktemp("verifier")
    data = root / "data"
    data.mkdir()
    (data / "train.jsonl").write_text(_slice(SNAP / "train.jsonl", 12), encoding="utf-8")
    (data / "val.jsonl").write_text(_slice(SNAP / "val.jsonl", 6), encoding="utf-8")
    base = tiny_sentence_encoder(root / "tiny")
    cfg = load_config(search_cwd=False, overrides={
        "kg.verifier.train_data": str(data), "kg.verifier.encoder": str(base), "kg.verifier.device": "cpu",
        "kg.verifier.train_steps": 4, "kg.verifier.train_batch_size": 8, "paths.cache": str(root / "cache"),
        "kg.verifier.model": str(root / "causal-verifier")})
    res = ck.train_verifier(cfg=cfg)  # the Python API: the worker, and its result
    assert not res.skipped
    return root / "causal-verifier", cfg, res


def test_training_writes_the_model_and_a_threshold_tuned_on_validation(trained):
    folder, cfg, res = trained
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["stage"] == "kg.train-verifier" and manifest["training"]["dtype"] == "float32"
    assert manifest["counts"]["train_pairs"] == 36 and manifest["counts"]["val_pairs"] == 18
    assert manifest["recommended"]["threshold"] == res.validation["threshold"]
    at = res.validation["at_threshold"]
    assert at["pairs"] == 18 and set(at["per_class"]) == set(LABELS)
    # the best macro F1 of the grid was kept
    assert at["macro_f1"] == max(r["macro_f1"] for r in res.validation["tried"])
    with np.load(folder / HEAD) as z:
        assert z["w"].shape == (3, 64) and z["b"].shape == (3,)  # the cause and effect marks' vectors
    again = train_verifier(cfg, if_missing=True)
    assert again.skipped and "current" in again.reason


def test_training_is_seeded(trained, tmp_path):
    folder, cfg, _ = trained
    train_verifier(cfg, output=tmp_path / "again")
    with np.load(folder / HEAD) as a, np.load(tmp_path / "again" / HEAD) as b:
        assert np.array_equal(a["w"], b["w"]) and np.array_equal(a["b"], b["b"])


def test_onnxruntime_gives_the_probabilities_of_pytorch(trained):
    folder, cfg, _ = trained
    recs = [json.loads(x) for x in _slice(SNAP / "test.jsonl", 4).splitlines()]
    args = ([r["text"] for r in recs], [(r["cause"]["start"], r["cause"]["end"]) for r in recs],
            [(r["effect"]["start"], r["effect"]["end"]) for r in recs])
    cache = cfg.path("paths.cache") / "onnx"
    pt = PairVerifier(folder, device="cpu", backend="torch")
    ox = PairVerifier(folder, device="cpu", backend="onnxruntime", cache_dir=cache)
    assert pt.describe()["encoder_backend"] == "torch" and ox.describe()["encoder_backend"] == "onnxruntime"
    p, q = pt.probabilities(*args), ox.probabilities(*args)
    assert p.shape == (12, 3) and np.allclose(p.sum(axis=1), 1.0)
    assert np.abs(p - q).max() < 1e-4
    assert [v["verdict"] for v in pt.judge(*args)] == [v["verdict"] for v in ox.judge(*args)]
    # each pair is read both ways: the swapped pair has causal and reversed exchanged
    swapped = pt.probabilities(args[0], args[2], args[1])
    assert np.allclose(swapped, p[:, [1, 0, 2]])


def test_the_head_reads_the_token_vectors_at_the_opening_marks(trained):
    """What the head reads is the fine-tuned encoder's vector at the ``<<`` token and at the
    ``[[`` token, each L2-normalised: swapping the spans swaps the two halves' roles, which the
    sentence mean could not tell apart."""
    import torch
    from sentence_transformers import SentenceTransformer

    folder = trained[0]
    v = PairVerifier(folder, device="cpu", backend="torch")
    t = "The disease caused more deaths than the war."
    marked, at = mark_pair_at(t, (4, 11), (19, 30))
    got = v.encoder.encode([marked], at_chars=[at])[0]
    st = SentenceTransformer(str(folder / "encoder"), device="cpu")
    enc = st.tokenizer([marked], return_tensors="pt")
    with torch.inference_mode():
        hidden = st[0].auto_model(**enc).last_hidden_state[0].numpy()
    ids = [enc.char_to_token(0, a) for a in at]
    assert st.tokenizer.convert_ids_to_tokens([int(enc["input_ids"][0][i]) for i in ids]) == ["<", "["]
    want = np.concatenate([hidden[i] / np.linalg.norm(hidden[i]) for i in ids])
    assert got.shape == (64,) and np.allclose(got, want, atol=1e-5)
    swapped, at2 = mark_pair_at(t, (19, 30), (4, 11))
    other = v.encoder.encode([swapped], at_chars=[at2])[0]
    assert not np.allclose(other, got, atol=1e-3)


def test_a_missing_model_and_bad_data_say_what_to_do(tmp_path, trained):
    with pytest.raises(ModelError, match="no trained pair verifier") as e:
        PairVerifier(tmp_path)
    assert "causalkg kg train-verifier" in e.value.hint
    _, cfg, _ = trained
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.jsonl").write_text('{"text": "x", "label": "maybe"}\n', encoding="utf-8")
    (bad / "val.jsonl").write_text('{"text": "x", "label": "causal"}\n', encoding="utf-8")
    with pytest.raises(SchemaError, match=r"train.jsonl:1: a verifier pair needs"):
        train_verifier(cfg, data=bad, output=tmp_path / "out")
    with pytest.raises(ConfigError, match="kg.verifier.reversed must be one of flip, drop, keep"):
        PairVerifier(trained[0], reversed="swap")


def _fixed(folder: Path, out: Path, bias: list[float], w: np.ndarray | None = None, **kw) -> PairVerifier:
    """The trained verifier with its head set by the test (weights ``w``, default 0, and these
    biases): a real model whose verdict a test knows in advance."""
    shutil.copytree(folder, out)
    with np.load(folder / HEAD) as z:
        np.savez(out / HEAD, w=np.zeros_like(z["w"]) if w is None else w, b=np.asarray(bias, dtype=np.float64))
    return PairVerifier(out, device="cpu", backend="torch", **kw)


def _directional(folder: Path, out: Path, xs: list[Extraction], **kw) -> PairVerifier:
    """The trained verifier with a head that reads every pair of ``xs`` as reversed: a linear
    function of the embedding that is +1 on the pairs as given and -1 on them with the spans
    swapped (least squares: 6 points in 64 dimensions) is the margin of "reversed" over "causal"."""
    v = PairVerifier(folder, device="cpu", backend="torch")
    texts = [x.sentence.text for x in xs]
    c = [(x.cause.start - x.sentence.start, x.cause.end - x.sentence.start) for x in xs]
    e = [(x.effect.start - x.sentence.start, x.effect.end - x.sentence.start) for x in xs]
    gm = [mark_pair_at(t, a, b) for t, a, b in zip(texts, c, e)]
    sm = [mark_pair_at(t, b, a) for t, a, b in zip(texts, c, e)]
    g = v.encoder.encode([m for m, _ in gm], at_chars=[at for _, at in gm]).astype(np.float64)
    s = v.encoder.encode([m for m, _ in sm], at_chars=[at for _, at in sm]).astype(np.float64)
    x = np.hstack([np.vstack([g, s]), np.ones((2 * len(xs), 1))])
    sol = np.linalg.lstsq(x, np.r_[np.ones(len(xs)), -np.ones(len(xs))], rcond=None)[0]
    assert np.allclose(x @ sol, np.r_[np.ones(len(xs)), -np.ones(len(xs))], atol=1e-3)
    k = 10.0  # half the margin in logits
    w = np.zeros((3, g.shape[1]))
    w[0], w[1] = -k * sol[:-1], k * sol[:-1]
    return _fixed(folder, out, [-k * sol[-1], k * sol[-1], -20.0], w=w, **kw)


def _extractions() -> list[Extraction]:
    return [Extraction.model_validate_json(x) for x in (FIX / "extractions.jsonl").read_text().splitlines()[:3]]


def test_verdicts_flip_or_drop_reversed_pairs_and_drop_not_causal_ones(trained, tmp_path):
    folder = trained[0]
    xs = _extractions()
    rev = _directional(folder, tmp_path / "rev", xs)
    rev.reversed = "flip"  # (the default keeps reversed pairs as extracted)
    counts = LinkCounts()
    kept, asr, vds = verify_extractions(xs, None, rev, counts)
    assert asr is None and len(kept) == 3 and counts.verifier_pairs == 3 and counts.verifier_reversed_flipped == 3
    assert all(v["verdict"] == "reversed" and v["flipped"] and v["score"] > 0.9 for v in vds)
    assert [(k.cause.text, k.effect.text) for k in kept] == [(x.effect.text, x.cause.text) for x in xs]
    # read both ways: the flipped pairs are causal as written
    assert [v["verdict"] for v in verify_extractions(kept, None, rev, LinkCounts())[2]] == ["causal"] * 3
    rev.reversed = "drop"
    counts = LinkCounts()
    assert verify_extractions(xs, None, rev, counts)[0] == [] and counts.verifier_reversed_dropped == 3
    rev.reversed = "keep"
    counts = LinkCounts()
    assert verify_extractions(xs, None, rev, counts)[0] == xs and counts.verifier_reversed_kept == 3
    nc = _fixed(folder, tmp_path / "nc", [0.0, 0.0, 5.0])
    counts = LinkCounts()
    assert verify_extractions(xs, [None] * 3, nc, counts)[:2] == ([], []) and counts.verifier_not_causal_dropped == 3
    # a head that cannot tell the two readings apart gives causal and reversed one half each: causal
    ok = _fixed(folder, tmp_path / "ok", [5.0, 0.0, 0.0])
    kept, _, vds = verify_extractions(xs, None, ok, LinkCounts())
    assert kept == xs and [v["verdict"] for v in vds] == ["causal"] * 3 and "flipped" not in vds[0]
    assert vds[0]["probabilities"]["causal"] == vds[0]["probabilities"]["reversed"]
    # with the link candidates: only pairs linked at both ends are read; the others are kept
    # unread (link_pairs makes no mention of them), and a flipped pair's candidates swap with it
    c1, c2 = (Candidate(qid=q, label=q, surface=q, score=0.9, kind="class") for q in ("Q1", "Q2"))
    causes, effects = [[c1], [], [c1]], [[c2], [c2], []]
    rev.reversed = "flip"
    counts = LinkCounts()
    read, _, read_vds = verify_extractions(xs, None, rev, counts, candidates=(causes, effects))
    assert counts.verifier_pairs == 1 and counts.verifier_reversed_flipped == 1 and len(read) == 3
    assert (read[0].cause.text, read[0].effect.text) == (xs[0].effect.text, xs[0].cause.text) and read[1:] == xs[1:]
    assert read_vds[0]["flipped"] and read_vds[1:] == [None, None]
    assert causes == [[c2], [], [c1]] and effects == [[c1], [c2], []]
    counts = LinkCounts()
    causes, effects = [[c1], [], [c1]], [[c2], [c2], []]
    read, _, _ = verify_extractions(xs, None, nc, counts, candidates=(causes, effects))
    assert read == xs[1:] and causes == [[], [c1]] and effects == [[c2], []] and counts.verifier_pairs == 1
    # the verdict is recorded in the mention, and only when there is one
    cand = [Candidate(qid=q, label=q, surface=q, score=0.9, kind="class") for q in ("Q1", "Q2")]
    ms, _ = link_pairs(kept[:2], [[cand[0]]] * 2, [[cand[1]]] * 2, {}, verdicts=vds[:2])
    assert ms[0].verifier["verdict"] == "causal" and set(ms[0].verifier["probabilities"]) == set(LABELS)
    assert '"verifier":{"verdict":"causal"' in ms[0].model_dump_json()
    plain, _ = link_pairs(kept[:1], [[cand[0]]], [[cand[1]]], {})
    assert "verifier" not in plain[0].model_dump_json()


def test_assembly_with_the_verifier_on_keeps_its_verdict_in_the_edges(trained, tmp_path):
    from causalkg.kg import assemble as A
    from causalkg.kg.inputs import load_concepts
    from causalkg.linking.linker import Linker

    folder = trained[0]
    _fixed(folder, tmp_path / "ok", [5.0, 0.0, 0.0])
    _fixed(folder, tmp_path / "nc", [0.0, 0.0, 5.0])
    base = {"paths.data": str(tmp_path / "off"), "kg.structured": [], "kg.min_confidence": 0.0}
    cfg_off = load_config(search_cwd=False, overrides=base)
    lk = Linker.from_concepts(load_concepts(FIX / "concepts.jsonl").values(), cfg_off)
    inputs = {"extractions": FIX / "extractions.jsonl", "corpus": FIX / "corpus.jsonl",
              "concepts": FIX / "concepts.jsonl", "linker": lk}
    off = A.assemble(cfg_off, **inputs)
    edges_off = {e.edge_id: e for e in read_jsonl(off.out / "causal_kg_pairs.jsonl", KGEdge)}
    assert edges_off and off.counts["link_verifier_pairs"] == 0
    assert not any("verifier" in m.model_dump() for e in edges_off.values() for m in e.mentions)

    def on(model: str):
        cfg = load_config(search_cwd=False, overrides={
            **base, "paths.data": str(tmp_path / model), "kg.verifier.enabled": True,
            "kg.verifier.model": str(tmp_path / model), "kg.verifier.backend": "torch", "kg.verifier.device": "cpu"})
        r = A.assemble(cfg, **inputs)
        return r, {e.edge_id: e for e in read_jsonl(r.out / "causal_kg_pairs.jsonl", KGEdge)}

    r, edges = on("ok")
    # every pair read as causal: the same edges, each mention with its verdict
    assert r.counts["link_verifier_pairs"] > 0 and set(edges) == set(edges_off)
    ms = [m for e in edges.values() for m in e.mentions]
    assert ms and all(m.verifier["verdict"] == "causal" and m.verifier["probabilities"]["causal"]
                      == m.verifier["probabilities"]["reversed"] for m in ms)
    r, edges = on("nc")
    # every pair read as not causal: no prose pair is linked, so no edge
    assert r.counts["link_verifier_not_causal_dropped"] == r.counts["link_verifier_pairs"] > 0
    assert r.counts["link_linked"] == 0 and not edges


def test_the_held_out_news_documents_are_in_no_training_or_validation_pair():
    """bench/bench_quality.py measures pair F1 on the CNC sentences of qa-training's test split:
    the verifier never trains or selects on those documents."""
    def groups(path: Path) -> set[str]:
        return {json.loads(x)["group"] for x in path.read_text(encoding="utf-8").splitlines()}

    held_out = groups(REPO / "snapshots" / "qa-training" / "test.jsonl")
    assert held_out and not held_out & (groups(SNAP / "train.jsonl") | groups(SNAP / "val.jsonl"))
    bench = {r["group"] for r in map(json.loads, (REPO / "snapshots" / "qa-training" / "test.jsonl").read_text(
        encoding="utf-8").splitlines()) if r["source"] == "cnc" and r["relations"]}
    assert bench and bench <= groups(SNAP / "test.jsonl")


def test_train_verifier_cli_trains_skips_and_reports_bad_data(cli, in_tmp, trained):
    folder, cfg, _ = trained
    data = folder.parent / "data"
    sets = ["--set", f"kg.verifier.encoder={cfg['kg']['verifier']['encoder']}", "--set", "kg.verifier.train_steps=2",
            "--set", "kg.verifier.train_batch_size=8", "--set", "kg.verifier.device=cpu"]
    r = cli("kg", "train-verifier", "--data", data, "--output", in_tmp / "v", *sets)
    assert r.code == 0 and "trained the pair verifier" in r.out and "validation (18 pairs): threshold" in r.out
    assert (in_tmp / "v" / HEAD).is_file()
    r = cli("kg", "train-verifier", "--data", data, "--output", in_tmp / "v", "--if-missing", *sets)
    assert r.code == 0 and r.out.startswith("nothing to do:") and "is current" in r.out
    r = cli("kg", "train-verifier", "--data", in_tmp / "nowhere", *sets)
    assert r.code != 0 and "error: verifier training data not found" in r.err and "kg.verifier.train_data" in r.err
    assert "Traceback" not in r.err


def test_ck_train_verifier_returns_a_result_that_renders_itself(trained):
    folder, cfg, res = trained
    at = res.validation["at_threshold"]
    assert type(res) is ck.VerifierTraining and res.output == folder
    assert str(res).splitlines() == [
        f"trained the pair verifier in {res.seconds:.0f} s; saved to {folder}",
        f"validation (18 pairs): threshold {res.validation['threshold']:.2f}, accuracy {at['accuracy']:.3f}, macro F1 "
        f"{at['macro_f1']:.3f} (causal F1 {at['per_class']['causal']['f1']:.3f}, reversed F1 "
        f"{at['per_class']['reversed']['f1']:.3f}, not_causal F1 {at['per_class']['not_causal']['f1']:.3f})"]
    assert json.loads(res.to_table("json"))["validation"]["threshold"] == res.validation["threshold"]
    again = ck.train_verifier(if_missing=True, cfg=cfg)
    assert again.skipped and str(again) == f"nothing to do: {again.reason}" and "current" in again.reason
