"""The OpenAI chat-completions protocol, so any OpenAI client or chat frontend (Open WebUI,
LibreChat) can use the assistant as a "model": base URL ``http://HOST:PORT/v1``.

- ``GET /v1/models``: one model per chain mode (``pubmed-plain``, ``pubmed-conversational``,
  ``pubmed-multi-query``), built from :data:`chains.modes.MODE_TABLE`.
- ``POST /v1/chat/completions``: the last user message is the question; the earlier user and
  assistant messages, paired, are the conversation history (system messages are ignored: the
  assistant has its own prompt). The reply's content is the answer with its ``[n]`` markers and
  the numbered sources under it; ``citations`` lists the sources' PubMed links in [n] order
  (the field Perplexity's API uses), ``sources`` the sources themselves. ``stream: true``
  answers in OpenAI's ``chat.completion.chunk`` events, ``data: [DONE]`` last.

Errors have OpenAI's shape (``{"error": {"message", "type", "param", "code"}}``) with the status
codes of the JSON API (422 naming the field, 401/403, 429 with Retry-After, 503).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from app.api.context import current
from app.api.engine import field_error
from chains.modes import MODE_TABLE, mode_names
from chains.result import AnswerResult, DoneEvent, Source, TokenEvent

router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])
MODEL_PREFIX = "pubmed-"
OWNER = "pubmed-assistant"
SOURCES_HEADING = "Sources:"
_SOURCES_TAIL = re.compile(r"\n+" + re.escape(SOURCES_HEADING) + r"\n.*\Z", re.DOTALL)


def model_id(mode: str) -> str:
    return MODEL_PREFIX + mode


def mode_of(model: str) -> str | None:
    name = model[len(MODEL_PREFIX):] if model.startswith(MODEL_PREFIX) else model
    return name if name in mode_names() else None


class TextPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str = ""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(p.text for p in self.content if p.type == "text")
        return self.content or ""


class ChatRequest(BaseModel):
    """OpenAI's request body; sampling options are accepted and ignored (the assistant's are
    set in cfg.yaml)."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False


def _error(status: int, message: str, param: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
            429: "rate_limit_error", 503: "service_unavailable"}.get(status,
                                                                      "invalid_request_error")
    return JSONResponse({"error": {"message": message, "type": kind, "param": param,
                                   "code": None}}, status_code=status, headers=headers)


def _from_exception(err: Exception) -> JSONResponse:
    if isinstance(err, RequestValidationError):
        first = err.errors()[0]
        param = ".".join(str(p) for p in first["loc"][1:])
        return _error(422, f"{param}: {first['msg']}", param)
    assert isinstance(err, HTTPException)
    return _error(err.status_code, str(err.detail), headers=dict(err.headers or {}))


def to_turns(messages: list[ChatMessage]) -> tuple[str, list[tuple[str, str]]]:
    """(question, history): the last user message, and the user/assistant pairs before it."""
    talk = [m for m in messages if m.role in ("user", "assistant")]
    if not talk or talk[-1].role != "user":
        raise field_error(("messages",), "the last message must be the user's question")
    history: list[tuple[str, str]] = []
    pending: str | None = None
    for message in talk[:-1]:
        if message.role == "user":
            pending = message.text()
        elif pending is not None:
            history.append((pending, _SOURCES_TAIL.sub("", message.text())))
            pending = None
    return talk[-1].text(), history


def sources_block(sources: list[Source]) -> str:
    if not sources:
        return ""
    lines = [f"[{s.n}] {s.title}" + (f" ({', '.join(str(x) for x in (s.journal, s.year) if x)})"
                                      if s.journal or s.year else "") + f" {s.url}"
             for s in sources]
    return f"\n\n{SOURCES_HEADING}\n" + "\n".join(lines)


