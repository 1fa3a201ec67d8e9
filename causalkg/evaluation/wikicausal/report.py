"""The evaluation report that ``make eval`` writes: ``causalkg eval report`` -> data/eval/report.md.

Stage 4 (evaluation), the last step of the flow. ``eval_report`` scores our KG
(``<data>/kg/causal_kg.jsonl``, nested shape, and ``causal_kg_pairs.jsonl``, flat shape) and the
peer KGs (``eval.report.peer_kgs``: the reference's CauseNet KGs) for recall against the Base KG
that ``make corpus`` builds (``<data>/wikidata/base_kg.jsonl``) and against the bundled
WikiCausal Base KG (``eval.recall.base_kg``), with reachable recall when the corpus
(``<data>/corpus/corpus.jsonl``) is there; and for precision when a judge is configured
(``eval.precision.judge`` or ``--judge``). A missing input is listed with the command that makes
it, never a crash. Tables, plots and per-pair details land under ``<data>/eval/``.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalkg import __version__
from causalkg.core.config import Config
from causalkg.core.errors import CausalKGError
from causalkg.core.jsonl import atomic_write
from causalkg.core.layout import Layout
from causalkg.core.manifest import build_manifest, now_iso, write_manifest
from causalkg.core.progress import progress
from causalkg.core.tables import render_table
from causalkg.evaluation.wikicausal.precision import NO_JUDGE_HINT, eval_precision, judge_consistency
from causalkg.evaluation.wikicausal.recall import eval_recall

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[3]

# The figures the WikiCausal repository publishes (IBM/wikicausal, results/recall-v1.md and
# results/precision-v1.md at commit a3df9e13), shown beside ours. Precision there was judged by
# allenai/tk-instruct-3b-def with 5 greedy tries and the first-character cause-label defect.
PUBLISHED_RECALL = {
    ("causenet-full-linked-v1.jsonl", "base-kg-v1.jsonl"): {"full": 0.0654, "classes": 0.1265, "instances": 0.0},
    ("causenet-precision-linked-v1.jsonl", "base-kg-v1.jsonl"): {"full": 0.0424, "classes": 0.0820, "instances": 0.0},
}
PUBLISHED_PRECISION = {
    "causenet-full-linked-v1.jsonl": {"full": 0.8650, "types": 0.8650, "instances": 0.0},
    "causenet-precision-linked-v1.jsonl": {"full": 0.9252, "types": 0.9252, "instances": 0.0},
}


def bundled_path(cfg: Config, value: str) -> Path:
    """A configured path: relative ones against the config's base folder, and, for the bundled
    snapshots, against the source checkout when they are not there (tests run elsewhere)."""
    p = Path(os.path.expanduser(value))
    if p.is_absolute():
        return p
    here = cfg.base_dir / p
    if here.exists():
        return here
    checkout = REPO_ROOT / p
    return checkout if checkout.exists() else here


@dataclass
class Input:
    role: str
    path: Path
    make: str  # how to make it when it is missing

    @property
    def present(self) -> bool:
        return self.path.is_file()

    @property
    def empty(self) -> bool:
        """There but without a byte: a stage that ran and found nothing (it scores 0 everywhere)."""
        return self.present and self.path.stat().st_size == 0


@dataclass
class ReportResult:
    path: Path
    missing: list[Input]
    empty: list[Input] = field(default_factory=list)  # present but 0 bytes
    recall: dict[str, Any] = field(default_factory=dict)  # base name -> RecallReport
    precision: Any = None
    precision_error: str | None = None
    status: int = 0


def report_inputs(cfg: Config) -> dict[str, list[Input]]:
    """What the report reads, grouped: KGs, Base KGs, corpus."""
    lay = Layout.from_config(cfg)
    # The whole chain, not only its last step: outside a checkout there is no Makefile.
    make_kg = ("make kg (= causalkg corpus build; causalkg link build; causalkg kg train-qa --if-missing; "
               "causalkg kg extract; causalkg kg assemble)")
    # Both shapes from the same generation of data/kg (resolved once: an assembly finishing
    # meanwhile cannot give one shape of the old KG and one of the new).
    from causalkg.core.generations import current

    kg_folder = current(lay.kg_dir) or lay.kg_dir
    kgs = [
        Input("our KG (base-KG shape)", kg_folder / "causal_kg.jsonl", make_kg),
        Input("our KG (flat pairs)", kg_folder / "causal_kg_pairs.jsonl", make_kg),
    ]
    kgs += [Input("peer KG", bundled_path(cfg, v), "it is bundled in snapshots/wikicausal/; restore the checkout")
            for v in cfg["eval"]["report"]["peer_kgs"]]
    bases = [
        Input("Base KG (built from Wikidata)", lay.base_kg, "make corpus (= causalkg corpus build)"),
        Input("Base KG (bundled WikiCausal v1)", bundled_path(cfg, cfg["eval"]["recall"]["base_kg"]),
              "it is bundled in snapshots/wikicausal/; restore the checkout"),
    ]
    corpus = [Input("corpus (for reachable recall)", lay.corpus, "make corpus (= causalkg corpus build)")]
    return {"kgs": kgs, "bases": bases, "corpus": corpus}


def _rel(path: Path, start: Path) -> str:
    try:
        return os.path.relpath(path, start)
    except ValueError:
        return str(path)


def _inputs_section(inputs: dict[str, list[Input]], missing: list[Input], empty: list[Input]) -> list[str]:
    """The report's heading and the table of its inputs, found or missing."""
    lines = [
        "# causalkg evaluation report", "",
        f"Written {now_iso()} by causalkg {__version__} (`causalkg eval report`). "
        "Recall and precision follow the WikiCausal reference definitions; see docs/evaluation.md.", "",
        "## Inputs", "",
        render_table([{"input": i.role, "file": str(i.path),
                       "status": (f"empty (0 bytes): {i.make}" if i.empty else "found") if i.present else f"missing: {i.make}"}
                      for group in inputs.values() for i in group], ["input", "file", "status"], "md"), "",
    ]
    if missing:
        lines += ["Missing inputs are skipped; make them with the commands above and run `make eval` again.", ""]
    if empty:
        lines += ["Empty inputs are there but hold nothing (the stage that wrote them found nothing; see its output and "
                  "manifest): " + ", ".join(f"{i.role} `{i.path.name}`" for i in empty)
                  + ". An empty KG scores 0 everywhere; an empty corpus makes every Base pair unreachable.", ""]
    return lines


