"""The Starlette application of ``causalkg serve``.

Pages are rendered on the server (Jinja2, autoescaped); a little JavaScript adds type-ahead,
the graph view (Cytoscape.js, vendored in ``static/vendor/``) and nothing else: every page
works as a plain HTML form too. Data come from a ``KGViews`` (the KG files, reloaded when they
change), the embedded store (``web.sparql``: read-only child processes, kept warm, killed at the time limit) and the
judgements file (``web.judgements``), the only file the application writes.

Paths in URLs never reach the file system: static files are served by Starlette's
``StaticFiles`` from the package's own ``static/`` folder, and the report's images are looked up
by name in a listing of ``<paths.data>/eval``.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from causalkg.core.config import Config
from causalkg.core.contracts import is_qid
from causalkg.core.errors import CausalKGError, ConfigError, SourceError
from causalkg.kg.stats import best_mention
from causalkg.web import judgements as J
from causalkg.web.edgetable import FACETS, SORTS, EdgeQuery, edge_table
from causalkg.web.examples import EXAMPLES, by_name
from causalkg.web.kgview import LEVELS, KGView, KGViews, highlight, revision_url, snapshot_note
from causalkg.web.sparql import (QueryError, SparqlResult, WorkerPool, negotiate, query_form, run_query, to_csv,
                                 to_graph_text, to_json, to_tsv, to_xml)

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
TEMPLATES_DIR = HERE / "templates"
TOKEN_COOKIE = "causalkg_token"

CORS_MAX_AGE = 600  # seconds a browser may keep a preflight answer


@dataclass
class Settings:
    """What an application serves and allows. ``read_only``: no judgements at all (a remote
    server without a token); ``token``: judgements need it (form field, cookie, or
    ``Authorization: Bearer``)."""

    cfg: Config
    kg: str | None = None
    store: str | None = None
    judgements: str | None = None
    read_only: bool = False
    token: str | None = None
    query_timeout: float = 10.0
    result_cap: int = 10000
    queue_seed: int = 15
    allowed_hosts: list[str] | None = None
    cors_origins: list[str] = field(default_factory=list)


def _data(cfg: Config) -> Path:
    return cfg.path("paths.data")


class WebApp:
    """The handlers, holding the settings and the KG views."""

    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.views = KGViews(settings.cfg, kg=settings.kg)
        self.templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
        self.templates.env.globals.update(fmt_score=_fmt_score, settings=settings)
        self.judgements_file = Path(settings.judgements) if settings.judgements else J.judgements_path(settings.cfg)
        self.store_folder = Path(settings.store) if settings.store else _data(settings.cfg) / "store"
        self.pool = WorkerPool()  # warm query processes; their stdin closes when the server exits

    # --- helpers ---------------------------------------------------------------------------

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("can_judge", self.can_judge())
        context.setdefault("needs_token", bool(self.s.token) and not self._token_ok(request))
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def error_page(self, request: Request, status: int, title: str, message: str, hint: str | None = None) -> Response:
        if _wants_json(request):
            return JSONResponse({"error": message, "hint": hint}, status_code=status)
        return self.render(request, "error.html", status=status, title=title, message=message, hint=hint)

    def view(self) -> KGView:
        return self.views.current()

    def can_judge(self) -> bool:
        return not self.s.read_only

    def _token_ok(self, request: Request, form_token: str | None = None) -> bool:
        if not self.s.token:
            return True
        candidates = [form_token or "", request.cookies.get(TOKEN_COOKIE, "")]
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            candidates.append(auth[7:].strip())
        return any(c and hmac.compare_digest(c.encode(), self.s.token.encode()) for c in candidates)

    # --- pages -----------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        v = self.view()
        levels = {lv: sum(1 for e in v.edges.values() if e.level == lv) for lv in LEVELS}
        top = list(v.edges.values())[:10]
        return self.render(request, "home.html", view=v, levels=levels, top=top)

    async def edges(self, request: Request) -> Response:
        """Every edge as a table: facets, sort, search over the evidence, paging, CSV and JSON
        of exactly the rows asked for (``causalkg.web.edgetable``)."""
        v = self.view()
        query = EdgeQuery.from_params(request.query_params)
        judged, _ = J.read_judgements(self.judgements_file)
        table = edge_table(v, query, J.judged_pairs(judged))
        fmt = _page_format(request)
        if fmt == "json":
            return JSONResponse(table.to_json())
        if fmt == "csv":
            return Response(table.to_csv(), media_type="text/csv; charset=utf-8",
                            headers={"Content-Disposition": 'attachment; filename="edges.csv"'})
        return self.render(request, "edges.html", view=v, t=table, query=query, facet_titles=dict(FACETS),
                           sorts=SORTS)

    async def search_page(self, request: Request) -> Response:
        q = request.query_params.get("q", "")
        v = self.view()
        results = v.search(q, limit=50) if q.strip() else []
        described = [v.describe(n) for n in results]
        if _page_format(request) == "json":
            return JSONResponse({"query": q, "results": described})
        return self.render(request, "search.html", q=q, results=described, view=v)

    async def api_search(self, request: Request) -> Response:
        q = request.query_params.get("q", "")
        limit = _int_param(request, "limit", 10, 1, 50)
        v = self.view()
        return JSONResponse({"query": q, "results": [v.describe(n) for n in v.search(q, limit=limit)]})

    async def concept(self, request: Request) -> Response:
        qid = request.path_params["qid"]
        v = self.view()
        node = v.node(qid)
        if node is None:
            return self.error_page(request, 404, "Concept not found", f"{qid} is not a concept of this KG.",
                                   "search for it by name")
        level = request.query_params.get("level", "")
        if level not in ("",) + LEVELS:
            level = ""
        min_support = _int_param(request, "min_support", 1, 1, 1_000_000)
        extractor = request.query_params.get("extractor", "")
        if extractor not in v.all_extractors():
            extractor = ""
        filters = {"level": level, "min_support": min_support, "extractor": extractor}
        causes = v.neighbours(qid, "causes", **filters)
        effects = v.neighbours(qid, "effects", **filters)
        if _page_format(request) == "json":
            return JSONResponse({**v.describe(node), "wikidata": node.wikidata_url,
                                 "wikipedia": node.wikipedia_url(v.url_base), "filters": filters,
                                 "causes": [edge_summary(v, e) for e in causes],
                                 "effects": [edge_summary(v, e) for e in effects]})
        return self.render(request, "concept.html", view=v, node=node, causes=causes, effects=effects,
                           about=v.describe(node),
                           filters=filters, levels=LEVELS, extractors=v.all_extractors(),
                           wikipedia=node.wikipedia_url(v.url_base))

    async def edge(self, request: Request) -> Response:
        v = self.view()
        e = v.edges.get(request.path_params["edge_id"])
        if e is None:
            return self.error_page(request, 404, "Edge not found",
                                   f"there is no edge {request.path_params['edge_id']!r} in this KG.",
                                   "edges are named CAUSE_EFFECT by their QIDs, e.g. Q7944_Q8070")
        judged, stats = J.read_judgements(self.judgements_file)
        mine = J.for_edge(judged, e)
        rendered = []
        for ev in v.evidence(e):
            m = ev.mention
            rendered.append({"m": m, "ev": ev, "origin": ev.origin, "pieces": highlight(m),
                             "revision": revision_url(m), "snapshot": snapshot_note(m),
                             "judgements": J.for_sentence(mine, e, m.sentence.text)})
        lifted_into = [v.edges[x] for x in e.lifted_to if x in v.edges]
        if _page_format(request) == "json":
            return JSONResponse({**edge_summary(v, e), "support": e.support.model_dump(mode="json"),
                                 "score": e.score.model_dump(mode="json"),
                                 "link_score": e.link_score.model_dump(mode="json"),
                                 "lifted_from": [x.edge_id for x in v.instance_edges(e)],
                                 "lifted_into": [x.edge_id for x in lifted_into],
                                 "evidence": [evidence_json(r) for r in rendered]})
        return self.render(request, "edge.html", view=v, e=e, mentions=rendered, lifted_into=lifted_into,
                           confirmed=v.confirmed(e), instance_edges=v.instance_edges(e), edge_judgements=mine,
                           message=request.query_params.get("saved"), undone=request.query_params.get("undone"),
                           judge=request.query_params.get("judge", ""))

    async def judge(self, request: Request) -> Response:
        v = self.view()
        e = v.edges.get(request.path_params["edge_id"])
        if e is None:
            return self.error_page(request, 404, "Edge not found", "there is no such edge in this KG.")
        if not self.can_judge():
            return self.error_page(request, 403, "Read-only server",
                                   "this server is read-only: judgements are not accepted.",
                                   "the person serving it can set a token (--token or CAUSALKG_WEB_TOKEN)")
        if not _same_origin(request):
            return self.error_page(request, 403, "Refused", "a judgement must be posted from this site's own pages.")
        form = await request.form()
        if not self._token_ok(request, str(form.get("token", ""))):
            return self.error_page(request, 403, "Token needed", "this server needs its token to accept judgements.",
                                   "ask the person serving the KG for it")
        mention = v.find_mention(e, str(form.get("mention_id", "")))
        if mention is None:
            return self.error_page(request, 400, "Unknown mention", "the sentence judged is not one of this edge's.")
        try:
            via = next((x for x in v.instance_edges(e) if any(m.mention_id == mention.mention_id for m in x.mentions)),
                       None) if not any(m.mention_id == mention.mention_id for m in e.mentions) else None
            j = J.make_judgement(e, mention, str(form.get("verdict", "")), str(form.get("judge", "")),
                                 str(form.get("note", "")), source="queue" if form.get("from") == "queue" else "edge",
                                 via=via)
        except ConfigError as exc:
            return self.error_page(request, 400, "Not recorded", exc.message)
        J.append(self.judgements_file, j)
        if _wants_json(request):
            response: Response = JSONResponse({"recorded": j.model_dump(mode="json")}, status_code=201)
        elif form.get("from") == "queue":
            response = RedirectResponse("/queue?" + urlencode({"judge": j.judge, "saved": e.edge_id}), status_code=303)
        else:
            response = RedirectResponse(f"/edge/{e.edge_id}?" + urlencode({"saved": j.verdict, "judge": j.judge})
                                        + f"#m-{mention.mention_id}", status_code=303)
        if self.s.token and form.get("token"):
            response.set_cookie(TOKEN_COOKIE, str(form.get("token")), httponly=True, samesite="strict")
        return response

    async def undo(self, request: Request) -> Response:
        """Take back the judge's last judgement (``judgements.undo_last``: a line is appended)."""
        if not self.can_judge():
            return self.error_page(request, 403, "Read-only server",
                                   "this server is read-only: judgements are not accepted.")
        if not _same_origin(request):
            return self.error_page(request, 403, "Refused", "an undo must be posted from this site's own pages.")
        form = await request.form()
        if not self._token_ok(request, str(form.get("token", ""))):
            return self.error_page(request, 403, "Token needed", "this server needs its token to change judgements.",
                                   "ask the person serving the KG for it")
        try:
            undo, undone = J.undo_last(self.judgements_file, str(form.get("judge", "")))
        except ConfigError as exc:
            return self.error_page(request, 409 if "nothing to undo" in exc.message else 400, "Nothing undone",
                                   exc.message)
        if _wants_json(request):
            return JSONResponse({"recorded": undo.model_dump(mode="json"), "undone": undone.model_dump(mode="json")},
                                status_code=201)
        if form.get("from") == "queue":
            return RedirectResponse("/queue?" + urlencode({"judge": undo.judge, "undone": undone.verdict}),
                                    status_code=303)
        target = undone.edge_id if undone.edge_id in self.view().edges else None
        where = f"/edge/{target}?" if target else "/queue?"
        anchor = f"#m-{undone.mention_id}" if target and undone.mention_id else ""
        return RedirectResponse(where + urlencode({"judge": undo.judge, "undone": undone.verdict}) + anchor,
                                status_code=303)

    async def graph(self, request: Request) -> Response:
        v = self.view()
        node = v.node(request.path_params["qid"])
        if node is None:
            return self.error_page(request, 404, "Concept not found", f"{request.path_params['qid']} is not a concept of this KG.")
        return self.render(request, "graph.html", view=v, node=node, levels=LEVELS)

    async def api_graph(self, request: Request) -> Response:
        v = self.view()
        qid = request.path_params["qid"]
        if v.node(qid) is None:
            return JSONResponse({"error": f"{qid} is not a concept of this KG"}, status_code=404)
        level = request.query_params.get("level", "")
        return JSONResponse(v.graph_elements(qid, min_support=_int_param(request, "min_support", 0, 0, 1_000_000),
                                             level=level if level in LEVELS else ""))

    async def paths(self, request: Request) -> Response:
        v = self.view()
        a = request.query_params.get("from", "").strip()
        b = request.query_params.get("to", "").strip()
        source, target = self._resolve(v, a), self._resolve(v, b)
        found = v.paths(source.qid, target.qid) if source and target else None
        hops = {e.edge_id: v.best_evidence(e) for ps in (found or {}).values() for p in ps for e in p}
        same = bool(found) and _path_ids(found["shortest"]) == _path_ids(found["best_supported"])
        if _page_format(request) == "json":
            def path_json(p: list) -> dict[str, Any]:
                return {"steps": len(p), "weakest": min(e.support.sentences for e in p),
                        "cost": round(sum(1.0 / max(1, e.support.sentences) for e in p), 4),
                        "edges": [{**edge_summary(v, e), "evidence": _hop_json(hops.get(e.edge_id))} for e in p]}

            return JSONResponse({"from": source.to_json() if source else None, "to": target.to_json() if target else None,
                                 "query": {"from": a, "to": b}, "same": same,
                                 "shortest": [path_json(p) for p in (found or {}).get("shortest", [])],
                                 "best_supported": [path_json(p) for p in (found or {}).get("best_supported", [])]},
                                status_code=200 if (not a or source) and (not b or target) else 404)
        return self.render(request, "paths.html", view=v, a=a, b=b, source=source, target=target, found=found,
                           hops=hops, same=same)

    @staticmethod
    def _resolve(v: KGView, text: str):
        if not text:
            return None
        node = v.node(text.upper()) if is_qid(text.upper()) else None
        if node is None:
            hits = v.search(text, limit=1)
            node = hits[0] if hits else None
        return node

    async def queue(self, request: Request) -> Response:
        v = self.view()
        judged, _ = J.read_judgements(self.judgements_file)
        todo = J.queue(v.edges.values(), judged, self.s.queue_seed)
        e = todo[0] if todo else None
        m = best_mention(e, v.edges) if e is not None else None
        from causalkg.evaluation.wikicausal.human import edge_verdicts
        from causalkg.evaluation.wikicausal.precision import wilson_interval

        pairs = {(x.cause.id[0], x.effect.id[0]) for x in v.edges.values()}
        verdicts = {p: x for p, x in edge_verdicts(judged).items() if p in pairs}
        correct = sum(1 for x in verdicts.values() if x == "correct")
        wrong = sum(1 for x in verdicts.values() if x == "wrong")
        lo, hi = wilson_interval(correct, correct + wrong)
        estimate = {"judged": len(verdicts), "correct": correct, "wrong": wrong,
                    "precision": correct / (correct + wrong) if correct + wrong else None, "low": lo, "high": hi}
        via = None
        if e is not None and m is not None and m not in e.mentions:
            via = next((x for x in v.instance_edges(e) if m in x.mentions), None)
        return self.render(request, "queue.html", view=v, e=e, m=m, pieces=highlight(m) if m else [], via=via,
                           snapshot=snapshot_note(m) if m else None, undone=request.query_params.get("undone"),
                           revision=revision_url(m) if m else None, left=len(todo), total=len(v.edges),
                           estimate=estimate, judge=request.query_params.get("judge", ""),
                           saved=request.query_params.get("saved"), seed=self.s.queue_seed)

    async def report(self, request: Request) -> Response:
        root = _data(self.s.cfg) / "eval"
        md = root / "report.md"
        # The server's own paths are not shown to whoever reads the page: the file is named
        # relative to the data folder (paths.data), which is what the commands write into.
        shown = "eval/report.md under the data folder (paths.data, data/ by default)"
        if not md.is_file():
            if _wants_json(request):
                return JSONResponse({"error": "no evaluation report yet",
                                     "hint": "run make eval, or causalkg eval report, then reload"}, status_code=404)
            return self.render(request, "report.html", status=404, body=None, path=shown, kg_ready=self._kg_ready())
        html = render_markdown(md.read_text(encoding="utf-8"), "/report/files/")
        return self.render(request, "report.html", body=html, path=shown)

    def _kg_ready(self) -> bool:
        try:
            return len(self.view()) > 0
        except CausalKGError:
            return False

    async def report_file(self, request: Request) -> Response:
        # The requested name is looked up in a listing of the report's folder: it never becomes a path.
        files = report_files(_data(self.s.cfg) / "eval")
        path = files.get(request.path_params["name"])
        if path is None:
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(path)

    # --- SPARQL ----------------------------------------------------------------------------

    def run_sparql(self, query: str, *, default_graph: str | None = None, union: bool = False) -> SparqlResult:
        from causalkg.kg import rdf

        return run_query(self.store_folder, query, default_graph=default_graph or self.s.cfg["kg"]["graph"],
                         timeout=self.s.query_timeout, cap=self.s.result_cap, prefixes=dict(rdf.PREFIXES),
                         union=union, pool=self.pool)

    def _cors(self, request: Request) -> dict[str, str]:
        """CORS headers for a request whose Origin is one of ``web.cors_origins`` (none otherwise)."""
        origin = request.headers.get("origin", "")
        allowed = self.s.cors_origins
        if not origin or not allowed:
            return {}
        expose = {"Access-Control-Expose-Headers": "X-Result-Cap, X-Results-Truncated"}
        if "*" in allowed:
            return {"Access-Control-Allow-Origin": "*", **expose}
        if origin in allowed:
            return {"Access-Control-Allow-Origin": origin, **expose}
        return {}

    async def sparql(self, request: Request) -> Response:
        """The SPARQL 1.1 Protocol endpoint (query operation only), with CORS when configured."""
        if request.method == "OPTIONS":
            headers = self._cors(request)
            if headers:
                headers.update({"Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                                "Access-Control-Allow-Headers": "Content-Type, Accept",
                                "Access-Control-Max-Age": str(CORS_MAX_AGE)})
            return Response(status_code=204, headers={"Allow": "GET, POST, OPTIONS", **headers})
        response = await self._sparql(request)
        response.headers.update(self._cors(request))
        response.headers["Vary"] = "Accept, Origin" if self.s.cors_origins else "Accept"
        return response

    async def _sparql(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        params = dict(request.query_params)
        query: str | None = params.get("query")
        if request.method == "POST":
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype == "application/sparql-update":
                return _sparql_error(403, "updates are refused: this endpoint is read-only")
            if ctype == "application/sparql-query":
                query = (await request.body()).decode("utf-8", "replace")
            elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
                form = await request.form()
                if "update" in form:
                    return _sparql_error(403, "updates are refused: this endpoint is read-only")
                query = str(form.get("query")) if form.get("query") is not None else None
                params.update({k: str(v) for k, v in form.items() if k != "query"})
            else:
                return _sparql_error(415, f"unsupported content type {ctype!r}: send application/sparql-query "
                                          "or a form with query=")
        if "update" in params:
            return _sparql_error(403, "updates are refused: this endpoint is read-only")
        if not query:
            return _sparql_error(400, "no query: pass query=... (GET or POST), see /query for examples")
        graphs = request.query_params.getlist("default-graph-uri")
        if len(graphs) > 1:
            return _sparql_error(400, "one default-graph-uri at most")
        fmt, accept = params.get("format", ""), request.headers.get("accept", "")
        try:
            form = query_form(query)
            if form is not None:  # refuse what cannot be given before running the query
                negotiate(form, accept, fmt)
            res = await run_in_threadpool(self.run_sparql, query, default_graph=graphs[0] if graphs else None,
                                          union=params.get("union", "") in ("1", "true"))
            name, media = negotiate(res.kind, accept, fmt)
            if res.kind == "graph":
                from causalkg.kg import rdf

                body = to_graph_text(res, name, dict(rdf.PREFIXES))
            else:
                body = {"json": to_json, "xml": to_xml, "csv": to_csv, "tsv": to_tsv}[name](res)
            if media.startswith("text/") or media.endswith("xml"):
                media += "; charset=utf-8"
        except QueryError as exc:
            return _sparql_error(exc.status, str(exc))
        headers = {"X-Result-Cap": str(res.cap)}
        if res.truncated:
            headers["X-Results-Truncated"] = "true"
        return Response(body, media_type=media, headers=headers)

    async def query_page(self, request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        from causalkg.kg.rdf import PREFIXES as RDF_PREFIXES

        example = by_name(request.query_params.get("example", ""))
        query = request.query_params.get("query", "") or (example.query if example else "")
        result, error, hint, status = None, None, None, 200
        if query and (request.query_params.get("run") or example):
            try:
                result = await run_in_threadpool(self.run_sparql, query)
            except QueryError as exc:
                error, hint, status = exc.message, exc.hint, exc.status
        return self.render(request, "query.html", status=status, query=query, examples=EXAMPLES, result=result,
                           error=error, hint=hint, current=example.name if example else "",
                           labels=self.result_labels(result), prefixes=dict(RDF_PREFIXES),
                           timeout=self.s.query_timeout, cap=self.s.result_cap)

    def result_labels(self, result: SparqlResult | None) -> dict[str, str]:
        """The KG's labels of the concepts (``wd:Q...``) a query result names, by QID."""
        if result is None:
            return {}
        terms = [t for r in result.rows for t in r.values()] + [t for tr in result.triples for t in tr]
        qids = {t["value"].rsplit("/", 1)[1] for t in terms
                if t["type"] == "uri" and t["value"].startswith("http://www.wikidata.org/entity/Q")}
        try:
            concepts = self.view().concepts
        except CausalKGError:
            return {}
        return {q: concepts[q].label for q in qids if q in concepts and getattr(concepts[q], "label", "")}

    async def healthz(self, request: Request) -> Response:
        try:
            n = len(self.view())
            return JSONResponse({"ok": True, "edges": n})
        except CausalKGError as exc:
            return JSONResponse({"ok": False, "error": str(exc)}, status_code=503)


# --- small helpers -------------------------------------------------------------------------------


def edge_summary(v: KGView, e) -> dict[str, Any]:  # noqa: ANN001
    """An edge as the JSON forms of the pages list it."""
    return {"edge_id": e.edge_id,
            "cause": {"qid": e.cause.id[0], "label": e.cause.label, "kind": e.cause_kind},
            "effect": {"qid": e.effect.id[0], "label": e.effect.label, "kind": e.effect_kind},
            "level": e.level, "sentences": e.support.sentences, "documents": e.support.documents,
            "best_score": e.score.best, "confidence": e.confidence, "base_kg": v.confirmed(e),
            "extractors": v.extractors(e), "url": f"/edge/{e.edge_id}"}


def _path_ids(paths: list) -> list[list[str]]:
    return [[e.edge_id for e in p] for p in paths]


def _hop_json(ev) -> dict[str, Any] | None:  # noqa: ANN001
    if ev is None:
        return None
    m = ev.mention
    return {"text": m.sentence.text, "kind": ev.kind, "cause_text": m.cause.text, "effect_text": m.effect.text,
            "page": m.title, "page_url": m.url, "mention_id": m.mention_id,
            "from_edge": ev.origin.edge_id if ev.origin is not None else None}


def evidence_json(r: dict[str, Any]) -> dict[str, Any]:
    """One evidence entry of the edge page as its JSON form gives it."""
    m, ev = r["m"], r["ev"]
    return {"mention_id": m.mention_id, "kind": ev.kind, "field": ev.field_name, "text": m.sentence.text,
            "section": m.sentence.section, "cause_text": m.cause.text, "effect_text": m.effect.text,
            "page": m.title, "page_url": m.url, "revision_id": m.revision_id, "revision_url": r["revision"],
            "snapshot_revision": r["snapshot"] is not None, "extractors": ev.extractors, "score": m.score,
            "model": m.model, "question": m.question,
            "from_edge": r["origin"].edge_id if r["origin"] is not None else None,
            "duplicates": [x.mention_id for x in ev.duplicates],
            "judgements": [j.model_dump(mode="json") for j in r["judgements"]]}


def _fmt_score(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.2f}"


def _int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    try:
        value = int(request.query_params.get(name, default))
    except ValueError:
        return default
    return max(lo, min(hi, value))


def _page_format(request: Request) -> str:
    """``format=json|csv`` of a page's query string (``html`` otherwise)."""
    fmt = request.query_params.get("format", "").strip().lower()
    return fmt if fmt in ("json", "csv") else "html"


def _wants_json(request: Request) -> bool:
    if request.query_params.get("format", "").strip().lower() == "json":
        return True
    return request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", "").split(",")[0]


def _same_origin(request: Request) -> bool:
    """A POST from another site (its Origin or Referer names another scheme or host) is refused."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin or origin == "null":
        return origin != "null"
    parts = urlsplit(origin)
    return parts.scheme == request.url.scheme and parts.netloc == request.headers.get("host", "")


def _sparql_error(status: int, message: str) -> Response:
    return PlainTextResponse(f"error: {message}\n", status_code=status)


def report_files(root: Path) -> dict[str, Path]:
    """The images under the report's folder by their relative name (``precision/precision.png``)."""
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*")
            if p.suffix.lower() in (".png", ".svg", ".jpg") and p.is_file() and not p.is_symlink()}


def render_markdown(text: str, image_base: str) -> str:
    """Markdown to HTML (raw HTML in the text is escaped, not passed through); relative image
    links point under ``image_base``."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    for tok in tokens:
        for child in tok.children or []:
            if child.type == "image":
                src = str(child.attrGet("src") or "")
                if src and not urlsplit(src).scheme and not src.startswith("/"):
                    child.attrSet("src", image_base + src.removeprefix("./"))
    return md.renderer.render(tokens, md.options, {})


# --- the application -----------------------------------------------------------------------------


def create_app(cfg: Config, *, kg: str | None = None, store: str | None = None, judgements: str | None = None,
               read_only: bool = False, token: str | None = None, allowed_hosts: list[str] | None = None,
               query_timeout: float | None = None, result_cap: int | None = None) -> Starlette:
    """The web application over the KG of ``cfg`` (``<paths.data>/kg``, ``store``, the
    judgements file). Settings not given come from ``[web]`` of the configuration."""
    web = cfg["web"]
    settings = Settings(
        cfg, kg=kg, store=store, judgements=judgements, read_only=read_only, token=token or None,
        query_timeout=float(query_timeout if query_timeout is not None else web["query_timeout"]),
        result_cap=int(result_cap if result_cap is not None else web["result_cap"]),
        queue_seed=int(web["queue_seed"]), allowed_hosts=allowed_hosts,
        cors_origins=[str(o).rstrip("/") for o in web.get("cors_origins", [])],
    )
    if settings.query_timeout <= 0 or settings.result_cap < 1:
        raise ConfigError("web.query_timeout must be > 0 and web.result_cap at least 1")
    w = WebApp(settings)

    async def on_source_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, CausalKGError)
        status = 503 if isinstance(exc, SourceError) else 400
        title = "No KG to show" if isinstance(exc, SourceError) else "Cannot show this"
        return w.error_page(request, status, title, exc.message, exc.hint)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return w.error_page(request, exc.status_code, "Not found" if exc.status_code == 404 else "Error",
                            str(exc.detail))

    async def on_error(request: Request, exc: Exception) -> Response:
        log.exception("error on %s", request.url.path)
        return w.error_page(request, 500, "Something went wrong",
                            f"the server could not answer this request ({type(exc).__name__}).",
                            "the server's log has the details")

    async def security_headers(request: Request, call_next):  # noqa: ANN001
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy",
                                    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                                    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    routes = [
        Route("/", w.home),
        Route("/search", w.search_page),
        Route("/edges", w.edges),
        Route("/api/search", w.api_search),
        Route("/concept/{qid}", w.concept),
        Route("/edge/{edge_id}", w.edge),
        Route("/edge/{edge_id}/judge", w.judge, methods=["POST"]),
        Route("/judgements/undo", w.undo, methods=["POST"]),
        Route("/graph/{qid}", w.graph),
        Route("/api/graph/{qid}", w.api_graph),
        Route("/paths", w.paths),
        Route("/sparql", w.sparql, methods=["GET", "POST", "OPTIONS"]),
        Route("/query", w.query_page),
        Route("/queue", w.queue),
        Route("/report", w.report),
        Route("/report/files/{name:path}", w.report_file),
        Route("/healthz", w.healthz),
        Mount("/static", app=StaticFiles(directory=str(STATIC_DIR), follow_symlink=False), name="static"),
    ]
    from starlette.middleware.base import BaseHTTPMiddleware

    middleware = [Middleware(BaseHTTPMiddleware, dispatch=security_headers)]
    if allowed_hosts:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):  # noqa: ANN202
        try:
            yield
        finally:
            w.pool.close()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                    exception_handlers={CausalKGError: on_source_error, HTTPException: on_http, Exception: on_error})
    app.state.web = w
    return app


__all__ = ["create_app", "Settings", "render_markdown", "report_files"]
