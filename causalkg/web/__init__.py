"""The browser UI of a causal KG (``causalkg serve``): search, concept and edge pages with their
evidence, a table of every edge with facets and exports, a graph view, causal paths, a SPARQL endpoint and query page, and human verification
of edges turned into a precision figure (``causalkg eval precision --human FILE``).

Modules: ``kgview`` (a read-only snapshot of the KG files, reloaded when they change),
``sparql`` (read-only SPARQL over the embedded store, one child process per query with a time
limit and a result cap), ``edgetable`` (the edges page: facets, sort, search, paging, CSV and
JSON), ``judgements`` (the append-only judgements file and the review queue),
``app`` (the Starlette application), ``serve`` (the ``serve`` library function and its CLI).
"""
