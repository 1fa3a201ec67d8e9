"""Stage 3: the causal KG. Candidate sentences, cause-effect extractors (qa, patterns, llm),
linking of the phrases, assembly into edges with provenance, RDF, and export to a triple store."""
