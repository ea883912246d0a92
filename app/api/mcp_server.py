"""The Model Context Protocol server (the official ``mcp`` SDK's FastMCP): tools
``search_literature``, ``ask``, ``get_article`` and ``export_citations`` over the same engine as
the JSON API. Two transports:

- stdio: ``python -m app mcp`` (an MCP client such as Claude Desktop starts it; it loads the
  index and model in that process);
- streamable HTTP at ``/api/mcp`` on the chat server (``serve``) or ``python -m app api``, behind
  the API's keys and rate limit (:class:`McpGate`), answering in the server's one queue.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any, Literal

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.context import current
from app.api.engine import article_record, export_text
from app.api.schemas import FilterSpec, HistoryTurn, SearchResponse, search_response
from chains.modes import mode_names
from chains.record import Links, answer_record
from chains.result import DoneEvent

log = logging.getLogger("app.api.mcp")

MCP_PATH = "/api/mcp"
INSTRUCTIONS = (
    "Search and answer questions from an index of PubMed abstracts. search_literature ranks "
    "articles without a language model; ask answers with numbered [n] citations of PubMed "
    "articles; get_article gives one article's abstract and metadata; export_citations gives "
    "references as RIS, BibTeX or Vancouver text. Every result carries PMIDs and PubMed links.")


class CitedSource(BaseModel):
    n: int
    pmid: str
    title: str
    year: int | None = None
    journal: str = ""
    design: str | None = None
    stance: str | None = None
    retracted: bool = False
    links: Links
    reference: str


class AskResult(BaseModel):
    answer: str = Field(description="the answer; [n] cites sources[n-1]")
    verdict: str | None = Field(None, description="yes / no / maybe, when decided")
    verdict_reason: str = ""
    key_findings: list[str] = Field(default_factory=list, description="'sentence [n]'")
    sources: list[CitedSource]
    searched_question: str


class Citations(BaseModel):
    format: str
    text: str


def _tool_error(err: Exception) -> ToolError:
    if isinstance(err, RequestValidationError):
        first = err.errors()[0]
        return ToolError(f"{'.'.join(str(p) for p in first['loc'][1:])}: {first['msg']}")
    if isinstance(err, HTTPException):
        return ToolError(f"{err.status_code}: {err.detail}")
    return ToolError(str(err))


def build_mcp() -> FastMCP:
    mcp = FastMCP(
        "pubmed-assistant", instructions=INSTRUCTIONS, streamable_http_path=MCP_PATH,
        stateless_http=True, json_response=True,
        # the API's own checks (app.api.access) guard the route: loopback Host and Origin
        # without keys, a key otherwise
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @mcp.tool(description="Rank PubMed articles for a query (BM25 + dense retrieval fused), "
              "without a language model. Filters restrict years, authors, designs, journals.")
    async def search_literature(
        query: Annotated[str, Field(description="what to look for", min_length=1)],
        k: Annotated[int, Field(ge=1, le=50, description="articles returned")] = 10,
        filters: FilterSpec | None = None,
    ) -> SearchResponse:
        ctx = current()
        try:
            text = ctx.engine.question(query, "query")
            searched, active, sources = await ctx.engine.search(
                text, filters.to_filters() if filters else None, k)
        except (HTTPException, RequestValidationError) as err:
            raise _tool_error(err) from None
        return search_response(searched, active.as_dict(),
                               ctx.engine.index_state() == "hybrid", sources)

    @mcp.tool(description="Answer a biomedical question from the indexed PubMed abstracts, "
              "citing them as [n]; for a yes/no question, a verdict from the sources' stances.")
    async def ask(
        question: Annotated[str, Field(description="the question", min_length=1)],
        mode: Annotated[str | None, Field(description=f"one of {', '.join(mode_names())}")]
        = None,
        history: Annotated[list[HistoryTurn] | None,
                           Field(description="earlier turns (follow-ups)")] = None,
        filters: FilterSpec | None = None,
    ) -> AskResult:
        ctx = current()
        try:
            if mode is not None and mode not in mode_names():
                raise ToolError(f"mode: unknown mode {mode!r}: use one of "
                                f"{', '.join(mode_names())}")
            text = ctx.engine.question(question)
            turns = [(t.question, t.answer) for t in history or []]
            ticket, assistant = await ctx.engine.admitted()
            result = None
            async for event in ctx.engine.events(
                    ticket, assistant, text, mode or ctx.cfg.chains.mode, turns,
                    filters.to_filters() if filters else None):
                if isinstance(event, DoneEvent):
                    result = event.result
        except (HTTPException, RequestValidationError) as err:
            raise _tool_error(err) from None
        if result is None:
            raise ToolError("the answer stream ended without a result")
        record = answer_record(result)
        return AskResult(
            answer=record.answer, verdict=record.verdict, verdict_reason=record.verdict_reason,
            key_findings=[f"{' '.join(e.text.split())} [{n}]" for n, e in result.key_findings()],
            searched_question=record.searched_question,
            sources=[CitedSource(n=s.n, pmid=s.pmid, title=s.title, year=s.year,
                                 journal=s.journal, design=s.design, stance=s.stance,
                                 retracted=s.retracted, links=s.links, reference=s.reference)
                     for s in record.sources])

    @mcp.tool(description="One indexed PubMed article: abstract, authors, journal, year, DOI, "
              "PMC id, study design (and the rule that set it), MeSH terms, retraction flag.")
    async def get_article(
        pmid: Annotated[str, Field(pattern=r"^\d{1,9}$", description="a PubMed id")],
    ) -> dict[str, Any]:
        try:
            source = await current().engine.article(pmid)
        except HTTPException as err:
            raise _tool_error(err) from None
        data = article_record(source)
        data["links"] = data["links"].model_dump()
        return data

    @mcp.tool(description="References of indexed PubMed articles as RIS, BibTeX or Vancouver.")
    async def export_citations(
        pmids: Annotated[list[Annotated[str, Field(pattern=r"^\d{1,9}$")]],
                         Field(min_length=1, max_length=100)],
        format: Literal["ris", "bibtex", "vancouver"] = "ris",
    ) -> Citations:
        try:
            sources = await current().engine.articles(list(dict.fromkeys(pmids)))
        except HTTPException as err:
            raise _tool_error(err) from None
        return Citations(format=format, text=export_text(sources, format))

    return mcp


class McpGate:
    """The streamable-HTTP transport behind the API's checks (key, rate limit, local-only),
    with the SDK's session manager started on the first request (its task group lives in a task
    of the server's loop for the rest of the process)."""

    def __init__(self, manager: StreamableHTTPSessionManager, app: ASGIApp) -> None:
        self.manager = manager
        self.app = app
        self._running: asyncio.Task[None] | None = None
        self._started = asyncio.Event()

    async def _hold(self) -> None:
        async with self.manager.run():
            self._started.set()
            await asyncio.Event().wait()  # until the process ends

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from starlette.datastructures import Headers

        try:
            client = scope.get("client")
            current().access.identify(Headers(scope=scope), client[0] if client else None)
        except HTTPException as err:
            response = JSONResponse({"detail": err.detail}, status_code=err.status_code,
                                    headers=dict(err.headers or {}))
            await response(scope, receive, send)
            return
        if self._running is None:
            self._running = asyncio.get_running_loop().create_task(self._hold())
        await self._started.wait()
        await self.app(scope, receive, send)


def http_route(mcp: FastMCP) -> Any:
    """The ``/api/mcp`` route for the server's app (or the API's own)."""
    from mcp.server.fastmcp.server import StreamableHTTPASGIApp
    from starlette.routing import Route

    mcp.streamable_http_app()  # makes the session manager
    manager = mcp.session_manager
    return Route(MCP_PATH, endpoint=McpGate(manager, StreamableHTTPASGIApp(manager)),
                 methods=["GET", "POST", "DELETE"])
