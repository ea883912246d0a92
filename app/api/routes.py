"""The JSON API, ``/api/v1``: ask (whole answer record, or Server-Sent Events), search without the
model, stored articles, citation export, the caller's conversations, health and readiness.
docs/api.md describes each route; the schema is at /api/openapi.json, the docs at /api/docs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.api.access import Caller
from app.api.context import ApiContext, caller, context
from app.api.engine import EXPORT_MIME, Ticket, export_text, field_error
from app.api.schemas import (
    AnswerRecord,
    Article,
    AskRequest,
    ConversationSummary,
    ConversationTurns,
    ExportFormat,
    Health,
    NewConversation,
    Ready,
    SearchRequest,
    SearchResponse,
    search_response,
)
from chains.record import answer_record, links
from chains.result import AnswerResult, DoneEvent, PreparedEvent, Source, TokenEvent

router = APIRouter(prefix="/api/v1", tags=["PubMed assistant"])
ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "no API key, or one never issued"},
    403: {"description": "a revoked key, or a request from a page that may not call"},
    422: {"description": "a field is wrong: the message names it"},
    429: {"description": "rate limit or full answer queue (see Retry-After)"},
    503: {"description": "the index and model are loading (see Retry-After), or cannot"},
}
PMID = Annotated[str, Path(pattern=r"^\d{1,9}$", description="a PubMed id")]

Ctx = Annotated[ApiContext, Depends(context)]
Who = Annotated[Caller, Depends(caller)]


@router.get("/health", response_model=Health, summary="the server is alive")
async def health() -> Health:
    return Health()


@router.get("/ready", response_model=Ready, summary="index state, model loaded, queue length")
async def ready(ctx: Ctx, response: Response) -> Ready:
    engine = ctx.engine
    state = engine.index_state()
    loaded = engine.backend.loaded
    reason = ""
    if not loaded:
        reason = (f"the assistant cannot start: {engine.backend.load_error}"
                  if engine.backend.load_error else "the index and the model are loading")
        response.status_code = 503
    return Ready(ready=loaded, reason=reason, index=state,
                 model_loaded=loaded, model=engine.model_label,
                 queue=engine.queue_length(), max_queue=ctx.cfg.api.max_queue)


def _sse(event: str, data: Any) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=event, sep="\n")


def _brief(source: Source) -> dict[str, Any]:
    return {"n": source.n, "pmid": source.pmid, "title": source.title, "year": source.year,
            "journal": source.journal, "design": source.design, "retracted": source.retracted,
            "links": links(source.pmid, source.doi, source.pmc).model_dump()}


async def prepare_ask(ctx: ApiContext, who: Caller, body: AskRequest
                      ) -> tuple[Ticket, Any, str, str, list[tuple[str, str]]]:
    """Everything checked before any answer starts (so errors keep their status codes): the
    question, the history's size, the conversation's owner, the queue, the loaded assistant."""
    question = ctx.engine.question(body.question)
    mode = body.mode or ctx.cfg.chains.mode
    limit = ctx.cfg.api.max_history_turns
    if len(body.history) > limit:
        raise field_error(("history",), f"at most {limit} earlier turns (api.max_history_turns)")
    history = [(t.question, t.answer) for t in body.history]
    if body.conversation_id is not None:
        if body.history:
            raise field_error(("history",), "give either history or conversation_id, not both")
        history = await ctx.conversations.history(who.user, body.conversation_id,
                                                  ctx.cfg.chains.conversation_depth or limit)
    ticket, assistant = await ctx.engine.admitted()
    return ticket, assistant, question, mode, history


@router.post("/ask", response_model=AnswerRecord, responses=ERRORS,
             summary="answer a question: the whole answer record, or Server-Sent Events")
async def ask(body: AskRequest, ctx: Ctx, who: Who, request: Request) -> Any:
    ticket, assistant, question, mode, history = await prepare_ask(ctx, who, body)
    filters = body.filters.to_filters() if body.filters else None

    async def finish(result: AnswerResult) -> None:
        if body.conversation_id is not None:
            await ctx.conversations.add(who.user, body.conversation_id, question, result, mode)

    if body.stream:
        return EventSourceResponse(_ask_events(ctx, ticket, assistant, question, mode, history,
                                               filters, finish), ping=15, sep="\n")
    task = asyncio.ensure_future(_answer(ctx, ticket, assistant, question, mode, history,
                                         filters))
    while not task.done():  # a client gone while waiting or answering frees its place at once
        done, _ = await asyncio.wait({task}, timeout=0.5)
        if not done and await request.is_disconnected():
            task.cancel()
            raise HTTPException(499, "the client closed the connection")
    result = task.result()
    await finish(result)
    return answer_record(result)


async def _answer(ctx: ApiContext, ticket: Ticket, assistant: Any, question: str, mode: str,
                  history: list[tuple[str, str]], filters: Any) -> AnswerResult:
    result: AnswerResult | None = None
    async for event in ctx.engine.events(ticket, assistant, question, mode, history, filters):
        if isinstance(event, DoneEvent):
            result = event.result
    if result is None:
        raise HTTPException(500, "the answer stream ended without a result")
    return result


async def _ask_events(ctx: ApiContext, ticket: Ticket, assistant: Any, question: str, mode: str,
                      history: list[tuple[str, str]], filters: Any, finish: Any
                      ) -> AsyncIterator[ServerSentEvent]:
    """The answer as events; while the question waits its turn, ``queued`` events say how many
    come first. The answer runs in a task of its own: a client gone cancels it (and its place
    in the queue) at once."""
    out: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def on_wait(ahead: int) -> None:
        out.put_nowait(("queued", ahead))

    async def pump() -> None:
        try:
            async for event in ctx.engine.events(ticket, assistant, question, mode, history,
                                                 filters, on_wait):
                out.put_nowait(("event", event))
            out.put_nowait(("end", None))
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # noqa: BLE001 - said in the stream
            out.put_nowait(("error", err))

    task = asyncio.ensure_future(pump())
    try:
        while True:
            kind, item = await out.get()
            if kind == "end":
                return
            if kind == "queued":
                yield _sse("queued", {"ahead": item})
            elif kind == "error":
                status = item.status_code if isinstance(item, HTTPException) else 500
                detail = item.detail if isinstance(item, HTTPException) else (
                    str(item) or type(item).__name__)
                yield _sse("error", {"status": status, "detail": detail})
                return
            elif isinstance(item, PreparedEvent):
                yield _sse("search", {"searched_question": item.searched_question,
                                      "sub_queries": item.sub_queries, "filters": item.filters,
                                      "rewrite": item.rewrite})
                for source in item.sources:
                    for span in source.evidence:
                        yield _sse("finding", {"n": source.n, "pmid": source.pmid,
                                               "text": span.text, "section": span.section})
                yield _sse("sources", [_brief(s) for s in item.sources])
            elif isinstance(item, TokenEvent):
                yield _sse("token", {"text": item.text})
            elif isinstance(item, DoneEvent):
                try:
                    await finish(item.result)
                except HTTPException as err:  # answered, but not stored: said, then the answer
                    yield _sse("error", {"status": err.status_code, "detail": err.detail})
                yield _sse("result", answer_record(item.result).model_dump(mode="json"))
    finally:
        if not task.done():
            task.cancel()  # the client is gone: the answer (or the wait) stops on its own


@router.post("/search", response_model=SearchResponse, responses=ERRORS,
             summary="ranked articles for a query, no model call (BM25, dense, fused)")
async def search(body: SearchRequest, ctx: Ctx, who: Who) -> SearchResponse:
    query = ctx.engine.question(body.query, "query")
    searched, filters, sources = await ctx.engine.search(
        query, body.filters.to_filters() if body.filters else None, body.k)
    return search_response(searched, filters.as_dict(), ctx.engine.index_state() == "hybrid",
                           sources)


@router.get("/articles/{pmid}", response_model=Article, responses={404: {}, **ERRORS},
            summary="the stored record of one article")
async def article(pmid: PMID, ctx: Ctx, who: Who) -> Any:
    from app.api.engine import article_record

    return article_record(await ctx.engine.article(pmid))


@router.get("/export", responses={404: {}, **ERRORS}, response_class=Response,
            summary="references of PMIDs as RIS, BibTeX or Vancouver text")
async def export(ctx: Ctx, who: Who,
                 pmids: Annotated[str, Query(pattern=r"^\d{1,9}(,\d{1,9}){0,99}$",
                                             description="comma-separated PMIDs")],
                 format: Annotated[ExportFormat, Query()] = "ris") -> Response:
    sources = await ctx.engine.articles(list(dict.fromkeys(pmids.split(","))))
    return Response(export_text(sources, format), media_type=EXPORT_MIME[format])


@router.get("/conversations", response_model=list[ConversationSummary], responses=ERRORS,
            summary="your stored conversations (the key's user)")
async def conversations(ctx: Ctx, who: Who) -> Any:
    return await ctx.conversations.of_user(who.user)


@router.post("/conversations", response_model=ConversationSummary, responses=ERRORS,
             summary="start a stored conversation (ask with its id)")
async def new_conversation(body: NewConversation, ctx: Ctx, who: Who) -> Any:
    return {"id": await ctx.conversations.create(who.user, body.name), "name": body.name}


@router.get("/conversations/{conversation_id}", response_model=ConversationTurns,
            responses={404: {}, **ERRORS}, summary="one of your conversations: its answers")
async def conversation(conversation_id: Annotated[str, Path(max_length=64)], ctx: Ctx,
                       who: Who) -> Any:
    return {"id": conversation_id,
            "turns": await ctx.conversations.turns(who.user, conversation_id)}