def _extras(result: AnswerResult) -> dict[str, Any]:
    return {
        "citations": [s.url for s in sorted(result.sources, key=lambda s: s.n)],
        "sources": [{"n": s.n, "pmid": s.pmid, "title": s.title, "url": s.url, "year": s.year,
                     "journal": s.journal, "doi": s.doi, "design": s.design,
                     "retracted": s.retracted} for s in result.sources],
        "verdict": result.verdict,
        "searched_question": result.searched_question,
    }


@router.get("/models", summary="one model per chain mode")
async def models(request: Request) -> Any:
    try:
        current().access.identify(request.headers, request.client.host if request.client
                                  else None)
    except HTTPException as err:
        return _from_exception(err)
    created = int(time.time())
    return {"object": "list", "data": [
        {"id": model_id(spec.name), "object": "model", "created": created, "owned_by": OWNER,
         "description": spec.summary} for spec in MODE_TABLE]}


@router.post("/chat/completions", summary="answer the last user message (OpenAI protocol)")
async def chat_completions(body: ChatRequest, request: Request) -> Any:
    ctx = current()
    try:
        ctx.access.identify(request.headers, request.client.host if request.client else None)
        mode = mode_of(body.model)
        if mode is None:
            raise field_error(("model",), f"unknown model {body.model!r}: use one of "
                              f"{', '.join(model_id(m) for m in mode_names())}")
        question, history = to_turns(body.messages)
        question = ctx.engine.question(question, "messages")
        if len(history) > ctx.cfg.api.max_history_turns:
            raise field_error(("messages",), f"at most {ctx.cfg.api.max_history_turns} earlier "
                              "turns (api.max_history_turns)")
        ticket, assistant = await ctx.engine.admitted()
    except (HTTPException, RequestValidationError) as err:
        return _from_exception(err)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    events = ctx.engine.events(ticket, assistant, question, mode, history, None)
    if body.stream:
        return EventSourceResponse(_chunks(events, completion_id, created, body.model),
                                   ping=15, sep="\n")
    task = asyncio.ensure_future(_collect(events))
    while not task.done():  # a client gone frees its place in the queue at once
        done, _ = await asyncio.wait({task}, timeout=0.5)
        if not done and await request.is_disconnected():
            task.cancel()
            return _error(499, "the client closed the connection")
    result = task.result()
    return {"id": completion_id, "object": "chat.completion", "created": created,
            "model": body.model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": result.answer + sources_block(result.sources)}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            **_extras(result)}


async def _collect(events: AsyncIterator[Any]) -> AnswerResult:
    result = None
    async for event in events:
        if isinstance(event, DoneEvent):
            result = event.result
    if result is None:
        raise RuntimeError("the answer stream ended without a result")
    return result


async def _chunks(events: AsyncIterator[Any], completion_id: str, created: int,
                  model: str) -> AsyncIterator[ServerSentEvent]:
    def chunk(delta: dict[str, Any], finish: str | None = None,
              **extra: Any) -> ServerSentEvent:
        data = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                "model": model, "choices": [{"index": 0, "delta": delta,
                                             "finish_reason": finish}], **extra}
        return ServerSentEvent(data=json.dumps(data, ensure_ascii=False), sep="\n")

    yield chunk({"role": "assistant", "content": ""})
    shown = ""
    try:
        async for event in events:
            if isinstance(event, TokenEvent) and event.text:
                shown += event.text
                yield chunk({"content": event.text})
            elif isinstance(event, DoneEvent):
                result = event.result
                rest = result.answer[len(shown):] if result.answer.startswith(shown) else ""
                yield chunk({"content": rest + sources_block(result.sources)})
                yield chunk({}, "stop", **_extras(result))
    except asyncio.CancelledError:
        raise
    except Exception as err:  # the stream has started: said in the stream, OpenAI's way
        yield ServerSentEvent(data=json.dumps({"error": {"message": str(err) or type(err)
                                                         .__name__, "type": "server_error"}}),
                              sep="\n")
    yield ServerSentEvent(data="[DONE]", sep="\n")