def _recall_section(cfg: Config, base: Input, kgs: list[Input], corpus: Path | None, root: Path, plot: bool,
                    result: ReportResult) -> list[str]:
    """The report's section on recall against one Base KG (adds to ``result``)."""
    stem = base.path.name.removesuffix(".jsonl")
    folder = root / "recall" / stem
    lines = [f"## Recall against {base.role}: `{base.path.name}`", ""]
    if not kgs:
        lines += ["No KG to score.", ""]
        return lines
    try:
        rep = eval_recall([k.path for k in kgs], base.path, any_id=True, corpus=corpus, out=folder, plot=plot, cfg=cfg)
    except CausalKGError as exc:
        lines += [f"Recall failed: {exc}", ""]
        result.status = 1
        return lines
    result.recall[base.path.name] = rep
    lines += [
        "Reference columns first (recall to 4 decimals), then `precision` = hit/rel, the `any_id_*` columns "
        "(a flat pair hits when any candidate id matches)"
        + (", and `reachable_*` (only Base pairs whose cause has a corpus document)." if corpus else
           "; reachable recall needs the corpus (`make corpus`)."), "",
        rep.render("md"), "",
    ]
    published = [(r, PUBLISHED_RECALL.get((r["input_kg_file_name"], r["base_kg_file_name"]))) for r in rep.rows]
    published = [(r, p) for r, p in published if p]
    if published:
        lines += ["Published by WikiCausal (results/recall-v1.md) for the same files:", "",
                  render_table([{"kg": r["input_kg_file_name"], "eval_type": r["eval_type"],
                                 "published recall": p[r["eval_type"]], "ours": r["recall"]} for r, p in published],
                               ["kg", "eval_type", "published recall", "ours"], "md"), ""]
    if plot and "plot" in rep.written:
        lines += [f"![recall per seed class]({_rel(Path(rep.written['plot']), root)})", ""]
    # A compact per-class view: one column of full recall per KG.
    by_class: dict[str, dict[str, Any]] = {}
    for res in rep.results:
        for r in res.by_class:
            row = by_class.setdefault(r["class_id"], {"class": f"{r['class_label']} ({r['class_id']})",
                                                      "base pairs": r["class_pairs"] + r["instance_pairs"]})
            row[os.path.basename(res.kg)] = r["full_recall"]
    names = [os.path.basename(res.kg) for res in rep.results]
    lines += ["<details><summary>Recall per seed class (class and instance pairs)</summary>", "",
              render_table(list(by_class.values()), ["class", "base pairs", *names], "md"), "",
              f"Every Base pair, found or missed, with labels: `{_rel(Path(rep.written['pairs']), root)}`; "
              f"per-class counts: `{_rel(Path(rep.written['by_class']), root)}`.", "", "</details>", ""]
    for note in rep.notes:
        lines += [f"- {note}"]
    if rep.notes:
        lines.append("")
    return lines


def _precision_section(cfg: Config, judge: str | None, kgs: list[Input], root: Path, tries: int | None,
                       limit: int | None, result: ReportResult) -> list[str]:
    """The report's section on LLM-judged precision (adds to ``result``)."""
    lines = ["## Precision (LLM-judged)", ""]
    spec = judge if judge is not None else cfg["eval"]["precision"]["judge"]
    if not spec:
        lines += ["Skipped: no judge is configured. To judge precision, " + NO_JUDGE_HINT + ", then run `make eval` again. "
                  "Example `causalkg.toml`:", "", "```toml", "[eval]", 'precision_judge = "openai:gpt-4o-mini"', "",
                  "[llm]", 'base_url = "https://api.openai.com/v1"   # or any OpenAI-compatible server', "```", ""]
    elif not kgs:
        lines += ["No KG to judge.", ""]
    else:
        try:
            prec = eval_precision([k.path for k in kgs], spec, cfg=cfg, tries=tries, limit=limit,
                                  out=root / "precision", consistency=judge_consistency(spec, cfg))
        except CausalKGError as exc:
            result.precision_error = str(exc)
            result.status = 1
            lines += [f"Precision failed: {exc}", ""]
        else:
            result.precision = prec
            lines += _judged_lines(prec, root, result)
    return lines


