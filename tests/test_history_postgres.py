"""Chat history on a real PostgreSQL server (``history.url``), through the project's own code:
the schema made on first use, a conversation with its steps, side panels and rating stored and
read back, isolation between users, the conversation rebuilt for a reopened chat, the feedback
export, the password from its environment variable (and a clear error without it), the upgrade
of an older schema. The server is a throwaway one (tests/postgres_fixtures.py);
tests/test_ui_browser_history_postgres.py drives the chat itself on it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from chainlit.context import init_http_context
from chainlit.element import Text
from chainlit.types import Feedback, Pagination, ThreadFilter
from chainlit.user import User
from sqlalchemy import MetaData, Table, insert, inspect
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.ext.asyncio import create_async_engine

from app.history import resumed, schema
from app.history.db import database_url
from app.history.store import HistoryStore
from app.history.turns import ANSWER_KEY
from settings.config import Config
from tests.postgres_fixtures import (  # noqa: F401 - the fixtures pg_history, postgres_server
    PgDatabase,
    pg_history_fixture,
    postgres_server_fixture,
)

pytestmark = pytest.mark.postgres

PASSWORD_ENV = "PUBMED_ASSISTANT_DB_PASSWORD"


def _cfg(db: PgDatabase) -> Config:
    from app.config import load_config

    return load_config(overrides={"history": {"url": db.url}})


def _store(db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> HistoryStore:
    """The store the chat makes (``HistoryStore.from_config``), its password from the
    environment variable as in production."""
    monkeypatch.setenv(PASSWORD_ENV, db.password)
    return HistoryStore.from_config(_cfg(db))


async def _columns(db: PgDatabase) -> dict[str, dict[str, Any]]:
    """Each table's columns and their PostgreSQL types, as the server reports them."""
    engine = create_async_engine(database_url(_cfg(db), {PASSWORD_ENV: db.password}))
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(lambda c: {
                t: {col["name"]: col["type"] for col in inspect(c).get_columns(t)}
                for t in inspect(c).get_table_names()})
    finally:
        await engine.dispose()


def _step(thread: str, sid: str, kind: str, created: str, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "threadId": thread, "name": "x", "type": kind, "streaming": False,
            "createdAt": created, "output": extra.pop("output", ""), **extra}


def _answer_meta(question: str, answer: str, pmids: tuple[str, ...] = ("111", "222")) -> dict:
    return {ANSWER_KEY: {"question": question, "answer": answer, "mode": "conversational",
                         "model": "SmolLM2-135M-Instruct (gpt4all)", "style": "extractive",
                         "pmids": list(pmids), "refused": False}}


async def _conversation(layer: HistoryStore, user: str, thread: str) -> str:
    """Two answered turns in ``thread`` of ``user``, a side panel on the first answer and a
    rating on the second (as the chat writes them); returns the panel's element id."""
    person = await layer.create_user(User(identifier=user))
    assert person is not None, layer.problem
    await layer.update_thread(thread, name=f"{user}'s ADHD chat", user_id=person.id,
                              tags=["adhd", user], metadata={"mode": "conversational",
                                                             "history": [["q", "a"]]})
    turns = [("Does methylphenidate help children with ADHD?", "It helps [1]."),
             ("And in adults?", "Also in adults [2].")]
    for n, (question, answer) in enumerate(turns):
        await layer.create_step(_step(thread, f"{thread}-u{n}", "user_message",
                                      f"2026-01-01T00:00:{2 * n:02d}.000000Z", output=question,
                                      tags=["question"], showInput=False, autoCollapse=True))
        await layer.create_step(_step(thread, f"{thread}-run{n}", "run",
                                      f"2026-01-01T00:00:{2 * n + 1:02d}.000000Z", output=""))
        await layer.create_step(_step(thread, f"{thread}-a{n}", "assistant_message",
                                      f"2026-01-01T00:00:{2 * n + 1:02d}.500000Z", output=answer,
                                      parentId=f"{thread}-run{n}",
                                      metadata=_answer_meta(question, answer),
                                      modes=[{"id": "conversational", "name": "Conversational"}]))
    panel = Text(name="[1]", content="**Methylphenidate** in children: an abstract",
                 display="side", for_id=f"{thread}-a0")
    panel.thread_id = thread
    await layer.create_element(panel)
    await layer.upsert_feedback(Feedback(forId=f"{thread}-run1", value=1, threadId=thread,
                                         comment="helpful"))
    assert layer.problem is None, layer.problem
    return panel.id


