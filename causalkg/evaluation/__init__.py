"""Stage 4: evaluation, in three rooms.

- ``wikicausal``: the WikiCausal measures of a causal KG (recall against the Base KG, precision
  judged by a language model, the ``make eval`` report).
- ``graph``: the graph measures of a predicted graph against a gold one (soft edge measures, Elo
  and its meta-evaluation, structure-first alignment, annotator agreement).
- ``judging``: judging the judges (SQC-Score, causal epistemic consistency, and the NLI, causal-LM
  and chat back-ends they share).

``cli`` holds the ``causalkg eval ...`` commands over all three."""
