"""Ratings only on one's own answers.

Chainlit 2.12's ``PUT /feedback`` and ``DELETE /feedback`` (chainlit/server.py) hand the rating
to the data layer without asking whose answer it is: a signed-in user who knows a step id (or a
feedback id) of another user's conversation could rate or un-rate that answer, and the export
would carry it. :func:`install` adds :class:`FeedbackOwnership` to Chainlit's app, a plain ASGI
middleware in front of both routes (not a route of its own: how FastAPI keeps an included
router's routes differs between its versions, and FastAPI is not pinned here). It resolves the
user as Chainlit's routes do (``chainlit.auth``'s token from the cookie or the bearer header,
then ``get_current_user``) and lets the request through only when the rated step, and a stored
rating being replaced or deleted, are in a conversation of that user. Anything else is answered
404, as a missing step is (an id of another user's conversation is not told apart from an
unknown one). A body Chainlit would refuse (422) goes through untouched.
"""

from __future__ import annotations

import logging

from chainlit.types import DeleteFeedbackRequest, UpdateFeedbackRequest
from fastapi import HTTPException
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.history.store import HistoryStore, HistoryUnreadable

log = logging.getLogger("app.history")

NOT_FOUND = "Message not found"


def _unavailable() -> HTTPException:
    return HTTPException(status_code=503, detail="History is unavailable")


async def check_own_step(layer: HistoryStore, identifier: str, step_id: str) -> None:
    """Nothing when step ``step_id`` is in a conversation of ``identifier``, else a 404."""
    try:
        thread_id = await layer.step_thread(step_id)
    except HistoryUnreadable:  # the database cannot be read now: nothing can be checked
        raise _unavailable() from None
    if thread_id and await layer.get_thread_author(thread_id) == identifier:
        return
    log.warning("feedback refused: step %s is not in a conversation of %r", step_id[:64],
                identifier[:64])
    raise HTTPException(status_code=404, detail=NOT_FOUND)


async def stored_feedback_step(layer: HistoryStore, feedback_id: str) -> str | None:
    """The step a stored rating is for (None: no such rating)."""
    rows = await layer.execute_sql('SELECT "forId" AS for_id FROM feedbacks WHERE "id" = :id',
                                   {"id": feedback_id})
    if not isinstance(rows, list):
        raise _unavailable()
    return str(rows[0]["for_id"]) if rows and rows[0].get("for_id") else None


async def signed_in(request: Request) -> str:
    """The user's identifier, found as Chainlit's routes find it (401 when nobody is)."""
    from chainlit.auth import get_current_user, reuseable_oauth

    user = await get_current_user(await reuseable_oauth(request) or "")
    if user is None:  # no sign-in configured at all, which history always has
        raise HTTPException(status_code=401, detail="Unauthorized")
    return str(user.identifier)


async def check(request: Request, body: bytes) -> None:
    """Raise (HTTPException) unless this rating request is about the user's own answers."""
    from app.history import current_store

    layer = current_store()
    if layer is None:  # no history: Chainlit's route answers that itself
        return
    try:
        if request.method == "PUT":
            feedback = UpdateFeedbackRequest.model_validate_json(body).feedback
        else:
            feedback_id = DeleteFeedbackRequest.model_validate_json(body).feedbackId
    except ValidationError:
        return  # Chainlit refuses it (422) without touching the data layer
    identifier = await signed_in(request)
    if request.method == "PUT":
        await check_own_step(layer, identifier, feedback.forId)
        replaced = await stored_feedback_step(layer, feedback.id) if feedback.id else None
        if replaced is not None and replaced != feedback.forId:
            await check_own_step(layer, identifier, replaced)
        return
    step_id = await stored_feedback_step(layer, feedback_id)
    if step_id is None:
        raise HTTPException(status_code=404, detail="Feedback not found")
    await check_own_step(layer, identifier, step_id)


class FeedbackOwnership:
    """ASGI middleware: ``PUT``/``DELETE`` of ``path`` pass only after :func:`check`."""

    def __init__(self, app: ASGIApp, path: str = "/feedback") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("PUT", "DELETE") \
                or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        body = await request.body()
        try:
            await check(request, body)
        except HTTPException as err:
            response = JSONResponse({"detail": err.detail}, status_code=err.status_code,
                                    headers=err.headers)
            await response(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:  # the body read here, then whatever comes next
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _is_ours(factory: object) -> bool:
    """Whether a middleware entry is :class:`FeedbackOwnership` (installed already)."""
    return factory is FeedbackOwnership


def install() -> None:
    """Put :class:`FeedbackOwnership` in front of Chainlit's app (before it starts serving)."""
    import chainlit.server as cl_server

    app = cl_server.app
    if any(_is_ours(m.cls) for m in app.user_middleware):
        return
    app.add_middleware(FeedbackOwnership,
                       path=f"{cl_server.config.run.root_path.rstrip('/')}/feedback")
