"""Bulk loading N-Triples into an Oxigraph store in slices of lines, so memory stays bounded.

Oxigraph's bulk loader holds everything one ``Store.bulk_load`` call is given while it sorts
it: a 474,713-triple file (the 68,391-document world's Base KG) took the process to 455 MB in
one call and 157 MB in slices of 100,000 lines, in about the same time. N-Triples is one triple
per line, so a file can be cut at any line; ``bulk_load_slices`` does that and reports a syntax
error at its line in the whole file, not in the slice.

One limit: each ``bulk_load`` call renames the blank nodes it reads, so a blank node label that
appears in two slices becomes two nodes. Use it for files without blank nodes (the KG's and the
Base KG's N-Triples this toolkit writes, the triples it converts from the Wikidata JSON dump, the
Wikidata snapshot, the generated worlds' N-Triples); copy graphs that may hold them in one call
(``kg.store.copy_other_graphs``).

Flow: ``kg.store.load_graph`` (the export), ``corpus.snapshot.SnapshotEngine`` (the on-disk
snapshot store) and ``corpus.jsondump`` (the JSON dump's store) call it.
"""

from __future__ import annotations

from itertools import islice
from typing import IO, Any

SLICE_LINES = 100_000


def bulk_load_slices(store: Any, fh: IO[bytes], *, to_graph: Any = None, lines: int = SLICE_LINES) -> int:
    """Bulk-load the N-Triples in the binary file ``fh`` into ``store`` (into the graph
    ``to_graph``, default the default graph), ``lines`` lines per ``bulk_load`` call. Returns the
    number of lines read. Raises SyntaxError for a line Oxigraph cannot parse, its ``lineno``
    the line in the whole file (its message ``line N: what is wrong``, ``reason`` the part after
    it); the slices before it stay loaded."""
    import pyoxigraph as ox

    if lines < 1:
        raise ValueError(f"lines must be at least 1, got {lines}")
    done = 0
    while True:
        chunk = list(islice(fh, lines))
        if not chunk:
            return done
        try:
            store.bulk_load(input=b"".join(chunk), format=ox.RdfFormat.N_TRIPLES, to_graph=to_graph)
        except SyntaxError as exc:
            line = done + (exc.lineno or 1)
            reason = str(exc.args[0] if exc.args else exc).split(": ", 1)[-1]
            err = SyntaxError(f"line {line}: {reason}")
            err.lineno, err.reason = line, reason
            raise err from None
        done += len(chunk)


__all__ = ["SLICE_LINES", "bulk_load_slices"]
