"""Judging the judges: how far to trust the models that grade extractions. SQC-Score (``sqc``),
causal epistemic consistency (``consistency``), and the model back-ends they share (``nli``,
``causal_lm``, ``hf_models``, ``llm_answers``). docs/judging-the-judges.md."""
