"""One answer in a chat session, as app/ui.py sends it to Chainlit (recorded, no browser)."""

from __future__ import annotations

import asyncio
from typing import Any

import chainlit as cl
import pytest
from chainlit.context import init_http_context
from chainlit.emitter import BaseChainlitEmitter
from chainlit.user_session import user_session

from app import ui
from app.errors import IndexMissingError
from app.ui import QUEUED_TEXT, Backend, answer
from tests.browser import fakes
from tests.browser.fakes import REFUSAL, FakeAssistant
from tests.helpers import until


class RecordingEmitter(BaseChainlitEmitter):
    """Keeps what would go to the browser."""

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self.events: list[tuple[str, Any]] = []

    async def send_step(self, step_dict: Any) -> None:
        self.events.append(("send_step", dict(step_dict)))

    async def update_step(self, step_dict: Any) -> None:
        self.events.append(("update_step", dict(step_dict)))

    async def delete_step(self, step_dict: Any) -> None:
        self.events.append(("delete_step", dict(step_dict)))

    async def stream_start(self, step_dict: Any) -> None:
        self.events.append(("stream_start", dict(step_dict)))

    async def send_token(self, id: str, token: str, is_sequence: bool = False,
                         is_input: bool = False) -> None:
        self.events.append(("send_token", token))

    async def send_element(self, element_dict: Any) -> None:
        self.events.append(("send_element", dict(element_dict)))

    async def set_commands(self, commands: Any) -> None:
        self.events.append(("set_commands", list(commands)))

    def of(self, kind: str) -> list[Any]:
        return [data for k, data in self.events if k == kind]

    def final_message(self) -> dict:
        msgs = [d for k, d in self.events if k in ("update_step", "send_step")
                and d.get("type") == "assistant_message"]
        return msgs[-1]


