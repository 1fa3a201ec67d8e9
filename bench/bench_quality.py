"""End-to-end pair F1 of ``causalkg kg extract`` on held-out news sentences, and speed.

    python -m bench quality

Input (no ``../shared``): the Causal News Corpus sentences of ``snapshots/qa-training/test.jsonl``
(CC0; the held-out documents of ``kg.qa_data.split_three``: no model of this repository trains or
selects on them), one ``{"id", "text"}`` record per gold causal sentence, exactly as a user would
feed raw text to ``causalkg kg extract``.

Each configuration runs the real stage (``kg.extract.extract``) with the defaults of
``causalkg/core/defaults.toml`` and the overrides named in its row. A predicted (cause, effect) pair
matches a gold pair when both spans share a content token with the gold spans, one to one per
sentence (``kg.span_metrics.PairMatch``); "strict" also asks token F1 >= 0.5 on both sides.
Rows: the default, without the gate's first pass (``extract.gate.first_pass``), in bfloat16 (``extract.dtype``: the gate's encoder and QA; on a CPU that
multiplies bfloat16 natively, else the same float32 run) and on PyTorch float32 (the runtime
before ONNX Runtime); the previous defaults (one cause per sentence at the QA model's own tuned
no-answer threshold, behind the learned gate and behind the cue gate) and QA reading every
sentence (the baselines); the tagger and QA behind each gate. The default's decoding settings
(``null_threshold`` -2, ``max_causes`` 2) were chosen by pair F1 on the *validation* split
(``scripts/tune_extract.py``), never on this one. Speed: sentences/s of each run, model
loading excluded (the stage's ``load`` timing), on the CPU threads torch has (2 here).
``BENCH_QUALITY_CONFIGS=N`` runs the first N rows only.

The models are the ones ``make kg`` trains (``models/causal-gate``, ``models/causal-tagger``,
``models/causal-qa``), trained now when missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable, ContextManager, Iterator, Sequence

from bench import timed
from causalkg.core.config import load_config
from causalkg.core.tables import render_table

REPO = Path(__file__).resolve().parents[1]
TEST = REPO / "snapshots" / "qa-training" / "test.jsonl"
ISSUE_BASELINE = {"precision": 0.75, "recall": 0.18, "f1": 0.28}  # issue 13: QA behind the cue gate, measured on news sentences


def gold_relations(path: Path = TEST) -> list[dict]:
    """The Causal News Corpus sentences of a qa-training split that state at least one relation
    (default: the held-out test split)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["source"] == "cnc" and rec["causal"] and rec["relations"]:
                out.append(rec)
    return out


def ensure_models() -> None:
    from causalkg.kg.gate import train_gate
    from causalkg.kg.tagger import train_tagger
    from causalkg.kg.train_qa import train_qa

    cfg = load_config(search_cwd=False)
    for name, fn in (("gate", train_gate), ("tagger", train_tagger), ("qa", train_qa)):
        with timed() as t:
            res = fn(cfg, if_missing=True)
        if not res.skipped:
            print(f"(trained the {name} model in {t.seconds:.0f} s)\n")


def write_sentences(records: list[dict], workdir: Path) -> Path:
    """The input :func:`run` reads: ``workdir/sentences.jsonl``, one ``{"id", "text"}`` per record."""
    path = workdir / "sentences.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps({"id": rec["id"], "text": rec["text"]}, ensure_ascii=False) + "\n")
    return path


