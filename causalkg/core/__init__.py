"""The foundation every stage stands on: errors, configuration, the JSONL contracts between
stages, the data layout, manifests, atomic writes and generations, retries, the disk cache,
progress bars and the process helpers.

Nothing here imports a stage (``causalkg.corpus``, ``linking``, ``kg``, ``evaluation``, ``web``)
or the CLI; the stages import from here.
"""

__version__ = "0.1.0"
