"""Chat history on a real SQLite file (app/history): the schema against what the installed
Chainlit writes, a round trip through Chainlit's own SQLAlchemyDataLayer, the upgrade of an older
file, faults (locked, read-only, corrupt), the history rebuilt for a reopened conversation and
the feedback export. No server: the browser tests (test_ui_browser_history*.py) do the rest."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from chainlit.context import init_http_context
from chainlit.element import Text
from chainlit.message import Message
from chainlit.step import Step
from chainlit.types import Feedback, Pagination, ThreadFilter
from chainlit.user import User

from app.history import schema, store
from app.history.db import database_url, sqlite_path
from app.history.store import HistoryStore, check_sqlite_file
from app.history.turns import ANSWER_KEY, followup_history, rebuild_history, stored_mode


def _store(path: Path) -> HistoryStore:
    return HistoryStore(f"sqlite+aiosqlite:///{path}", sqlite_file=path)


def _columns(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as con:
        return {row[1] for row in con.execute(f'PRAGMA table_info("{table}")')}


def _step(thread: str, sid: str, kind: str, created: str, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "threadId": thread, "name": "x", "type": kind, "streaming": False,
            "createdAt": created, "output": extra.pop("output", ""), **extra}


def _answer_meta(question: str, answer: str, mode: str = "conversational",
                 refused: bool = False, pmids: tuple[str, ...] = ("111", "222")) -> dict:
    return {ANSWER_KEY: {"question": question, "answer": answer, "mode": mode,
                         "model": "SmolLM2-135M-Instruct (gpt4all)", "style": "extractive",
                         "pmids": list(pmids), "refused": refused}}


async def test_one_user_signing_in_on_two_connections_at_once_is_created_once(
        tmp_path: Path) -> None:
    """Seen in CI (test_ui_browser_history): two connections of one browser signed in together,
    both inserted the user, the second insert's UNIQUE failure stopped history for 30 s and the
    answers given meanwhile were not stored. Mutation caught: create_user without its lock ->
    ``problem`` set (IntegrityError)."""
    history = _store(tmp_path / "history.db")
    users = await asyncio.gather(*(history.create_user(User(identifier="alice"))
                                   for _ in range(3)))
    assert [u.identifier for u in users if u] == ["alice"] * 3
    assert history.problem is None, history.problem
    await history.close()


# ---- the schema is what Chainlit writes --------------------------------------------------------
async def test_the_tables_hold_every_key_chainlit_stores() -> None:
    md = schema.tables("sqlite")
    cols = {t.name: {c.name for c in t.columns} for t in md.sorted_tables}
    init_http_context()
    step_keys = set(Step(name="s").to_dict()) | set(Message(content="m").to_dict())
    element_keys = set(Text(name="e", content="c").to_dict())
    assert step_keys <= cols["steps"], step_keys - cols["steps"]  # autoCollapse, modes, command...
    assert element_keys <= cols["elements"], element_keys - cols["elements"]
    assert {f.name for f in fields(Feedback)} <= cols["feedbacks"]
    assert {"id", "createdAt", "name", "userId", "userIdentifier", "tags", "metadata"} <= \
        cols["threads"]


def test_postgresql_gets_jsonb_and_text_arrays() -> None:
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateTable

    steps = schema.tables("postgresql").tables["steps"]
    ddl = str(CreateTable(steps).compile(dialect=postgresql.dialect()))
    assert "metadata JSONB" in ddl and "tags TEXT[]" in ddl and '"autoCollapse" BOOLEAN' in ddl


# ---- a round trip through Chainlit's data layer -------------------------------------------------
async def test_a_thread_round_trips_through_chainlits_data_layer(tmp_path: Path) -> None:
    init_http_context()
    db = tmp_path / "history.db"
    layer = _store(db)
    user = await layer.create_user(User(identifier="local"))
    assert user is not None
    # thread tags and step tags are bound as Python lists by Chainlit
    await layer.update_thread("t1", name="ADHD", user_id=user.id, tags=["a", "b"],
                              metadata={"mode": "conversational", "history": [["q", "a"]]})
    await layer.create_step(_step("t1", "s1", "user_message", "2026-01-01T00:00:00Z",
                                  output="Is it?", tags=["x"], autoCollapse=True,
                                  defaultOpen=False, showInput=False))
    await layer.create_step(_step("t1", "s2", "assistant_message", "2026-01-01T00:00:01Z",
                                  output="Yes [1]", metadata=_answer_meta("Is it?", "Yes")))
    element = Text(name="[1]", content="**abstract** text", display="side", for_id="s2")
    element.thread_id = "t1"
    await layer.create_element(element)
    assert layer.problem is None

    thread = await layer.get_thread("t1")
    assert thread is not None
    assert thread["userIdentifier"] == "local" and thread["tags"] == ["a", "b"]
    # the turns live in the steps; the chat session's copy of them is not stored again
    assert thread["metadata"] == {"mode": "conversational"}
    assert [s["id"] for s in thread["steps"]] == ["s1", "s2"]
    assert thread["steps"][0]["tags"] == ["x"]
    assert thread["steps"][1]["metadata"][ANSWER_KEY]["question"] == "Is it?"
    # the side panel's text is kept with the thread (a data: URL, no other storage)
    (stored,) = thread["elements"] or []
    assert stored["url"].startswith("data:")
    import base64

    assert base64.b64decode(stored["url"].split(",", 1)[1]).decode() == "**abstract** text"
    # fetched on its own (Chainlit json-decodes its props, NULL for a text element)
    fetched = await layer.get_element("t1", stored["id"])
    assert fetched is not None and fetched["url"] == stored["url"] and fetched["props"] == {}

    listed = await layer.list_threads(Pagination(first=10), ThreadFilter(userId=user.id))
    assert [t["id"] for t in listed.data] == ["t1"]
    assert await layer.get_thread_author("t1") == "local"
    assert await layer.get_thread_author("no-such-thread") == ""  # a 404, not a crash
    await layer.close()


async def test_a_steps_versions_are_stored_in_the_order_they_were_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chainlit stores a step's creation and its update in two background tasks; when the first
    is slower (here: its thread lookup waits), its empty version must not land last."""
    init_http_context()
    layer = _store(tmp_path / "history.db")
    await layer.update_thread("t1", name="x")
    original = HistoryStore.update_thread
    calls = 0

    async def first_one_slow(self: HistoryStore, thread_id: str, **kw: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.sleep(0.3)
        await original(self, thread_id, **kw)

    monkeypatch.setattr(HistoryStore, "update_thread", first_one_slow)
    made = asyncio.create_task(layer.create_step(
        _step("t1", "s", "tool", "2026-01-01T00:00:00Z", output="")))
    updated = asyncio.create_task(layer.update_step(
        _step("t1", "s", "tool", "2026-01-01T00:00:00Z", output="Sources found: 3")))
    await asyncio.gather(made, updated)
    thread = await layer.get_thread("t1")
    assert thread is not None and thread["steps"][0]["output"] == "Sources found: 3"
    await layer.close()


async def test_twenty_conversations_writing_at_once_lose_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chainlit writes every session's threads and steps from its own tasks; on one SQLite file
    twenty at once waited on each other's locks past the busy timeout, and the store then
    skipped writes: ``bench chat`` found 53 of 100 answers missing. No busy wait at all here
    (a loaded machine's worst case): this server's own statements must never meet a lock."""
    init_http_context()
    monkeypatch.setattr("app.history.db.SQLITE_BUSY_TIMEOUT_S", 0.0)
    db = tmp_path / "history.db"
    layer = _store(db)

    async def conversation(i: int) -> None:
        await layer.update_thread(f"t{i}", name=f"conversation {i}")
        for j in range(5):
            step = _step(f"t{i}", f"s{i}-{j}", "assistant_message",
                         f"2026-01-01T00:00:{j:02d}Z", output="first " * 300)
            await layer.create_step(step)
            panels = []
            for n in range(4):  # an answer's source panels, sent at once as the UI does
                panel = Text(name=f"[{n + 1}]", content="abstract " * 400, display="side",
                             for_id=f"s{i}-{j}")
                panel.thread_id = f"t{i}"
                panels.append(layer.create_element(panel))
            await asyncio.gather(*panels)
            await layer.update_step({**step, "output": "answer " * 400})

    await asyncio.gather(*(conversation(i) for i in range(20)))
    assert layer.problem is None
    await layer.close()
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM threads").fetchone()[0] == 20
        assert con.execute("SELECT COUNT(*) FROM elements").fetchone()[0] == 400
        outputs = [row[0] for row in con.execute("SELECT output FROM steps")]
    assert len(outputs) == 100 and all(o.startswith("answer") for o in outputs)


# ---- reopened conversations ---------------------------------------------------------------------
def test_the_history_is_rebuilt_from_the_stored_answers() -> None:
    thread = {"metadata": {"mode": "multi-query"}, "steps": [
        {"type": "user_message", "output": "q1", "metadata": {}},
        {"type": "assistant_message", "metadata": _answer_meta("q1", "a1")},
        {"type": "assistant_message", "metadata": _answer_meta("off topic", "Sorry",
                                                               refused=True)},
        {"type": "assistant_message", "metadata": json.dumps(_answer_meta("q2", "a2"))},
        {"type": "assistant_message", "metadata": {"other": 1}},
    ]}
    assert rebuild_history(thread, 20) == [("q1", "a1"), ("q2", "a2")]
    assert rebuild_history(thread, 1) == [("q2", "a2")]
    assert stored_mode(thread, "plain") == "multi-query"
    # no mode in the thread (an older one): its last answer's
    assert stored_mode({"metadata": {}, "steps": thread["steps"][:2]}, "plain") == \
        "conversational"
    assert stored_mode({"metadata": {"mode": "bogus"}, "steps": []}, "plain") == "plain"


def test_a_follow_up_continues_from_the_stored_conversation_not_only_this_tabs_memory() -> None:
    q1, q2, q3, q4 = ("q1", "a1"), ("q2", "a2"), ("q3", "a3"), ("q4", "a4")
    # another tab on the conversation answered q3: this tab (resumed with q1, q2) continues it
    assert followup_history([q1, q2], [q1, q2, q3], 20) == [q1, q2, q3]
    # this tab's own answer not stored yet (written in the background): kept, after the stored
    assert followup_history([q1, q2, q4], [q1, q2], 20) == [q1, q2, q4]
    assert followup_history([q1, q2, q4], [q1, q2, q3], 20) == [q1, q2, q3, q4]
    # the same turn twice: each stored turn stands for one remembered turn
    assert followup_history([q1, q1], [q1], 20) == [q1, q1]
    # history off or unreadable: the session's memory; nothing stored yet (writes failing): too
    assert followup_history([q1, q2], None, 20) == [q1, q2]
    assert followup_history([q1, q2], [], 20) == [q1, q2]
    # the newest turns, at most ``limit``
    assert followup_history([q1], [q1, q2, q3], 2) == [q2, q3]
    assert followup_history([q1, q2, q3], None, 2) == [q2, q3]


async def test_a_threads_answer_records_are_read_from_it_alone_in_order(tmp_path: Path) -> None:
    init_http_context()
    layer = _store(tmp_path / "history.db")
    await layer.update_thread("t1", name="one")
    await layer.update_thread("t2", name="two")
    steps = [("t1", "s3", "2026-01-01T00:00:03Z", "q3"), ("t1", "s1", "2026-01-01T00:00:01Z",
             "q1"), ("t2", "s2", "2026-01-01T00:00:02Z", "other"),
             ("t1", "s4", "2026-01-01T00:00:04Z", "refused")]
    for thread, sid, created, question in steps:
        await layer.create_step(_step(thread, sid, "assistant_message", created,
                                      metadata=_answer_meta(question, "a",
                                                            refused=question == "refused")))
    await layer.create_step(_step("t1", "u", "user_message", "2026-01-01T00:00:00Z",
                                  output="q1", metadata={}))
    records = await layer.answer_records("t1")
    assert [r["question"] for r in records or []] == ["q1", "q3", "refused"]
    assert await layer.answer_records("no-such-thread") == []
    await layer.close()
    broken = tmp_path / "dir.db"
    broken.mkdir()  # cannot be opened: nothing read (the chat falls back on its memory)
    unreadable = _store(broken)
    assert await unreadable.answer_records("t1") is None
    assert unreadable.problem
    await unreadable.close()


# ---- upgrades -----------------------------------------------------------------------------------
OLD_SCHEMA = """
CREATE TABLE users (id TEXT PRIMARY KEY, identifier TEXT NOT NULL UNIQUE, "createdAt" TEXT,
                    metadata TEXT NOT NULL);
CREATE TABLE threads (id TEXT PRIMARY KEY, "createdAt" TEXT, name TEXT, "userId" TEXT,
                      "userIdentifier" TEXT, tags TEXT, metadata TEXT);
CREATE TABLE steps (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                    "threadId" TEXT NOT NULL, "parentId" TEXT, streaming BOOLEAN NOT NULL,
                    "waitForAnswer" BOOLEAN, "isError" BOOLEAN, metadata TEXT, tags TEXT,
                    input TEXT, output TEXT, "createdAt" TEXT, start TEXT, "end" TEXT,
                    generation TEXT, "showInput" TEXT, language TEXT);
INSERT INTO users VALUES ('u1', 'local', '2025-01-01T00:00:00Z', '{}');
INSERT INTO threads VALUES ('t-old', '2025-01-01T00:00:00Z', 'Old chat', 'u1', 'local', NULL,
                            '{"mode": "plain"}');
INSERT INTO steps (id, name, type, "threadId", streaming, output, "createdAt", metadata)
       VALUES ('s-old', 'local', 'user_message', 't-old', 0, 'an old question',
               '2025-01-01T00:00:00Z', '{}');
"""


async def test_an_older_file_is_upgraded_without_losing_its_threads(tmp_path: Path) -> None:
    init_http_context()
    db = tmp_path / "history.db"
    with sqlite3.connect(db) as con:
        con.executescript(OLD_SCHEMA)
    assert "autoCollapse" not in _columns(db, "steps")
    layer = _store(db)
    # a step written by today's Chainlit carries the columns the old file lacks
    await layer.create_step(_step("t-old", "s-new", "tool", "2025-01-01T00:00:01Z",
                                  output="found", autoCollapse=False, defaultOpen=True))
    assert layer.problem is None
    assert {"autoCollapse", "defaultOpen", "command", "modes"} <= _columns(db, "steps")
    assert {"elements", "feedbacks"} <= {
        r[0] for r in sqlite3.connect(db).execute("SELECT name FROM sqlite_master")}
    thread = await layer.get_thread("t-old")
    assert thread is not None and thread["name"] == "Old chat"
    assert [s["output"] for s in thread["steps"]] == ["an old question", "found"]
    await layer.close()


# ---- faults -------------------------------------------------------------------------------------
def test_a_corrupt_file_is_set_aside_and_a_new_one_started(tmp_path: Path) -> None:
    db = tmp_path / "history.db"
    db.write_bytes(b"this is not a database, it was overwritten" * 200)
    moved = check_sqlite_file(db)
    assert moved is not None and not db.exists()
    assert Path(moved).read_bytes().startswith(b"this is not a database")  # kept, not deleted

    async def works() -> Any:
        init_http_context()
        layer = _store(db)
        await layer.update_thread("t1", name="new")
        thread = await layer.get_thread("t1")
        await layer.close()
        return layer.problem, thread

    problem, thread = asyncio.run(works())
    assert problem is None and thread is not None and thread["name"] == "new"
    assert check_sqlite_file(db) is None  # a good file stays where it is


async def test_a_read_only_file_fails_writes_quietly_and_says_why(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    init_http_context()
    db = tmp_path / "history.db"
    layer = _store(db)
    await layer.update_thread("t1", name="kept")
    await layer.close()
    # opened read-only (what a file without write permission gives; root ignores chmod)
    layer = HistoryStore(f"sqlite+aiosqlite:///file:{db}?mode=ro&uri=true", sqlite_file=db)
    caplog.set_level("ERROR", logger="app.history")
    await layer.update_thread("t2", name="lost")
    assert layer.problem is not None and "readonly" in layer.problem.replace("-", "")
    assert "history unavailable" in caplog.text
    # further writes are skipped at once for a while (no wait on every step), reads still work
    assert await layer.execute_sql('UPDATE threads SET name = :n', {"n": "x"}) is None
    thread = await layer.get_thread("t1")
    assert thread is not None and thread["name"] == "kept"
    await layer.close()


async def test_a_locked_file_is_reported_and_the_next_write_recovers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    init_http_context()
    monkeypatch.setattr(store, "RETRY_AFTER_S", 0.0)
    monkeypatch.setattr("app.history.db.SQLITE_BUSY_TIMEOUT_S", 0.2)
    db = tmp_path / "history.db"
    layer = _store(db)
    await layer.update_thread("t1", name="first")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another program holds the file
    try:
        await layer.update_thread("t2", name="while locked")
        assert layer.problem is not None and "locked" in layer.problem
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await layer.update_thread("t3", name="after")
    assert layer.problem is None
    assert (await layer.get_thread("t3")) is not None
    assert (await layer.get_thread("t1")) is not None
    await layer.close()


# ---- feedback export ----------------------------------------------------------------------------
async def _rated_file(db: Path) -> None:
    init_http_context()
    layer = _store(db)
    await layer.update_thread("t1", name="c")
    await layer.create_step(_step("t1", "run1", "run", "2026-03-01T10:00:00Z"))
    await layer.create_step(_step("t1", "a1", "assistant_message", "2026-03-01T10:00:01Z",
                                  parentId="run1", metadata=_answer_meta("q up", "a")))
    await layer.create_step(_step("t1", "run2", "run", "2026-03-05T10:00:00Z"))
    await layer.create_step(_step("t1", "a2", "assistant_message", "2026-03-05T10:00:01Z",
                                  parentId="run2",
                                  metadata=_answer_meta("q down", "b", pmids=("9",))))
    await layer.create_step(_step("t1", "a3", "assistant_message", "2026-03-06T10:00:01Z",
                                  metadata=_answer_meta("not rated", "c")))
    # the chat rates the run that answered; a message may also be rated itself
    await layer.upsert_feedback(Feedback(forId="run1", value=1, threadId="t1", comment="great"))
    await layer.upsert_feedback(Feedback(forId="a2", value=0, threadId="t1"))
    await layer.close()


def test_feedback_export_writes_eval_lines(tmp_path: Path) -> None:
    from app.cli import main

    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(f"history:\n  folder: {tmp_path / 'hist'}\n", encoding="utf-8")
    db = tmp_path / "hist" / "history.db"
    db.parent.mkdir()
    asyncio.run(_rated_file(db))

    out = tmp_path / "f.jsonl"
    assert main(["--config", str(cfg_file), "feedback", "export", "--out", str(out)]) == 0
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [(x["question"], x["rating"], x["gold_pmids"]) for x in lines] == [
        ("q up", "up", ["111", "222"]), ("q down", "down", [])]
    assert lines[0]["comment"] == "great" and lines[1]["source_pmids"] == ["9"]
    assert {"qid", "question", "gold_pmids"} <= set(lines[0])  # the eval files' shape
    assert lines[0]["mode"] == "conversational" and lines[0]["style"] == "extractive"

    assert main(["--config", str(cfg_file), "feedback", "export", "--since", "2026-03-02",
                 "--out", str(out)]) == 0
    since = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x["question"] for x in since] == ["q down"]
    assert main(["--config", str(cfg_file), "feedback", "export", "--rating", "up",
                 "--out", str(out)]) == 0
    ups = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [x["question"] for x in ups] == ["q up"]


def test_feedback_export_without_history_says_so(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(f"history:\n  folder: {tmp_path / 'none'}\n", encoding="utf-8")
    assert main(["--config", str(cfg_file), "feedback", "export"]) == 1
    assert "no chat history" in capsys.readouterr().err


# ---- configuration ------------------------------------------------------------------------------
def test_a_database_url_takes_its_password_from_the_environment(tmp_path: Path) -> None:
    from app.config import ConfigError, load_config

    cfg = load_config(overrides={"history": {
        "url": "postgresql+asyncpg://assistant@db.example.org/chat", "password_env": "PW"}})
    assert database_url(cfg, {"PW": "s3cr:t"}) == \
        "postgresql+asyncpg://assistant:s3cr%3At@db.example.org/chat"
    assert database_url(cfg, {}) == "postgresql+asyncpg://assistant@db.example.org/chat"
    with pytest.raises(ConfigError, match="must not contain a password"):
        load_config(overrides={"history": {"url": "postgresql+asyncpg://a:pw@h/db"}})
    default = load_config()
    assert database_url(default) == f"sqlite+aiosqlite:///{sqlite_path(default)}"
    assert sqlite_path(default).is_relative_to(default.root / "data")


async def test_a_question_is_stored_before_it_is_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chat stores the user's question itself, at once (``store_question``), instead of
    leaving it to Chainlit's background task, which a server killed while answering never ran
    (tests/test_ui_browser_history_restart.py kills it there). Mutation caught: the function
    returning without writing -> the step is not in the file."""
    import app.history as history

    init_http_context()
    layer = _store(tmp_path / "history.db")
    monkeypatch.setattr(history, "current_store", lambda: layer)

    class Question:  # what the chat hands over: Chainlit's message, its id and its thread
        thread_id = "t1"

        def to_dict(self) -> dict[str, Any]:
            return _step("t1", "q1", "user_message", "2026-01-01T00:00:00Z",
                         output="Is it safe in pregnancy?")

    await history.store_question(Question())
    thread = await layer.get_thread("t1")
    assert thread is not None
    assert [(s["id"], s["output"]) for s in thread["steps"]] == [("q1", "Is it safe in pregnancy?")]
    await layer.close()
