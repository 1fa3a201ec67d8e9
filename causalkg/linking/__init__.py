"""Stage 2: concept linking. A FAISS index over the labels and aliases of the Wikidata concepts,
so that a phrase such as "the tsunamis" links to Q8070."""