def run_each(records: list[dict], settings: Sequence[dict],
             around: Callable[[int], ContextManager] | None = None) -> Iterator[dict]:
    """Extract ``records`` once per override set of ``settings``, all in one temporary folder
    (:func:`write_sentences` once, then :func:`run` for each), yielding each result as it is
    made. ``around(k)``: a context the k-th run happens in (a bench's int8 gate)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_sentences(records, work)
        for k, over in enumerate(settings):
            with around(k) if around is not None else contextlib.nullcontext():
                result = run(records, work, f"run{k}", over)
            yield result


def run(records: list[dict], workdir: Path, name: str, overrides: dict) -> dict:
    """Extract ``records`` (written by :func:`write_sentences` into ``workdir``) with ``overrides``
    and match the pairs against their gold relations."""
    from causalkg.kg.extract import extract
    from causalkg.kg.span_metrics import PairMatch

    cfg = load_config(search_cwd=False, overrides={"paths.data": str(workdir / "data"), **overrides})
    inp = workdir / "sentences.jsonl"
    out = workdir / f"{name}.jsonl"
    res = extract(cfg, input=inp, output=out, force=True)
    manifest = json.loads(res.manifest_path.read_text(encoding="utf-8"))
    by_id: dict[str, list] = {}
    with open(out, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            by_id.setdefault(r["doc_id"], []).append((r["cause"]["text"], r["effect"]["text"]))
    m = PairMatch()
    for rec in records:
        m.add(by_id.get(rec["id"], []), [(g["cause"]["text"], g["effect"]["text"]) for g in rec["relations"]])
    run_seconds = manifest["timings_s"]["total"] - manifest["timings_s"].get("load", 0.0)
    read = res.counts.get("sentences_read", res.counts.get("candidates", 0))
    return {**m.as_dict(), "seconds": run_seconds, "read": read,
            "sentences": res.counts.get("sentences", 0), "extractor": manifest["settings"]["extractor"]}


def main() -> None:
    import torch

    ensure_models()
    records = gold_relations()
    defaults = load_config(search_cwd=False)["extract"]
    configs = [
        (f"default ({defaults['extractor']}, {defaults['gate']['kind']} gate"
         + (", behind its first pass)" if defaults["gate"]["first_pass"] else ")"), {}),
        ("the default without the gate's first pass (extract.gate.first_pass = false)", {"extract.gate.first_pass": False}),
        ("default in bfloat16 (extract.dtype; float32 where the CPU has no native bfloat16)",
         {"extract.dtype": "bfloat16"}),
        ("default on PyTorch float32 (extract.backend = torch)", {"extract.backend": "torch"}),
        ("qa, learned gate, one cause, the model's threshold (previous default)",
         {"extract.extractor": "qa", "extract.gate.kind": "learned", "extract.qa.max_causes": 1,
          "extract.qa.null_threshold_from_model": True}),
        ("qa, cue gate, one cause, the model's threshold (default before; the issue's baseline)",
         {"extract.extractor": "qa", "extract.gate.kind": "cues", "extract.qa.max_causes": 1,
          "extract.qa.null_threshold_from_model": True}),
        ("qa, every sentence (baseline)", {"extract.extractor": "qa", "extract.candidates_only": False}),
        ("qa, learned gate", {"extract.extractor": "qa", "extract.gate.kind": "learned"}),
        ("tagger, learned gate", {"extract.extractor": "tagger", "extract.gate.kind": "learned"}),
        ("tagger, every sentence", {"extract.extractor": "tagger", "extract.candidates_only": False}),
        ("tagger, cue gate", {"extract.extractor": "tagger", "extract.gate.kind": "cues"}),
    ]
    # BENCH_QUALITY_CONFIGS=N: the first N rows only (the default and its first pass: 2)
    configs = configs[: int(os.environ.get("BENCH_QUALITY_CONFIGS", "0")) or None]
    rows = []
    for (name, _), r in zip(configs, run_each(records, [over for _, over in configs])):
        rows.append({"configuration": name, "pred": int(r["pred"]), "matched": int(r["matched"]),
                     "P": r["precision"], "R": r["recall"], "F1": r["f1"], "strict F1": r["strict_f1"],
                     "read": f"{r['read']}/{r['sentences']}", "sentences/s": r["sentences"] / max(r["seconds"], 1e-9)})
    n_gold = sum(len(r["relations"]) for r in records)
    print(f"### End-to-end pair F1 of `kg extract` on held-out CNC sentences ({len(records)} sentences, "
          f"{n_gold} gold pairs; torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs)\n")
    print(render_table(rows, ["configuration", "pred", "matched", "P", "R", "F1", "strict F1", "read", "sentences/s"],
                       "md", floatfmt=".3g"))
    b = ISSUE_BASELINE
    print(f"\nIssue 13's figure for the previous default on news sentences: P {b['precision']} R {b['recall']} "
          f"F1 {b['f1']}. Target: F1 >= 0.65.\n")


if __name__ == "__main__":
    main()
