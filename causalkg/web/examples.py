"""The example queries of the README (section "The causal KG and the triple store"), one click
away on the query page. The prefixes ck, wd, wdt, rdf, rdfs, xsd, prov, dcterms, schema, edge and
mention are predeclared by the endpoint, as by ``causalkg kg query``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    name: str
    title: str
    query: str


EXAMPLES: tuple[Example, ...] = (
    Example("earthquake-effects", "What does an earthquake cause?", """\
SELECT ?effect ?label ?sentences WHERE {
  ?e ck:cause wd:Q7944 ; ck:effect ?effect ; ck:supportSentences ?sentences .
  ?effect rdfs:label ?label .
} ORDER BY DESC(?sentences) ?label"""),
    Example("causes-of-war-in-afghanistan", "What caused the War in Afghanistan?", """\
SELECT ?cause ?label ?level WHERE {
  ?e ck:effect wd:Q182865 ; ck:cause ?cause ; ck:level ?level .
  ?cause rdfs:label ?label .
}"""),
    Example("edge-evidence", "The evidence of earthquake → tsunami", """\
SELECT ?score ?sentence ?page WHERE {
  ?e ck:cause wd:Q7944 ; ck:effect wd:Q8070 ; ck:liftedFrom?/prov:wasDerivedFrom ?m .
  ?m schema:text ?sentence ; ck:extractionScore ?score .
  OPTIONAL { ?m dcterms:source ?page }
} ORDER BY DESC(?score)"""),
    Example("confirmed-by-base-kg", "Edges the Base KG confirms", """\
SELECT ?c ?x ?sentences WHERE {
  ?e ck:cause ?cause ; ck:effect ?effect ; ck:supportSentences ?sentences .
  GRAPH <https://w3id.org/causalkg/graph/base-kg> { ?cause ck:causes ?effect }
  ?cause rdfs:label ?c . ?effect rdfs:label ?x .
} ORDER BY DESC(?sentences) ?c ?x"""),
)


def by_name(name: str) -> Example | None:
    return next((x for x in EXAMPLES if x.name == name), None)
