"""The WikiCausal measures: recall against the Base KG (``recall``), precision judged by a language
model (``precision``, with its judges in ``judges``), the ``make eval`` report (``report``), and the
reader of KGs in both WikiCausal shapes (``kgread``). docs/evaluation.md."""
