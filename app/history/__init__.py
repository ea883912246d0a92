"""Chat history: Chainlit's SQLAlchemy data layer on SQLite (or any SQLAlchemy URL), resumed
conversations, the answer records feedback is exported with (docs/history.md).

app/ui.py calls :func:`install` once at import; the database is opened on first use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from app.history.store import HistoryStore
from app.history.turns import (
    ANSWER_KEY,
    MODE_KEY,
    QA,
    answer_record,
    followup_history,
    history_of,
    rebuild_history,
    stored_mode,
)
from settings.config import Config

log = logging.getLogger("app.history")

UNAVAILABLE_TEXT = ("History is unavailable right now, so this conversation is not being saved "
                    "(answers are not affected).")
_NOTICE_KEY = "history_notice_shown"


def install(get_config: Callable[[], Config]) -> None:
    """Register the data layer with Chainlit (made when Chainlit first asks for it), and the
    check that a rating is for one's own answer (:mod:`.ownership`)."""
    import chainlit as cl

    from app.history import ownership

    ownership.install()

    @cl.data_layer
    def _layer() -> Any:  # Chainlit calls it once; None means no history
        cfg = get_config()
        if not cfg.history.enabled:
            return None
        return HistoryStore.from_config(cfg)


def current_store() -> HistoryStore | None:
    from chainlit.data import get_data_layer

    layer = get_data_layer()
    return layer if isinstance(layer, HistoryStore) else None


async def store_question(message: Any) -> None:
    """Store the user's question now, before any work on it. Chainlit stores it in a background
    task that starts after the page already shows the question as being answered, so a server
    killed at that moment lost it (seen in a test that kills the server there). The write is
    Chainlit's own upsert by step id, so its later write of the same step changes nothing.
    A failed write is the store's to report (it says so once in the chat); never raised."""
    store = current_store()
    if store is None or not getattr(message, "thread_id", None):
        return
    try:
        await store.write_step(message.to_dict())
    except Exception:  # the answer matters more than its record
        log.warning("the question could not be stored before answering", exc_info=True)


def resumed(thread: dict[str, Any], default_mode: str, limit: int) -> tuple[str, list[QA]]:
    """(mode, conversational history) of a reopened conversation, from what is stored."""
    return stored_mode(thread, default_mode), rebuild_history(thread, limit)


async def conversation_history(memory: list[QA], limit: int) -> list[QA]:
    """The turns this chat session's next question is answered with: the conversation as
    stored now when history is on (so a second tab on it continues from what the first added),
    else the session's ``memory`` (:func:`app.history.turns.followup_history` decides)."""
    import chainlit as cl

    store = current_store()
    if store is None:
        return followup_history(memory, None, limit)
    records = await store.answer_records(cl.context.session.thread_id)
    stored = None if records is None else history_of(records)
    turns = followup_history(memory, stored, limit)
    if stored is not None and turns != memory[-limit:]:
        log.info("history: continuing from the stored conversation (%d turns; this chat "
                 "remembered %d)", len(stored), len(memory))
    return turns


async def after_answer(mode: str) -> None:
    """Keep the conversation's mode with it (so a reopened conversation, even after a server
    restart, continues in it), and tell the user once when history is not being saved."""
    import chainlit as cl

    store = current_store()
    if store is None:
        return
    thread_id = cl.context.session.thread_id
    if thread_id:
        await store.update_thread(thread_id, metadata={MODE_KEY: mode})
    if store.problem and not cl.user_session.get(_NOTICE_KEY):
        cl.user_session.set(_NOTICE_KEY, True)
        log.warning("told the user history is unavailable: %s", store.problem)
        await cl.Message(content=UNAVAILABLE_TEXT).send()


__all__ = ["ANSWER_KEY", "MODE_KEY", "QA", "UNAVAILABLE_TEXT", "HistoryStore", "after_answer",
           "answer_record", "conversation_history", "current_store", "followup_history",
           "install", "rebuild_history", "resumed", "stored_mode"]
