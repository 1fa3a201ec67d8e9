"""Stage 1: the corpus. Wikidata (event classes, concepts, the Base KG) and Wikipedia (the
dump reader and wikitext-to-document conversion), written as JSONL contracts under ``data/``."""
