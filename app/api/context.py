"""What the routes of this process share (one per process: the chat server's or ``app api``'s),
and the FastAPI dependencies that hand it and the caller to each route."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import HTTPException, Request

from app.api.access import Access, Caller
from app.api.conversations import Conversations
from app.api.engine import Engine
from settings.config import Config


@dataclass
class ApiContext:
    cfg: Config
    engine: Engine
    access: Access
    conversations: Conversations


_CURRENT: ApiContext | None = None


def set_context(ctx: ApiContext) -> None:
    global _CURRENT
    _CURRENT = ctx


def current() -> ApiContext:
    if _CURRENT is None:
        raise HTTPException(503, "the API is not set up in this process")
    return _CURRENT


def context() -> ApiContext:
    return current()


def caller(request: Request) -> Caller:
    """The caller of this request (401/403/429 when it may not call now)."""
    client = request.client.host if request.client else None
    return current().access.identify(request.headers, client)
