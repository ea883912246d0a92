"""Conversations that last, for real: ``python -m app serve`` on the small test index with the
default model, its history in a real SQLite file, driven by Debian's Chromium.

One server, one conversation: ask and follow up in conversational mode, reload the page, reopen
the conversation from the sidebar, follow up again (the search step shows the question rebuilt
from the stored turns, and the mode is the conversation's own), rate the answer and find the
rating in ``python -m app feedback export``. The same conversation runs on PostgreSQL in
tests/test_ui_browser_history_postgres.py (:func:`converse_reopen_rate_export`).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.browser.harness import (
    PUBMED_HREF,
    REPO_ROOT,
    ChatPage,
    Server,
    require_chromium,
    serving_chat,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIRST = "Does methylphenidate improve attention in children with ADHD?"
SECOND = "And in adults?"
THIRD = "What are its side effects?"
FOURTH = "How long do they last?"
THREAD_URL = re.compile(r"/thread/([0-9a-f-]{36})$")


@pytest.fixture(scope="module")
def served(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Server, Path]]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_history")
    with serving_chat(small_index_cfg, folder, {"llm": {"max_new_tokens": 32}}, audit=True) as srv:
        yield srv, folder / "cfg.yaml"


def _thread_id(chat: ChatPage) -> str:
    chat.page.wait_for_url(THREAD_URL, timeout=60_000)
    found = THREAD_URL.search(chat.page.url)
    assert found, chat.page.url
    return found.group(1)


class StoredHistory(Protocol):
    """What the test reads from the database the server writes (not through the server)."""

    def answers(self, thread_id: str) -> int:
        """How many of the thread's answers are stored with their answer record."""
        ...

    def search_outputs(self, thread_id: str) -> list[str]:
        """The stored text of each of the thread's search steps."""
        ...


class SQLiteHistory:
    def __init__(self, db: Path) -> None:
        self.db = db

    def answers(self, thread_id: str) -> int:
        with sqlite3.connect(self.db) as con:
            rows = con.execute("""SELECT "metadata" FROM steps WHERE "threadId" = ? AND
                                  "type" = 'assistant_message'""", (thread_id,)).fetchall()
        return sum('"pubmed_answer"' in (r[0] or "") for r in rows)

    def search_outputs(self, thread_id: str) -> list[str]:
        with sqlite3.connect(self.db) as con:
            rows = con.execute("""SELECT "output" FROM steps WHERE "threadId" = ? AND
                                  "name" = 'Search'""", (thread_id,)).fetchall()
        return [o or "" for (o,) in rows]


def _wait_stored(server: Server, stored: StoredHistory, thread_id: str, count: int) -> None:
    """Chainlit stores steps in background tasks: wait (bounded) until ``count`` answers are."""
    deadline = time.monotonic() + 60
    while stored.answers(thread_id) < count:
        assert time.monotonic() < deadline, server.log()[-3000:]
        time.sleep(0.3)


def test_a_reopened_conversation_continues_from_its_stored_turns_and_its_rating_is_exported(
        browser: Any, served: tuple[Server, Path], tmp_path: Path) -> None:
    server, cfg = served
    stored = SQLiteHistory(cfg.parent / "history" / "history.db")
    converse_reopen_rate_export(browser, server, cfg, stored, tmp_path)


def converse_reopen_rate_export(browser: Any, server: Server, cfg: Path, stored: StoredHistory,
                                tmp_path: Path, env: dict[str, str] | None = None) -> None:
    """The whole conversation (module docstring) on a served chat whose history is ``stored``;
    ``env`` is added to the environment of ``python -m app feedback export``."""
    chat = ChatPage(browser, server.url).open()
    try:
        chat.set_mode("Conversational (follow-up questions)")
        first = chat.ask(FIRST)
        assert "Mode: conversational" in first.inner_text()
        thread_id = _thread_id(chat)
        second = chat.ask(SECOND)
        assert "Mode: conversational" in second.inner_text()
        assert "Rewritten question:" in chat.last_search_step()
        _wait_stored(server, stored, thread_id, 2)

        # a reload reopens the conversation at its URL, from the database
        chat.page.reload()
        chat.answers().nth(1).wait_for(timeout=60_000)
        assert chat.user_messages() == [FIRST, SECOND]

        # a new chat, then the conversation again from the sidebar
        chat.page.goto(server.url)
        chat.page.wait_for_selector("#chat-input")
        assert chat.user_messages() == []
        chat.click_on_screen("#sidebar-trigger-button")
        entry = chat.page.locator(f"#thread-{thread_id}")
        entry.wait_for(timeout=30_000)
        assert FIRST[:20] in entry.inner_text()
        entry.click()
        chat.page.wait_for_url(f"**/thread/{thread_id}")
        chat.answers().nth(1).wait_for(timeout=60_000)
        assert chat.user_messages() == [FIRST, SECOND]
        # each search step was stored with its text (not its empty first version)
        steps = stored.search_outputs(thread_id)
        assert len(steps) == 2 and all("Sources found" in o for o in steps), steps
        # its sources' side panels came back with it
        panel = chat.open_source_panel(chat.answers().nth(0), 1)
        assert "PubMed" in panel.inner_text()

        third = chat.ask(THIRD)
        text = third.inner_text()
        assert "Mode: conversational" in text  # the conversation's mode, not cfg.yaml's plain
        step = chat.last_search_step()
        searched = re.search(r"Rewritten question:\s*(.+)", step)
        assert searched, step  # rebuilt from the stored turns: the follow-up kept its topic
        # resolved against the stored turns (#36): the first turn's drug, the second's group
        assert "methylphenidate" in searched.group(1).lower(), step
        assert "adults" in searched.group(1).lower(), step
        server.wait_for_log(r"conversation resumed: 2 turns, mode conversational")
        _wait_stored(server, stored, thread_id, 3)

        # rate the answer, with a comment
        pmids = [PUBMED_HREF.match(h).group(1)  # type: ignore[union-attr]
                 for _, h, _ in chat.source_links(third)]
        assert pmids, text
        chat.rate(positive=True, comment="helpful sources")

        # the page still highlights the new chat's button: the next follow-up too continues in
        # the conversation's own mode, not only the first one after reopening
        fourth = chat.ask(FOURTH)
        assert "Mode: conversational" in fourth.inner_text(), fourth.inner_text()
        assert "Rewritten question:" in chat.last_search_step()
    finally:
        chat.close()

    out = tmp_path / "rated.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg), "feedback", "export", "--out",
         str(out)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 1, lines
    line = lines[0]
    assert line["question"] == THIRD and line["rating"] == "up"
    assert line["comment"] == "helpful sources"
    assert line["gold_pmids"] == pmids == line["source_pmids"]
    assert line["mode"] == "conversational" and line["style"] and "SmolLM2" in line["model"]
    assert line["thread_id"] == thread_id and line["user"] == "local"
    assert server.remote_attempts() == []
