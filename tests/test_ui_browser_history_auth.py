"""Sign-in when shared, and history faults, against the real server (app/ui.py with the scripted
assistant of tests/browser/fake_app.py: no model needed) and a real SQLite file.

- ``ui.auth: password``: users made by ``python -m app users add``; a wrong password is refused;
  user A cannot open user B's conversation by its id, neither through the page (its socket asks
  to resume the thread) nor through Chainlit's HTTP API, and does not see it listed; nor rate,
  re-rate or un-rate B's answers (``PUT``/``DELETE /feedback``, app/history/ownership.py).
- A history database that cannot be opened: the chat still answers and says so once, the log
  says why; the next start (the file fixed) stores conversations again.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from app.config import load_config
from app.history import UNAVAILABLE_TEXT
from tests.browser.harness import (
    FAKE_APP_ARGS,
    REPO_ROOT,
    ChatPage,
    Server,
    require_chromium,
    running_server,
    write_test_config,
)

pytestmark = pytest.mark.browser

PASSWORDS = {"alice": "alice-password-1", "bob": "bob-password-22"}


def _fake_server(cfg: Path, log: Path) -> Any:
    return running_server(FAKE_APP_ARGS, log, env={"CHAINLIT_APP_ROOT": str(REPO_ROOT),
                                              "PUBMED_ASSISTANT_CFG": str(cfg),
                                              "FAKE_TOKEN_DELAY": "0.01"})


def add_user(cfg: Path, name: str, password: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", "--config", str(cfg), "users", "add",
                           name, "--password-stdin"], input=password + "\n", cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_auth")
    cfg = write_test_config(load_config(), folder / "cfg.yaml", {"ui": {"auth": "password"}})
    for name, password in PASSWORDS.items():
        done = add_user(cfg, name, password)
        assert done.returncode == 0 and f"added {name}" in done.stdout, done.stderr
    with _fake_server(cfg, folder / "server.log") as server:
        yield server


def sign_in(browser: Any, server: Server, name: str, password: str) -> ChatPage:
    chat = ChatPage(browser, server.url)
    chat.page.goto(server.url)
    chat.page.fill("#email", name)
    chat.page.fill("#password", password)
    chat.page.keyboard.press("Enter")
    chat.page.wait_for_selector("#chat-input", timeout=60_000)
    chat.selected_mode_button().wait_for(timeout=60_000)
    return chat


def test_a_user_cannot_open_another_users_conversation_by_its_id(
        browser: Any, shared: Server) -> None:
    anonymous = ChatPage(browser, shared.url)
    try:
        assert anonymous.page.request.post(
            shared.url + "/login", form={"username": "bob", "password": "wrong-password"},
        ).status == 401
        anonymous.page.goto(shared.url)
        anonymous.page.wait_for_selector("#password")  # a login page, not the chat
        assert anonymous.page.request.get(shared.url + "/project/thread/x").status == 401
    finally:
        anonymous.close()

    bob = sign_in(browser, shared, "bob", PASSWORDS["bob"])
    question = "Is bob's private question about IQ answered?"
    try:
        bob.ask(question)
        bob.page.wait_for_url("**/thread/*", timeout=60_000)
        thread_id = bob.page.url.rsplit("/", 1)[1]
        own = bob.page.request.get(f"{shared.url}/project/thread/{thread_id}")
        assert own.status == 200, own.text()
        # stored in the background: bounded wait until the question is in it
        deadline = time.monotonic() + 30
        while question not in bob.page.request.get(
                f"{shared.url}/project/thread/{thread_id}").text():
            assert time.monotonic() < deadline
            time.sleep(0.3)
    finally:
        bob.close()

    alice = sign_in(browser, shared, "alice", PASSWORDS["alice"])
    try:
        api = alice.page.request
        stolen = api.get(f"{shared.url}/project/thread/{thread_id}")
        assert stolen.status in (401, 403, 404), stolen.text()
        assert question not in stolen.text()
        listed = api.post(f"{shared.url}/project/threads",
                          data={"pagination": {"first": 20}, "filter": {}})
        assert listed.status == 200 and thread_id not in listed.text(), listed.text()
        element = api.get(f"{shared.url}/project/thread/{thread_id}/element/x")
        assert element.status in (401, 403, 404)
        # the page's socket asks to resume the thread: refused, nothing of bob's is shown
        alice.page.goto(f"{shared.url}/thread/{thread_id}")
        shared.wait_for_log(r"Authorization for the thread failed")
        alice.page.wait_for_timeout(1000)  # whatever would render has had its chance
        assert question not in alice.page.content()
        # alice's own conversation works and is hers alone
        alice.page.goto(shared.url)
        alice.selected_mode_button().wait_for(timeout=60_000)
        alice.ask("Is alice's question answered?")
        alice.page.wait_for_url("**/thread/*", timeout=60_000)
        assert "Is alice's question answered?" in alice.user_messages()
    finally:
        alice.close()


def _stored_run(api: Any, url: str, thread_id: str) -> str:
    """The id of the run step that answered in the conversation (what the chat's thumbs rate),
    once Chainlit's background tasks have stored it with its answer."""
    deadline = time.monotonic() + 30
    while True:
        got = api.get(f"{url}/project/thread/{thread_id}")
        assert got.status == 200, got.text()
        steps = got.json()["steps"]
        runs = {s["id"] for s in steps if s["type"] == "run"}
        answered = [s["parentId"] for s in steps
                    if s["type"] == "assistant_message" and s.get("parentId") in runs]
        if answered:
            return str(answered[-1])
        assert time.monotonic() < deadline, steps
        time.sleep(0.3)


def _asked(browser: Any, server: Server, name: str, question: str) -> tuple[ChatPage, str, str]:
    """``name`` signed in, having asked ``question``: (tab, conversation id, rated step id)."""
    chat = sign_in(browser, server, name, PASSWORDS[name])
    chat.ask(question)
    chat.page.wait_for_url("**/thread/*", timeout=60_000)
    thread_id = chat.page.url.rsplit("/", 1)[1]
    return chat, thread_id, _stored_run(chat.page.request, server.url, thread_id)


def _feedbacks(server: Server) -> list[tuple[Any, ...]]:
    db = server.log_path.parent / "history" / "history.db"
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        return con.execute("""SELECT "id", "forId", "threadId", "value", "comment"
                              FROM feedbacks ORDER BY "id" """).fetchall()


def test_a_user_cannot_rate_or_unrate_another_users_answer(browser: Any, shared: Server) -> None:
    """Chainlit's own PUT/DELETE /feedback check nobody's ownership: the guarded routes do."""
    url = shared.url + "/feedback"
    alice, a_thread, a_run = _asked(browser, shared, "alice", "Is alice's rated question fine?")
    bob, b_thread, b_run = _asked(browser, shared, "bob", "Is bob's rated question fine?")
    try:
        a_api, b_api = alice.page.request, bob.page.request

        def put(api: Any, for_id: str, value: int, comment: str, thread_id: str,
                feedback_id: str | None = None) -> Any:
            feedback = {"forId": for_id, "value": value, "comment": comment,
                        "threadId": thread_id, **({"id": feedback_id} if feedback_id else {})}
            return api.put(url, data={"feedback": feedback, "sessionId": "s"})

        # alice rates her answer with the page's thumbs: what the page sends passes the check
        before = set(_feedbacks(shared))
        alice.rate(positive=True, comment="alice: helpful")
        added = set(_feedbacks(shared)) - before
        assert len(added) == 1, added
        mine = added.pop()
        fid = mine[0]
        assert mine == (fid, a_run, a_thread, 1, "alice: helpful")

        # bob cannot rate alice's answer, take over her rating for his own answer, or delete it
        assert put(b_api, a_run, 0, "bob was here", a_thread).status == 404
        assert put(b_api, b_run, 0, "bob took it", b_thread, fid).status == 404
        assert put(b_api, a_run, 0, "bob again", a_thread, fid).status == 404
        assert b_api.delete(url, data={"feedbackId": fid}).status == 404
        assert mine in _feedbacks(shared)
        assert not any("bob" in str(row[4]) for row in _feedbacks(shared))
        shared.wait_for_log(r"feedback refused: step \S+ is not in a conversation of 'bob'")
        # nobody signed in: refused before anything is looked up
        anonymous = browser.new_context()
        try:
            assert anonymous.request.put(url, data={"feedback": {"forId": a_run, "value": 0},
                                                    "sessionId": "s"}).status == 401
            assert anonymous.request.delete(url, data={"feedbackId": fid}).status == 401
        finally:
            anonymous.close()

        # bob's own rating works; alice changes hers, then takes it back
        own = put(b_api, b_run, 1, "bob: fine", b_thread)
        assert own.status == 200, own.text()
        # (naming bob's conversation: filed under hers anyway)
        changed = put(a_api, a_run, 0, "alice: on second thought", b_thread, fid)
        assert changed.status == 200 and changed.json()["feedbackId"] == fid
        assert (fid, a_run, a_thread, 0, "alice: on second thought") in _feedbacks(shared)
        assert a_api.delete(url, data={"feedbackId": fid}).status == 200
        assert fid not in {row[0] for row in _feedbacks(shared)}
        assert own.json()["feedbackId"] in {row[0] for row in _feedbacks(shared)}
    finally:
        alice.close()
        bob.close()


def _stored_questions(server: Server, thread_id: str) -> list[str]:
    """The questions of the answers stored in one thread, oldest first."""
    db = server.log_path.parent / "history" / "history.db"
    with sqlite3.connect(db) as con:
        rows = con.execute("""SELECT json_extract("metadata", '$.pubmed_answer.question')
                              FROM steps WHERE "threadId" = ? AND "type" = 'assistant_message'
                              ORDER BY "createdAt" """, (thread_id,)).fetchall()
    return [str(q) for (q,) in rows if q]


def test_two_users_asking_at_once_each_get_their_own_history(
        browser: Any, shared: Server) -> None:
    """Two users, each in a browser of their own, ask and follow up at the same moment (long
    answers: one streams while the other waits): every answer, and every follow-up's history,
    stays in its own user's conversation."""
    questions = {name: [f"Is {name}'s first question answered? long answer",
                        f"And {name}'s follow-up?"] for name in PASSWORDS}
    chats = {name: sign_in(browser, shared, name, password)
             for name, password in PASSWORDS.items()}
    try:
        for turn in range(2):
            sent = {name: chat.send(questions[name][turn]) for name, chat in chats.items()}
            for name, chat in chats.items():
                chat.wait_answer(sent[name], timeout_ms=60_000)
        threads = {}
        for name, chat in chats.items():
            other = next(n for n in PASSWORDS if n != name)
            assert chat.user_messages() == questions[name]
            step = chat.last_search_step()  # the follow-up searched after its own first turn
            assert f"after Is {name}'s first question" in step and other not in step, step
            threads[name] = chat.page.url.rsplit("/", 1)[1]
        assert threads["alice"] != threads["bob"]
        for name, thread_id in threads.items():
            deadline = time.monotonic() + 30  # stored in the background: a bounded wait
            while len(_stored_questions(shared, thread_id)) < 2:
                assert time.monotonic() < deadline, _stored_questions(shared, thread_id)
                time.sleep(0.3)
            assert _stored_questions(shared, thread_id) == questions[name]  # once, in order
    finally:
        for chat in chats.values():
            chat.close()


def test_users_add_keeps_argon2_hashes_only_and_refuses_short_passwords(tmp_path: Path) -> None:
    cfg = write_test_config(load_config(), tmp_path / "cfg.yaml", {"ui": {"auth": "password"}})
    assert add_user(cfg, "carol", "short").returncode == 1
    done = add_user(cfg, "carol", "carol-password-3")
    assert done.returncode == 0, done.stderr
    users = tmp_path / "history" / "users.json"
    text = users.read_text(encoding="utf-8")
    assert "carol-password-3" not in text and "$argon2id$" in text
    assert users.stat().st_mode & 0o777 == 0o600
    again = add_user(cfg, "carol", "carol-password-4")
    assert again.returncode == 0 and "updated the password of carol" in again.stdout


def test_a_broken_history_file_the_chat_answers_says_so_once_and_the_next_start_recovers(
        browser: Any, tmp_path: Path) -> None:
    require_chromium()
    cfg = write_test_config(load_config(), tmp_path / "cfg.yaml")
    db = tmp_path / "history" / "history.db"
    db.mkdir(parents=True)  # a path SQLite cannot open as a database (root ignores chmod)
    with _fake_server(cfg, tmp_path / "server1.log") as server:
        chat = ChatPage(browser, server.url).open()
        try:
            for question in ("Is IQ heritable?", "Does IQ predict health?"):
                answer = chat.ask(question)
                assert "Mode: plain" in answer.inner_text()
            chat.page.get_by_text(UNAVAILABLE_TEXT).first.wait_for(timeout=30_000)
            assert chat.page.get_by_text(UNAVAILABLE_TEXT).count() == 1  # said once
            log = server.wait_for_log(r"history unavailable \((.+)\) while")
            assert "unable to open database file" in log.group(1)
        finally:
            chat.close()
    db.rmdir()  # fixed; the next start recovers
    with _fake_server(cfg, tmp_path / "server2.log") as server:
        chat = ChatPage(browser, server.url).open()
        try:
            chat.ask("Is IQ heritable?")
            chat.page.wait_for_url("**/thread/*", timeout=60_000)
            assert chat.page.get_by_text(UNAVAILABLE_TEXT).count() == 0
        finally:
            chat.close()
        assert "history unavailable" not in server.log()
    assert db.is_file()
