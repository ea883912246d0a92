"""The conversation of tests/test_ui_browser_history.py with the history on a real PostgreSQL
server: ``python -m app serve`` with ``history.url`` naming a throwaway database
(tests/postgres_fixtures.py) and the password only in ``PUBMED_ASSISTANT_DB_PASSWORD``, the
small test index and the default model, driven by Debian's Chromium.

Ask and follow up, reload, reopen from the sidebar, follow up from the stored turns, rate, and
find the rating in ``python -m app feedback export`` (given the same variable); no SQLite file is
made, and the server says where it stores (the password hidden).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from app.history.turns import ANSWER_KEY
from tests.browser.harness import Server, require_chromium, serving_chat
from tests.postgres_fixtures import (  # noqa: F401 - the fixture postgres_server
    PgDatabase,
    PgServer,
    postgres_server_fixture,
)
from tests.test_ui_browser_history import converse_reopen_rate_export

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.postgres]

PASSWORD_ENV = "PUBMED_ASSISTANT_DB_PASSWORD"


class PostgresHistory:
    """Reads what the server stored, on its own connection (from a worker thread: the test's
    thread runs Playwright's event loop)."""

    def __init__(self, db: PgDatabase) -> None:
        self.url = make_url(db.url).set(password=db.password)

    def _rows(self, query: str, thread_id: str) -> list[Any]:
        async def fetch() -> list[Any]:
            engine = create_async_engine(self.url)
            try:
                async with engine.connect() as conn:
                    return list(await conn.execute(text(query), {"t": thread_id}))
            finally:
                await engine.dispose()

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, fetch()).result(timeout=60)

    def answers(self, thread_id: str) -> int:
        rows = self._rows("""SELECT "metadata" FROM steps WHERE "threadId" = :t AND
                             "type" = 'assistant_message'""", thread_id)
        return sum(isinstance(m, dict) and ANSWER_KEY in m for (m,) in rows)  # JSONB: a dict

    def search_outputs(self, thread_id: str) -> list[str]:
        rows = self._rows("""SELECT "output" FROM steps WHERE "threadId" = :t AND
                             "name" = 'Search'""", thread_id)
        return [o or "" for (o,) in rows]


@pytest.fixture(scope="module")
def served_pg(small_index_cfg: Any, postgres_server: PgServer,
              tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[tuple[Server, Path, PgDatabase]]:
    require_chromium()
    db = postgres_server.new_database()
    folder = tmp_path_factory.mktemp("ui_history_pg")
    overrides = {"llm": {"max_new_tokens": 32}, "history": {"url": db.url}}
    with serving_chat(small_index_cfg, folder, overrides, audit=True,
                      env={PASSWORD_ENV: db.password}) as srv:
        yield srv, folder / "cfg.yaml", db


def test_a_conversation_stored_in_postgresql_is_reopened_continued_and_exported(
        browser: Any, served_pg: tuple[Server, Path, PgDatabase], tmp_path: Path) -> None:
    server, cfg, db = served_pg
    converse_reopen_rate_export(browser, server, cfg, PostgresHistory(db), tmp_path,
                                env={PASSWORD_ENV: db.password})
    shown = server.wait_for_log(r"history: stored in (\S+)").group(1)
    assert shown == db.url.replace("assistant@", "assistant:***@"), shown
    assert db.password not in server.log()
    assert not (cfg.parent / "history" / "history.db").exists()  # nothing went to SQLite
