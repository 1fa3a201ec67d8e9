"""causalkg: causal knowledge graphs from Wikipedia and Wikidata.

This package holds what every stage shares: the CLI, the configuration, the error types,
the JSONL contracts between stages, manifests, progress bars, retries and the disk cache.
The stages themselves are the top-level packages ``corpus``, ``linking``, ``kg`` and
``evaluation`` (in that order of the flow; a stage imports only from stages before it).
"""

__version__ = "0.1.0"
