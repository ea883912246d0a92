"""A caller's stored conversations, in the chat's own history database (docs/history.md).

A key acts as its user: it lists, reads, continues and adds to that user's conversations only
(the thread's stored author is checked on every call; another user's conversation is answered
404, exactly as one that does not exist). An answer asked with a ``conversation_id`` is stored in
it as the chat stores one (the question, the answer with its record under ``pubmed_answer``), so
it shows in the chat's sidebar and a follow-up in the chat continues from it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException

from app.history.turns import ANSWER_KEY, MODE_KEY, QA, answer_record, history_of
from chains.result import AnswerResult
from settings.config import Config

if TYPE_CHECKING:
    from app.history.store import HistoryStore

StoreGetter = Callable[[], "HistoryStore | None"]
NOT_FOUND = "conversation not found"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class Conversations:
    def __init__(self, store: StoreGetter, cfg: Config) -> None:
        self._store = store
        self.cfg = cfg

    def store(self) -> HistoryStore:
        store = self._store()
        if store is None:
            raise HTTPException(404, "chat history is off on this server (history.enabled)")
        return store

    async def of_user(self, user: str) -> list[dict[str, Any]]:
        rows = await self.store().execute_sql(
            'SELECT "id", "name", "createdAt" AS created_at FROM threads '
            'WHERE "userIdentifier" = :user ORDER BY "createdAt" DESC LIMIT 200', {"user": user})
        if not isinstance(rows, list):
            raise HTTPException(503, "the chat history cannot be read now")
        return [{"id": r["id"], "name": r.get("name"), "created_at": r.get("created_at")}
                for r in rows]

    async def check_owner(self, user: str, conversation_id: str) -> HistoryStore:
        store = self.store()
        if await store.get_thread_author(conversation_id) != user:
            raise HTTPException(404, NOT_FOUND)
        return store

    async def turns(self, user: str, conversation_id: str) -> list[dict[str, Any]]:
        store = await self.check_owner(user, conversation_id)
        records = await store.answer_records(conversation_id)
        if records is None:
            raise HTTPException(503, "the chat history cannot be read now")
        return records

    async def history(self, user: str, conversation_id: str, limit: int) -> list[QA]:
        return history_of(await self.turns(user, conversation_id))[-limit:] if limit else []

    async def create(self, user: str, name: str | None) -> str:
        from chainlit.user import User

        store = self.store()
        persisted = await store.get_user(user) or await store.create_user(User(identifier=user))
        if persisted is None:
            raise HTTPException(503, "the chat history cannot be written now")
        thread_id = str(uuid.uuid4())
        await store.update_thread(thread_id, name=name or "API conversation",
                                  user_id=persisted.id, metadata={"source": "api"})
        return thread_id

    async def add(self, user: str, conversation_id: str, question: str, result: AnswerResult,
                  mode: str) -> None:
        """Store one question and its answer in the caller's conversation."""
        from app.history.store import HistoryStore

        store = await self.check_owner(user, conversation_id)
        write = HistoryStore.write_step  # outside a chat session: no queueing
        asked = _now()
        await write(store, {"id": str(uuid.uuid4()), "threadId": conversation_id,
                            "name": user, "type": "user_message", "output": question,
                            "streaming": False, "isError": False, "createdAt": asked,
                            "start": asked, "end": asked, "metadata": {}})
        done = _now()
        await write(store, {"id": str(uuid.uuid4()), "threadId": conversation_id,
                            "name": "Assistant", "type": "assistant_message",
                            "output": result.answer, "streaming": False, "isError": False,
                            "createdAt": done, "start": done,
                            "end": done, "metadata": {
                                ANSWER_KEY: answer_record(question, result, mode, self.cfg)}})
        await store.update_thread(conversation_id, metadata={MODE_KEY: mode})
        if store.problem:  # execute_sql reports instead of raising
            raise HTTPException(503, f"the answer could not be stored: {store.problem}")
