"""The graph measures: a predicted causal graph against a gold one. Soft edge measures
(``soft``, over the textual similarities of ``similarity``), Elo ratings from pairwise judgements
(``elo``), their meta-evaluation (``meta``), structure-first alignment (``align``) and annotator
agreement (``agreement``), all reading units through ``graphs``. docs/graph-measures.md."""
