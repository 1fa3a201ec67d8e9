"""Stage 4: evaluation. Recall against the Base KG, LLM-judged precision, soft edge measures,
Elo meta-evaluation, structure-first alignment, SQC-Score and causal epistemic consistency."""