# ---- the round trip -----------------------------------------------------------------------------
async def test_a_conversation_round_trips_through_postgresql(
        pg_history: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    init_http_context()
    assert await _columns(pg_history) == {}  # a new database: the app makes the tables
    layer = _store(pg_history, monkeypatch)
    panel_id = await _conversation(layer, "alice", "t-alice")

    # the schema the app made: JSONB and TEXT[] as in Chainlit's documented PostgreSQL schema
    cols = await _columns(pg_history)
    assert set(cols) == {"users", "threads", "steps", "elements", "feedbacks"}
    for table, column in [("threads", "metadata"), ("steps", "metadata"), ("steps", "modes"),
                          ("steps", "generation"), ("users", "metadata"), ("elements", "props")]:
        assert isinstance(cols[table][column], JSONB), (table, column, cols[table][column])
    assert isinstance(cols["threads"]["tags"], ARRAY) and isinstance(cols["steps"]["tags"], ARRAY)

    thread = await layer.get_thread("t-alice")
    assert thread is not None
    assert thread["userIdentifier"] == "alice" and thread["tags"] == ["adhd", "alice"]
    assert thread["metadata"] == {"mode": "conversational"}  # the session's turns not copied
    steps = thread["steps"]
    assert [s["id"] for s in steps] == ["t-alice-u0", "t-alice-run0", "t-alice-a0",
                                        "t-alice-u1", "t-alice-run1", "t-alice-a1"]
    assert steps[0]["tags"] == ["question"] and steps[0]["output"].startswith("Does")
    assert steps[2]["metadata"][ANSWER_KEY]["pmids"] == ["111", "222"]
    assert steps[4]["feedback"] is not None and steps[4]["feedback"]["value"] == 1
    assert steps[4]["feedback"]["comment"] == "helpful"
    (element,) = thread["elements"] or []
    assert element["display"] == "side" and element["forId"] == "t-alice-a0"
    text = base64.b64decode(element["url"].split(",", 1)[1]).decode()
    assert text == "**Methylphenidate** in children: an abstract"
    # one element fetched on its own (Chainlit json-decodes its props: JSONB comes back decoded)
    fetched = await layer.get_element("t-alice", panel_id)
    assert fetched is not None and fetched["url"] == element["url"] and fetched["props"] == {}

    # a reopened conversation: its mode and its turns, rebuilt from what PostgreSQL returned
    mode, history = resumed(thread, "plain", 20)
    assert mode == "conversational"
    assert history == [("Does methylphenidate help children with ADHD?", "It helps [1]."),
                       ("And in adults?", "Also in adults [2].")]

    # the mode is written after every answer (app.history.after_answer), merged into metadata
    await layer.update_thread("t-alice", metadata={"mode": "multi-query"})
    again = await layer.get_thread("t-alice")
    assert again is not None and resumed(again, "plain", 20)[0] == "multi-query"
    assert layer.problem is None
    await layer.close()


async def test_a_user_sees_only_their_own_conversations(
        pg_history: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chainlit's author check (``is_thread_author``: page, socket and elements) and its thread
    list, over what this store keeps in PostgreSQL."""
    from chainlit.data import acl
    from fastapi import HTTPException

    init_http_context()
    layer = _store(pg_history, monkeypatch)
    await _conversation(layer, "alice", "t-alice")
    await _conversation(layer, "bob", "t-bob")
    alice = await layer.get_user("alice")
    bob = await layer.get_user("bob")
    assert alice is not None and bob is not None

    listed = await layer.list_threads(Pagination(first=20), ThreadFilter(userId=alice.id))
    assert [t["id"] for t in listed.data] == ["t-alice"]
    listed = await layer.list_threads(Pagination(first=20), ThreadFilter(userId=bob.id))
    assert [t["id"] for t in listed.data] == ["t-bob"]
    searched = await layer.list_threads(Pagination(first=20),
                                        ThreadFilter(userId=alice.id, search="adults"))
    assert [t["id"] for t in searched.data] == ["t-alice"]

    monkeypatch.setattr(acl, "get_data_layer", lambda: layer)
    assert await acl.is_thread_author("alice", "t-alice") is True
    with pytest.raises(HTTPException) as refused:
        await acl.is_thread_author("alice", "t-bob")
    assert refused.value.status_code == 401
    with pytest.raises(HTTPException) as missing:
        await acl.is_thread_author("alice", "no-such-thread")
    assert missing.value.status_code == 404
    await layer.close()


# ---- feedback export ----------------------------------------------------------------------------
def _cfg_file(tmp_path: Path, db: PgDatabase) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(f"history:\n  url: {db.url}\n  folder: {tmp_path / 'unused'}\n",
                    encoding="utf-8")
    return path


def test_feedback_export_reads_postgresql(pg_history: PgDatabase, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from app.cli import main

    cfg_file = _cfg_file(tmp_path, pg_history)
    monkeypatch.setenv(PASSWORD_ENV, pg_history.password)
    # before the chat ever ran: no tables yet, said as such
    assert main(["--config", str(cfg_file), "feedback", "export"]) == 1
    assert "no chat history in" in capsys.readouterr().err

    async def rated() -> None:
        init_http_context()
        layer = HistoryStore.from_config(_cfg(pg_history))
        await _conversation(layer, "alice", "t-alice")
        # a second answer, rated down on the message itself, days later
        await layer.create_step(_step("t-alice", "late", "assistant_message",
                                      "2026-03-05T10:00:00Z", output="No.",
                                      metadata=_answer_meta("Any harm?", "No.", ("9",))))
        await layer.upsert_feedback(Feedback(forId="late", value=0, threadId="t-alice"))
        assert layer.problem is None
        await layer.close()

    asyncio.run(rated())
    out = tmp_path / "rated.jsonl"
    assert main(["--config", str(cfg_file), "feedback", "export", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [(x["question"], x["rating"], x["gold_pmids"]) for x in lines] == [
        ("And in adults?", "up", ["111", "222"]), ("Any harm?", "down", [])]
    assert lines[0]["comment"] == "helpful" and lines[0]["user"] == "alice"
    assert lines[0]["thread_id"] == "t-alice" and lines[1]["source_pmids"] == ["9"]
    assert lines[0]["mode"] == "conversational" and lines[0]["style"] == "extractive"

    assert main(["--config", str(cfg_file), "feedback", "export", "--since", "2026-03-01",
                 "--out", str(out)]) == 0
    assert [json.loads(x)["question"] for x in out.read_text().splitlines()] == ["Any harm?"]
    assert main(["--config", str(cfg_file), "feedback", "export", "--rating", "up",
                 "--out", str(out)]) == 0
    assert [json.loads(x)["question"] for x in out.read_text().splitlines()] == [
        "And in adults?"]


# ---- the password -------------------------------------------------------------------------------
async def test_the_password_comes_from_its_environment_variable(
        pg_history: PgDatabase, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    init_http_context()
    caplog.set_level("ERROR", logger="app.history")
    cfg = _cfg(pg_history)
    assert cfg.history.password_env == PASSWORD_ENV

    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    unset = HistoryStore.from_config(cfg)
    await unset.update_thread("t1", name="not stored")
    assert unset.problem is not None and "password authentication failed" in unset.problem
    assert f"environment variable {PASSWORD_ENV}, which is not set" in unset.problem
    assert PASSWORD_ENV in caplog.text  # the log says it too
    await unset.close()

    monkeypatch.setenv(PASSWORD_ENV, pg_history.password + "-wrong")
    wrong = HistoryStore.from_config(cfg)
    await wrong.update_thread("t1", name="not stored")
    assert wrong.problem is not None and "password authentication failed" in wrong.problem
    assert f"environment variable {PASSWORD_ENV}: check it" in wrong.problem
    assert pg_history.password not in wrong.problem  # never shown
    await wrong.close()

    monkeypatch.setenv(PASSWORD_ENV, pg_history.password)
    right = HistoryStore.from_config(cfg)
    await right.update_thread("t1", name="stored")
    assert right.problem is None
    thread = await right.get_thread("t1")
    assert thread is not None and thread["name"] == "stored"
    await right.close()


def test_feedback_export_names_the_password_variable(
        pg_history: PgDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    cfg_file = _cfg_file(tmp_path, pg_history)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    assert main(["--config", str(cfg_file), "feedback", "export"]) == 1
    err = capsys.readouterr().err
    assert "password authentication failed" in err and f"{PASSWORD_ENV}, which is not set" in err
    monkeypatch.setenv(PASSWORD_ENV, "wrong-password")
    assert main(["--config", str(cfg_file), "feedback", "export"]) == 1
    err = capsys.readouterr().err
    assert f"{PASSWORD_ENV}: check it" in err and "wrong-password" not in err


# ---- upgrades -----------------------------------------------------------------------------------
NEW_STEP_COLUMNS = ("autoCollapse", "defaultOpen", "command", "modes", "indent")


def _older_schema() -> MetaData:
    """This project's PostgreSQL tables as an older version had them: no elements or feedbacks
    table, steps without the columns Chainlit added since."""
    old = MetaData()
    for table in schema.tables("postgresql").sorted_tables:
        if table.name in ("elements", "feedbacks"):
            continue
        Table(table.name, old, *[c._copy() for c in table.columns
                                 if not (table.name == "steps" and c.name in NEW_STEP_COLUMNS)])
    return old


async def test_an_older_postgresql_schema_is_upgraded_without_losing_its_threads(
        pg_history: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    init_http_context()
    old = _older_schema()
    engine = create_async_engine(database_url(_cfg(pg_history),
                                              {PASSWORD_ENV: pg_history.password}))
    async with engine.begin() as conn:
        await conn.run_sync(old.create_all)
        t = old.tables
        await conn.execute(insert(t["users"]).values(
            id="u1", identifier="local", createdAt="2025-01-01T00:00:00Z", metadata={}))
        await conn.execute(insert(t["threads"]).values(
            id="t-old", createdAt="2025-01-01T00:00:00Z", name="Old chat", userId="u1",
            userIdentifier="local", tags=["old"], metadata={"mode": "plain"}))
        await conn.execute(insert(t["steps"]).values(
            id="s-old", name="local", type="user_message", threadId="t-old", streaming=False,
            output="an old question", createdAt="2025-01-01T00:00:00Z", metadata={}))
    await engine.dispose()
    before = await _columns(pg_history)
    assert not set(NEW_STEP_COLUMNS) & set(before["steps"]) and "feedbacks" not in before

    layer = _store(pg_history, monkeypatch)
    # a step written by today's Chainlit carries the columns the old schema lacks
    await layer.create_step(_step("t-old", "s-new", "tool", "2025-01-01T00:00:01Z",
                                  output="found", autoCollapse=False, defaultOpen=True,
                                  modes=[{"id": "plain"}]))
    assert layer.problem is None
    after = await _columns(pg_history)
    assert set(NEW_STEP_COLUMNS) <= set(after["steps"])
    assert isinstance(after["steps"]["modes"], JSONB)  # added with the right type
    assert {"elements", "feedbacks"} <= set(after)
    thread = await layer.get_thread("t-old")
    assert thread is not None and thread["name"] == "Old chat" and thread["tags"] == ["old"]
    assert [s["output"] for s in thread["steps"]] == ["an old question", "found"]
    assert resumed(thread, "conversational", 20)[0] == "plain"
    await layer.close()
