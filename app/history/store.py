"""Chainlit's own ``SQLAlchemyDataLayer`` on this project's database, with what it lacks here:

- the schema is created (and upgraded) on first use: nothing to run by hand (:mod:`.schema`);
- lists and dicts are bound as JSON text: Chainlit binds thread and step tags (and a message's
  ``modes``) as Python lists, which sqlite3 refuses and SQLAlchemy's asyncpg JSONB codec does
  too (it takes text); PostgreSQL's ``tags`` (TEXT[]) keep the list. JSON read back is decoded
  for the UI;
- source panels (``cl.Text`` elements) are kept: Chainlit persists an element only through a
  storage client, so :class:`InlineStorage` stores the text itself in the database as a
  ``data:`` URL (backed up with the database, shown only to whoever may read the thread);
- faults are not silent: Chainlit's ``execute_sql`` logs a warning and carries on; here the
  first failure is logged with its cause, :attr:`HistoryStore.problem` says what is wrong (the
  chat tells the user once), and writes are skipped for a while instead of waiting on a locked
  file for every step. A corrupt SQLite file found at start is set aside (renamed, never
  deleted) and a new one is started;
- on SQLite, this server's statements go one at a time: SQLite has one writer per file, and
  Chainlit writes each session's steps, threads and elements from its own tasks, so twenty
  conversations at once otherwise wait on each other's locks past the busy timeout and lose
  answers (``bench chat`` found 53 of 100 missing). Each statement takes a millisecond or so;
  another program holding the file still fails a write after the busy timeout, and is
  reported.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from chainlit.data.sql_alchemy import SQLAlchemyDataLayer
from chainlit.data.storage_clients.base import BaseStorageClient
from chainlit.data.utils import queue_until_user_message
from chainlit.step import StepDict
from chainlit.types import Feedback
from chainlit.user import PersistedUser, User
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.history.db import (
    SQLITE_BUSY_TIMEOUT_S,
    connect_args,
    database_url,
    describe_failure,
    shown_url,
    sqlite_path,
)
from app.history.schema import create_or_upgrade
from app.history.turns import answer_records
from settings.config import Config

log = logging.getLogger("app.history")

STEP_THREAD_QUERY = 'SELECT "threadId" AS thread_id FROM steps WHERE "id" = :id'
RETRY_AFTER_S = 30.0  # after a failed write, writes are skipped this long (a locked file)
CORRUPT_MARKERS = ("file is not a database", "malformed", "not a database")
# keys of a chat session that are not worth storing with the thread (the turns are the steps)
UNSTORED_SESSION_KEYS = ("history", "index_status_task")

_Step = TypeVar("_Step", bound=Callable[..., Awaitable[None]])


def _queued(method: _Step) -> _Step:
    """Chainlit's ``queue_until_user_message()`` (unannotated there), keeping the signature."""
    queued: _Step = queue_until_user_message()(method)
    return queued


class HistoryUnreadable(RuntimeError):
    """The history database cannot be read now (what is wrong: :attr:`HistoryStore.problem`)."""


class InlineStorage(BaseStorageClient):
    """Keeps an element's content in the database itself, as a ``data:`` URL (no object key,
    so Chainlit serves the stored URL back and deletes nothing elsewhere)."""

    async def upload_file(self, object_key: str, data: bytes | str, mime: str = "",
                          overwrite: bool = True, content_disposition: str | None = None,
                          ) -> dict[str, Any]:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        kind = mime or "application/octet-stream"
        if kind.startswith("text/") and "charset" not in kind:
            kind += ";charset=utf-8"
        url = f"data:{kind};base64,{base64.b64encode(raw).decode('ascii')}"
        return {"object_key": "", "url": url}

    async def get_read_url(self, object_key: str) -> str:
        return object_key

    async def delete_file(self, object_key: str) -> bool:
        return True

    async def close(self) -> None:
        return None


def _set_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    path.rename(target)
    for suffix in ("-journal", "-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    return target


def check_sqlite_file(path: Path) -> str | None:
    """Set a corrupt SQLite file aside (renamed beside it, never deleted) so a new one can start;
    returns where it went, or None when the file is fine, absent or only unreadable."""
    if not path.is_file():
        return None
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=SQLITE_BUSY_TIMEOUT_S)
        try:
            con.execute("PRAGMA schema_version").fetchone()
            row = con.execute("PRAGMA quick_check").fetchone()
        finally:
            con.close()
        if row and row[0] == "ok":
            return None
        reason = str(row[0]) if row else "quick_check failed"
    except sqlite3.DatabaseError as err:
        reason = str(err)
        if not any(m in reason for m in CORRUPT_MARKERS):
            return None  # locked or unreadable: not ours to move; reported when it is used
    target = _set_aside(path)
    log.error("history: %s is damaged (%s); set aside as %s, starting a new history file",
              path, reason, target)
    return str(target)