@pytest.fixture(autouse=True)
def _files_in_tmp(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # Chainlit writes element files under .files/


def new_session(thread_id: str | None = None) -> RecordingEmitter:
    """A fresh Chainlit session in the running test's context, recording what it sends."""
    from chainlit.config import FILES_DIRECTORY

    # Chainlit makes this folder at import and deletes it when a server it runs shuts down
    # (another test's in-process server may have); a session stores its passages there
    FILES_DIRECTORY.mkdir(exist_ok=True)
    ctx = init_http_context(thread_id=thread_id)
    ctx.emitter = RecordingEmitter(ctx.session)
    user_session.set("history", [])
    return ctx.emitter


@pytest.mark.asyncio
async def test_answer_sends_search_step_streamed_tokens_sources_and_passages() -> None:
    emitter = new_session()
    fake = FakeAssistant()
    await answer(Backend(lambda: fake), "Does IQ predict health since 2018?", "multi-query")

    step = next(d for d in emitter.of("update_step") if d.get("name") == "Search")
    assert step["type"] == "tool"
    assert "Sub\\-queries" not in step["output"] and "**Sub-queries:**" in step["output"]
    assert "variant 1" in step["output"]
    assert "**Filters:** year \\>\\= 2018" in step["output"]  # the filters in words

    tokens = [emitter.of("stream_start")[0]["output"], *emitter.of("send_token")]
    assert "".join(tokens).startswith("Higher childhood IQ predicts")
    final = emitter.final_message()["output"]
    assert "[1]" in final and "\\<b\\>and\\</b\\>" in final.replace("\\/", "/")
    assert "(https://pubmed.ncbi.nlm.nih.gov/31234567/)" in final
    assert "(https://pubmed.ncbi.nlm.nih.gov/29999999/)" in final
    assert "<img" not in final.replace("\\<img", "")
    assert final.rstrip().endswith("*Mode: multi\\-query*")

    elements = emitter.of("send_element")
    assert sorted(e["name"] for e in elements) == ["[1]", "[2]", "sources.bib", "sources.ris"]
    assert {e["display"] for e in elements if e["name"].startswith("[")} == {"side"}
    assert {e["display"] for e in elements if e["name"].startswith("sources.")} == {"inline"}
    assert {e["forId"] for e in elements} == {emitter.final_message()["id"]}
    assert user_session.get("history") == [("Does IQ predict health since 2018?",
                                            "".join(fake.tokens))]


@pytest.mark.asyncio
async def test_follow_ups_get_the_history_of_this_session() -> None:
    emitter = new_session()
    fake = FakeAssistant()
    backend = Backend(lambda: fake)
    await answer(backend, "Is IQ heritable?", "conversational")
    await answer(backend, "And in adults?", "conversational")
    assert fake.calls[0]["history"] == []
    assert fake.calls[1]["history"] == [("Is IQ heritable?", "".join(fake.tokens))]
    step = [d for d in emitter.of("update_step") if d.get("name") == "Search"][-1]
    assert "**Rewritten question:** And in adults\\? \\(rewritten\\)" in step["output"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("refusal", "shown"),
    [
        (REFUSAL, REFUSAL),  # nothing in it is markdown: shown exactly as the assistant said it
        # a refusal is escaped like any answer: no emphasis, HTML or underscore markup survives
        ("Sorry, I *only* answer <b>medical</b> questions_",
         "Sorry, I \\*only\\* answer \\<b\\>medical\\</b\\> questions\\_"),
    ],
)  # fmt: skip
async def test_a_refusal_has_no_sources_and_stays_out_of_the_history(
    refusal: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fakes, "REFUSAL", refusal)
    emitter = new_session()
    await answer(Backend(FakeAssistant), "Who won the 2014 football World Cup?", "plain")
    final = emitter.final_message()["output"]
    body, _, rest = final.partition("\n\n")
    assert body == shown
    streamed = [emitter.of("stream_start")[0]["output"], *emitter.of("send_token")]
    assert "".join(streamed) == shown
    assert "Sources" not in rest and not emitter.of("send_element")
    assert user_session.get("history") == []


@pytest.mark.asyncio
async def test_a_waiting_request_shows_queued_then_removes_it() -> None:
    emitter = new_session()
    backend = Backend(FakeAssistant)
    await backend.assistant()
    async with backend.turn():
        task = asyncio.create_task(answer(backend, "q", "plain"))
        while not any(d.get("output") == QUEUED_TEXT for d in emitter.of("send_step")):
            await asyncio.sleep(0.01)
        assert not emitter.of("stream_start")
    await task
    queued_id = next(d["id"] for d in emitter.of("send_step") if d.get("output") == QUEUED_TEXT)
    assert queued_id in [d["id"] for d in emitter.of("delete_step")]
    assert "Sources" in emitter.final_message()["output"]


@pytest.mark.asyncio
async def test_the_queued_notice_says_how_many_questions_come_first() -> None:
    emitter = new_session()
    backend = Backend(FakeAssistant)
    await backend.assistant()
    hold = asyncio.Event()

    async def other_tab() -> None:
        async with backend.turn():
            await hold.wait()

    async with backend.turn():
        first = asyncio.create_task(other_tab())
        await asyncio.sleep(0.01)  # waiting behind the holder: one ahead of ours
        task = asyncio.create_task(answer(backend, "q", "plain"))
        wanted = f"{QUEUED_TEXT} (2 questions ahead of yours)"
        await until(lambda: any(d.get("output") == wanted for d in emitter.of("send_step")),
                    emitter.events)
    # the holder is done: one question is ahead now, and the notice says so
    await until(lambda: any(d.get("output") == QUEUED_TEXT for d in emitter.of("update_step")),
                emitter.events)
    hold.set()
    await first
    await task
    notice = next(d["id"] for d in emitter.of("send_step") if d.get("output") == wanted)
    assert notice in [d["id"] for d in emitter.of("delete_step")]
    assert "Sources" in emitter.final_message()["output"]


@pytest.mark.asyncio
async def test_stopping_marks_the_partial_answer_and_frees_the_slot() -> None:
    emitter = new_session()
    fake = FakeAssistant(tokens=["word "] * 500, token_delay=0.01)
    backend = Backend(lambda: fake)
    task = asyncio.create_task(answer(backend, "q", "plain"))
    while len(emitter.of("send_token")) < 3:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fake.closed == 1 and fake.tokens_sent < 500 and not backend.busy
    assert emitter.final_message()["output"].endswith("*Stopped.*")
    assert user_session.get("history") == []


@pytest.mark.asyncio
async def test_on_message_turns_failures_into_a_short_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emitter = new_session()
    def missing_index() -> FakeAssistant:
        raise IndexMissingError("no index in faiss_indices/pubmed")

    monkeypatch.setattr(ui, "BACKEND", Backend(missing_index))
    await ui._on_message(type("Msg", (), {"content": "Is IQ heritable?"})())
    errors = [d for d in emitter.of("send_step") if d.get("isError")]
    assert len(errors) == 1
    assert "python -m app index build" in errors[0]["output"]
    assert "Traceback" not in errors[0]["output"]

    class Boom(FakeAssistant):
        async def astream(self, question, *, mode, history):  # type: ignore[override]
            raise RuntimeError("CUDA exploded at 0xdeadbeef")
            yield  # pragma: no cover

    monkeypatch.setattr(ui, "BACKEND", Backend(Boom))
    await ui._on_message(type("Msg", (), {"content": "Is IQ heritable?"})())
    errors = [d for d in emitter.of("send_step") if d.get("isError")]
    assert len(errors) == 2 and "0xdeadbeef" not in errors[1]["output"]


@pytest.mark.asyncio
@pytest.mark.parametrize("content", ["", "   \n\t ", "\u200b\u200b", "\u202e\x07", "?!"])
async def test_a_message_with_no_words_gets_a_clear_reply_and_no_search(
        monkeypatch: pytest.MonkeyPatch, content: str) -> None:
    emitter = new_session()

    def never_loaded() -> FakeAssistant:
        raise AssertionError("the assistant was asked to answer a blank message")

    monkeypatch.setattr(ui, "BACKEND", Backend(never_loaded))
    message = cl.Message(content=content, type="user_message")
    await ui._on_message(message)
    replies = [d["output"] for d in emitter.of("send_step")
               if d.get("type") == "assistant_message"]
    assert replies == [ui.EMPTY_QUESTION_TEXT]
    # the blank message itself is taken off the page: no empty bubble (issue #36)
    assert [d["id"] for d in emitter.of("delete_step")] == [message.id]
    assert not any(d.get("isError") for d in emitter.of("send_step"))
    assert user_session.get("history") == []


@pytest.mark.asyncio
async def test_each_question_is_answered_in_the_mode_of_its_highlighted_button(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The mode buttons (app/mode_control.py): the button sent with a question picks its mode; a
    question sent with none highlighted gets the configured default and the buttons again, that
    default highlighted."""
    emitter = new_session()
    fake = FakeAssistant()
    monkeypatch.setattr(ui, "BACKEND", Backend(lambda: fake))
    monkeypatch.setattr(ui, "_show_index_status", _no_status)
    await ui._chat_start()
    (buttons,) = emitter.of("set_commands")
    assert [(b["id"], b["selected"]) for b in buttons] == [
        ("Plain", True), ("Conversational", False), ("Multi-query", False)]
    assert all(b["button"] and b["persistent"] for b in buttons)

    def message(text: str, command: str | None) -> Any:
        return type("Msg", (), {"content": text, "command": command})()

    await ui._on_message(message("Is IQ heritable?", "Multi-query"))
    await ui._on_message(message("And in adults?", "Conversational"))
    assert [c["mode"] for c in fake.calls] == ["multi-query", "conversational"]
    assert len(emitter.of("set_commands")) == 1  # a button was highlighted: nothing re-sent
    await ui._on_message(message("Is IQ heritable?", None))
    assert fake.calls[-1]["mode"] == "plain"
    again = emitter.of("set_commands")[-1]
    assert [b["id"] for b in again if b["selected"]] == ["Plain"]


async def _no_status() -> None:
    return None


@pytest.mark.asyncio
async def test_a_new_chat_starts_with_no_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chainlit's "New chat" opens a new session and runs on_chat_start: follow-ups there get
    no history, even in a process whose earlier session had some."""
    new_session()
    fake = FakeAssistant()
    monkeypatch.setattr(ui, "BACKEND", Backend(lambda: fake))
    monkeypatch.setattr(ui, "_show_index_status", _no_status)
    await ui._chat_start()
    await answer(ui.BACKEND, "Is IQ heritable?", "conversational")
    assert user_session.get("history")
    new_session()
    user_session.set("history", [("left over", "from before")])  # what a reused session held
    await ui._chat_start()
    await answer(ui.BACKEND, "And in adults?", "conversational")
    assert fake.calls[-1]["history"] == []


@pytest.mark.asyncio
async def test_two_tabs_on_one_conversation_continue_from_its_stored_turns(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two chat sessions (tabs) on one stored conversation, history on a real SQLite file: a
    follow-up in one tab is answered with the turn the other tab just added, and every answer
    is stored once, in order, in that conversation."""
    import sqlite3

    import chainlit.data as cl_data
    from chainlit.context import context_var

    from app.history import HistoryStore

    db = tmp_path / "history.db"
    store = HistoryStore(f"sqlite+aiosqlite:///{db}", sqlite_file=db)
    monkeypatch.setattr(cl_data, "_data_layer", store)
    monkeypatch.setattr(cl_data, "_data_layer_initialized", True)
    fake = FakeAssistant()
    backend = Backend(lambda: fake)
    answer_text = "".join(fake.tokens)

    def tab(thread_id: str, memory: list[tuple[str, str]]) -> Any:
        new_session(thread_id)
        user_session.set("history", list(memory))
        return context_var.get()

    async def ask(ctx: Any, question: str) -> None:
        async def run() -> None:  # in its own task: the tab's context is set there only
            context_var.set(ctx)
            await answer(backend, question, "conversational")
        await asyncio.create_task(run())

    one = tab("thread-1", [])
    await ask(one, "Is IQ heritable?")
    await ask(one, "And in adults?")
    turns = [("Is IQ heritable?", answer_text), ("And in adults?", answer_text)]
    two = tab("thread-1", turns)  # opened from the sidebar: resumed with the stored turns
    other = tab("thread-2", [])  # another conversation, at the same time
    await asyncio.gather(ask(one, "And in twins?"), ask(other, "Is sleep linked to IQ?"))
    await ask(two, "And in siblings?")
    assert fake.calls[-1]["question"] == "And in siblings?"
    assert fake.calls[-1]["history"][-1] == ("And in twins?", answer_text)  # tab one's turn
    await ask(one, "What about adoption?")  # and tab one continues from tab two's
    assert fake.calls[-1]["history"][-2:] == [("And in twins?", answer_text),
                                              ("And in siblings?", answer_text)]

    def stored() -> list[tuple[str, str]]:
        with sqlite3.connect(db) as con:
            return con.execute("""SELECT "threadId", json_extract("metadata",
                                  '$.pubmed_answer.question') FROM steps WHERE
                                  "type" = 'assistant_message' ORDER BY "createdAt" """).fetchall()

    expected = [("thread-1", q) for q in ("Is IQ heritable?", "And in adults?", "And in twins?",
                                          "And in siblings?", "What about adoption?")]
    await until(lambda: len(stored()) >= 6, stored)
    rows = stored()
    assert [r for r in rows if r[0] == "thread-1"] == expected  # once each, in order
    assert [r for r in rows if r[0] == "thread-2"] == [("thread-2", "Is sleep linked to IQ?")]
    await store.close()