def _judged_lines(prec: Any, root: Path, result: ReportResult) -> list[str]:
    """What a finished precision run adds to the report."""
    lines = [f"Judge `{prec.judge['spec']}`, {prec.settings['tries']} tries per pair "
              f"({'sampled' if prec.settings['sampled'] else 'greedy'}), template `{prec.settings['template']}`, "
              f"correct when at least {prec.settings['majority']} say yes. `ci_low`/`ci_high`: 95% Wilson interval.", "",
              prec.render("md"), "", "In the reference layout (results/precision-v1.md):", "",
              prec.render_reference("md"), ""]
    pub = [r for r in prec.results if os.path.basename(r.kg) in PUBLISHED_PRECISION]
    if pub:
        lines += ["Published by WikiCausal (tk-instruct-3b-def, 5 greedy tries, first-character cause labels):", "",
                  render_table([{"kg": os.path.basename(r.kg),
                                 **{f"{v} precision": PUBLISHED_PRECISION[os.path.basename(r.kg)][v]
                                    for v in ("full", "types", "instances")}} for r in pub],
                               ["kg", "full precision", "types precision", "instances precision"], "md"), ""]
    lines += [f"- {prec.usage_line()}"]
    if prec.consistency_line():
        lines += [f"- {prec.consistency_line()}"]
    for note in prec.notes:
        lines += [f"- {note}"]
    if prec.failed:
        result.status = 1
        lines += [f"- {len(prec.failed)} pairs could not be judged (first error: {prec.failed[0]['error']}); "
                  "run `make eval` again to retry them (answers so far are cached)."]
    lines.append("")
    if "plot" in prec.written:
        lines += [f"![precision]({_rel(Path(prec.written['plot']), root)})", ""]
    return lines


PARTIAL_REPORT = "report.partial.md"


def eval_report(
    cfg: Config,
    *,
    judge: str | None = None,
    out: str | os.PathLike | None = None,
    tries: int | None = None,
    limit: int | None = None,
    plot: bool = True,
) -> ReportResult:
    """Write the evaluation report (the ``causalkg eval report`` command, run by ``make eval``).

    ``judge`` overrides ``eval.precision.judge``; with neither, precision is skipped and the
    report says how to configure a judge. ``out``: the folder (default ``<paths.data>/eval``);
    the report is ``report.md`` there. Returns what was written and what was missing; ``status``
    is 1 when precision was asked for and failed (the report says why), else 0. A report
    with a failed part is written to ``report.partial.md`` instead (``path`` names it): the last
    complete ``report.md`` and its manifest are kept.
    """
    started = time.perf_counter()
    root = Path(out) if out is not None else Layout.from_config(cfg).eval_dir
    root.mkdir(parents=True, exist_ok=True)
    inputs = report_inputs(cfg)
    missing = [i for group in inputs.values() for i in group if not i.present]
    kgs = [i for i in inputs["kgs"] if i.present]
    bases = [i for i in inputs["bases"] if i.present]
    corpus = next((i.path for i in inputs["corpus"] if i.present), None)
    empty = [i for group in inputs.values() for i in group if i.empty]
    result = ReportResult(root / "report.md", missing, empty)

    lines = _inputs_section(inputs, missing, empty)

    with progress(total=len(bases) + 1, desc="eval report", unit="section") as bar:
        for base in bases:
            lines += _recall_section(cfg, base, kgs, corpus, root, plot, result)
            bar.update(1)
        lines += _precision_section(cfg, judge, kgs, root, tries, limit, result)
        bar.update(1)

    if result.status:
        # an incomplete report goes beside the last complete one, which stays as it was
        result.path = result.path.with_name(PARTIAL_REPORT)
        with atomic_write(result.path) as fh:
            fh.write("\n".join(lines).rstrip() + "\n")
        return result
    with atomic_write(result.path) as fh:
        fh.write("\n".join(lines).rstrip() + "\n")
    (root / PARTIAL_REPORT).unlink(missing_ok=True)
    write_manifest(root, build_manifest(
        "eval-report", cfg,
        inputs={i.role: i.path for group in inputs.values() for i in group if i.present},
        outputs={"report": str(result.path)},
        counts={"kgs": len(kgs), "bases": len(bases), "missing": len(missing), "empty": len(empty)},
        timings={"total": time.perf_counter() - started},
        notes=[f"missing: {i.role} {i.path} ({i.make})" for i in missing]
        + [f"empty: {i.role} {i.path}" for i in empty]
        + ([f"precision: {result.precision_error}"] if result.precision_error else []),
    ))
    return result