class HistoryStore(SQLAlchemyDataLayer):
    """The data layer Chainlit uses (``@cl.data_layer``): its SQL, this project's database."""

    def __init__(self, url: str, sqlite_file: Path | None = None,
                 password_env: str | None = None) -> None:
        super().__init__(conninfo=url, connect_args=connect_args(url),
                         storage_provider=InlineStorage())
        self.dialect = make_url(url).get_backend_name()
        self.sqlite_file = sqlite_file
        self.password_env = password_env  # named when the database refuses the sign-in
        self.problem: str | None = None  # what is wrong, for the user; None when it works
        self._skip_until = 0.0
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._step_lock = asyncio.Lock()
        self._sqlite_lock = asyncio.Lock()  # SQLite: one statement at a time
        self._user_lock = asyncio.Lock()  # a user is looked up and created in one go

    @classmethod
    def from_config(cls, cfg: Config) -> HistoryStore:
        if cfg.history.url:
            return cls(database_url(cfg), password_env=cfg.history.password_env)
        path = sqlite_path(cfg)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            check_sqlite_file(path)
        except OSError as err:  # reported when the file is first used; the chat goes on
            log.error("history: cannot prepare %s: %s", path, err)
        return cls(database_url(cfg), sqlite_file=path)

    # ---- setup and faults -------------------------------------------------------------------
    async def ensure_ready(self) -> bool:
        """Create or upgrade the schema once; False (with :attr:`problem` set) when the database
        cannot be used now."""
        if self._ready:
            return True
        if time.monotonic() < self._skip_until:
            return False
        async with self._ready_lock:
            if self._ready:
                return True
            try:
                async with self.engine.begin() as conn:
                    await conn.run_sync(create_or_upgrade)
            except Exception as err:  # any driver error: the chat goes on without history
                self._failed(err, "opening the history database")
                return False
            self._ready = True
            log.info("history: stored in %s", self.sqlite_file or shown_url(self._conninfo))
            return True

    def _failed(self, err: BaseException, doing: str) -> None:
        first = self.problem is None
        self.problem = describe_failure(err, self.password_env)
        self._skip_until = time.monotonic() + RETRY_AFTER_S
        if first:
            log.error("history unavailable (%s) while %s%s; answers go on without being "
                      "stored, retrying in %.0f s", self.problem, doing, self._hint(str(err)),
                      RETRY_AFTER_S)

    def _hint(self, error: str) -> str:
        """What a write error of SQLite means for whoever reads the log (a full disk is
        "database or disk is full"; a write refused otherwise, e.g. past a file size limit,
        is "disk I/O error")."""
        if self.sqlite_file is None:
            return ""
        where = self.sqlite_file.parent
        if "database or disk is full" in error:
            return f" (the disk holding {where} is full: free space there)"
        if "disk I/O error" in error:
            return (f" (writing to {where} failed: a full disk, a file size limit or a failing "
                    "disk)")
        return ""

    def _recovered(self) -> None:
        if self.problem is not None:
            log.warning("history available again (was: %s)", self.problem)
        self.problem = None
        self._skip_until = 0.0  # a write went through: the next ones are not skipped

    def _one_at_a_time(self) -> AbstractAsyncContextManager[object]:
        """The lock a statement takes: on SQLite, one statement at a time (readers would
        otherwise hold up a writer's commit too); a database server, none."""
        return self._sqlite_lock if self.dialect == "sqlite" else nullcontext()

    # ---- SQL --------------------------------------------------------------------------------
    def _bind(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for key, value in parameters.items():
            if isinstance(value, (list, dict)) and not (key == "tags"
                                                        and self.dialect == "postgresql"):
                value = json.dumps(value)
            out[key] = value
        return out

    @staticmethod
    def _decode(row: dict[str, Any]) -> dict[str, Any]:
        for key, value in row.items():
            low = key.lower()
            if low == "props" and not isinstance(value, str):
                # Chainlit's get_element json.loads an element's props: a text element has none
                # (NULL), and PostgreSQL's JSONB comes back decoded already
                row[key] = json.dumps({} if value is None else value)
                continue
            if isinstance(value, str) and (low.endswith("metadata") or low.endswith("tags")):
                try:
                    decoded = json.loads(value)
                except ValueError:
                    continue
                if isinstance(decoded, (dict, list)):
                    row[key] = decoded
        return row

    async def execute_sql(
        self, query: str, parameters: dict[str, Any]
    ) -> list[dict[str, Any]] | int | None:
        if not await self.ensure_ready():
            return None
        writes = not query.lstrip().upper().startswith("SELECT")
        async with self._one_at_a_time(), self.async_session() as session:
            if writes and time.monotonic() < self._skip_until:
                return None  # checked once its turn came: a write that failed meanwhile counts
            try:
                await session.begin()
                result = await session.execute(text(query), self._bind(parameters))
                await session.commit()
                if result.returns_rows:
                    rows = [self._decode(dict(row._mapping)) for row in result.fetchall()]
                    out: list[dict[str, Any]] | int = SQLAlchemyDataLayer.clean_result(self, rows)
                else:
                    out = result.rowcount
            except Exception as err:
                try:
                    await session.rollback()
                except Exception:  # the connection itself may be gone
                    pass
                self._failed(err, "writing" if writes else "reading")
                return None
        if writes:
            self._recovered()
        return out

    # Chainlit stores a step's creation and its update in two background tasks; run on their
    # own they can commit in either order, and a step's empty first version then overwrites its
    # final one (a search step stored without its text). One lock, taken in the order the tasks
    # were made (asyncio locks are fair), keeps them in order.
    async def create_user(self, user: User) -> PersistedUser | None:
        """Chainlit's look-up-then-insert, one sign-in at a time: two connections of one
        browser signing in together would both insert the user, and the second insert's
        UNIQUE failure would stop history for ``RETRY_AFTER_S`` (answers unstored)."""
        async with self._user_lock:
            return await super().create_user(user)

    async def write_step(self, step_dict: StepDict) -> None:
        """Store (or replace) a step now, in turn with the other step writes; unqueued, so it
        also works outside a chat session (the API's conversations)."""
        async with self._step_lock:
            await _BASE_CREATE_STEP(self, step_dict)

    @_queued
    async def create_step(self, step_dict: StepDict) -> None:
        await self.write_step(step_dict)

    @_queued
    async def update_step(self, step_dict: StepDict) -> None:
        await self.write_step(step_dict)

    @_queued
    async def delete_step(self, step_id: str) -> None:
        async with self._step_lock:
            await _BASE_DELETE_STEP(self, step_id)

    async def answer_records(self, thread_id: str) -> list[dict[str, Any]] | None:
        """The answer records of one thread as stored now, oldest first (every tab's answers);
        None when the database cannot be read. Taken after the step writes already waiting
        (the lock is fair), so an answer just finished in another tab is read."""
        query = ('SELECT "metadata" FROM steps WHERE "threadId" = :thread_id '
                 'AND "type" = \'assistant_message\' ORDER BY "createdAt" ASC')
        async with self._step_lock:
            rows = await self.execute_sql(query, {"thread_id": thread_id})
        if not isinstance(rows, list):
            return None
        return answer_records({"steps": rows})

    async def update_thread(self, thread_id: str, name: str | None = None,
                            user_id: str | None = None, metadata: dict[str, Any] | None = None,
                            tags: list[str] | None = None) -> None:
        if metadata:
            metadata = {k: v for k, v in metadata.items() if k not in UNSTORED_SESSION_KEYS}
        await super().update_thread(thread_id, name=name, user_id=user_id, metadata=metadata,
                                    tags=tags)

    async def step_thread(self, step_id: str) -> str | None:
        """The conversation step ``step_id`` is in (None: no such step); raises
        :class:`HistoryUnreadable` when the database cannot be read."""
        rows = await self.execute_sql(STEP_THREAD_QUERY, {"id": step_id})
        if not isinstance(rows, list):
            raise HistoryUnreadable(self.problem or "the history database cannot be read")
        return str(rows[0]["thread_id"]) if rows and rows[0].get("thread_id") else None

    async def upsert_feedback(self, feedback: Feedback) -> str:
        """A rating is filed under the conversation of the step it rates, whatever conversation
        the request names (who may rate it: :mod:`app.history.ownership`)."""
        try:
            thread_id = await self.step_thread(feedback.forId)
        except HistoryUnreadable:
            thread_id = None  # Chainlit's own write then fails and is reported the same way
        if thread_id:
            feedback.threadId = thread_id
        return await super().upsert_feedback(feedback)

    async def get_thread_author(self, thread_id: str) -> str:
        """Chainlit raises ValueError (a 500) for an unknown thread; say "not found" instead
        (an empty author: ``is_thread_author`` answers 404)."""
        try:
            return await super().get_thread_author(thread_id)
        except ValueError:
            return ""

    async def close(self) -> None:
        await super().close()


# the undecorated methods (Chainlit wraps them in queue_until_user_message)
_BASE_CREATE_STEP = SQLAlchemyDataLayer.create_step.__wrapped__
_BASE_DELETE_STEP = SQLAlchemyDataLayer.delete_step.__wrapped__
