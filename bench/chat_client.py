"""The bench chat's client side: one conversation over Chainlit's Socket.IO protocol, as the
browser speaks it, and what each answer showed and when (:func:`read_turn`)."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

HOST = "127.0.0.1"  # the only address this bench ever talks to
SOCKET_PATH = "/ws/socket.io"
MODE_COMMAND = "Conversational"  # the mode's button text (chains.modes.MODE_TABLE)
# A conversation: the topic's question, a follow-up, another topic question, a follow-up, ...
# (a follow-up is searched with the previous question: retrievers.followup.in_context_query)
TEMPLATES: tuple[tuple[str, bool], ...] = (
    ("Is intelligence associated with {phrase}?", False),
    ("Does that hold in women?", True),
    ("Which studies of {phrase} and IQ were longitudinal?", False),
    ("How large is the effect?", True),
    ("Is the link between {phrase} and cognitive ability causal?", False),
)


@dataclass(frozen=True)
class Question:
    text: str
    follow_up: bool


def conversation_script(phrase: str, n_questions: int) -> list[Question]:
    """``n_questions`` questions on ``phrase``: the templates in turn (repeated when more)."""
    return [Question(TEMPLATES[i % len(TEMPLATES)][0].format(phrase=phrase),
                     TEMPLATES[i % len(TEMPLATES)][1]) for i in range(n_questions)]


def sign_in(url: str) -> str | None:
    """The session cookie of the local user, as the page gets it (``ui.auth: none`` with chat
    history signs every page in as one local user through ``/auth/header``); None when the
    server has no such sign-in (no history, or password sign-in)."""
    request = urllib.request.Request(url + "/auth/header", data=b"", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            cookies = resp.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError:
        return None
    return "; ".join(c.split(";", 1)[0] for c in cookies) or None


@dataclass
class Turn:
    """One question of one conversation, as its browser would have seen it (seconds after the
    question was sent)."""

    question: str
    follow_up: bool
    running_s: float | None = None  # task_start: the stop button / running indicator
    notices: list[str] = field(default_factory=list)  # messages shown then removed (queued...)
    notice_s: float | None = None
    search_step_s: float | None = None  # the "Search" step appears
    first_words_s: float | None = None  # the answer's first streamed words
    answer_s: float | None = None  # the whole answer (sources, mode label)
    searched: str = ""  # the question the server searched (its search step)
    search_step: str = ""
    answer: str = ""
    answer_id: str = ""
    sources: int = 0  # PubMed links under the answer (0: refused or nothing found)
    errors: list[str] = field(default_factory=list)


_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_PUBMED_LINK = re.compile(r"https://pubmed\.ncbi\.nlm\.nih\.gov/(\d+)/")
_SEARCHED = re.compile(r"\*\*(?:Searched for|Rewritten question):\*\*\s*(.*)")


def unescape_markdown(text: str) -> str:
    return _MD_ESCAPE.sub(r"\1", text)


def searched_question(search_step: str) -> str:
    """The searched (or rewritten) question in a search step's markdown."""
    found = _SEARCHED.search(search_step)
    return unescape_markdown(found.group(1)).strip() if found else ""


class ChatClient:
    """One browser's worth of the chat protocol (python-socketio's AsyncClient)."""

    def __init__(self, url: str) -> None:
        import socketio

        self.url = url
        self.session_id = str(uuid.uuid4())
        self.sio = socketio.AsyncClient(reconnection=False)
        self.events: list[tuple[float, str, Any]] = []
        self._changed = asyncio.Event()
        for name in ("task_start", "task_end", "new_message", "update_message", "delete_message",
                     "stream_start", "stream_token", "set_commands"):
            self.sio.on(name, self._recorder(name))

    def _recorder(self, name: str) -> Any:
        async def record(data: Any = None) -> None:
            self.events.append((time.perf_counter(), name, data))
            self._changed.set()
        return record

    async def _wait_for(self, check: Any, timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while not check():
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass

    async def connect(self, timeout: float = 120.0) -> None:
        """Connect as Chainlit's web client does, and wait until the chat has started: its mode
        buttons arrived and the start's task has ended. A question sent earlier has its own
        task_start before the start's task_end, which :meth:`ask` would take for its answer's
        end (and file that answer under the next question)."""
        auth = {"clientType": "webapp", "sessionId": self.session_id, "threadId": "",
                "userEnv": "{}", "chatProfile": ""}
        cookie = await asyncio.to_thread(sign_in, self.url)
        await self.sio.connect(self.url, socketio_path=SOCKET_PATH, auth=auth,
                               headers={"Cookie": cookie} if cookie else {},
                               transports=["websocket"], wait_timeout=timeout)
        await self.sio.emit("connection_successful")
        await self._wait_for(self._started, timeout)

    def _started(self) -> bool:
        names = [e[1] for e in self.events]
        return "set_commands" in names and "task_end" in names[names.index("set_commands"):]

    async def ask(self, question: Question, timeout: float, command: str = MODE_COMMAND) -> Turn:
        start = len(self.events)
        message = {"threadId": "", "id": str(uuid.uuid4()), "name": "User",
                   "type": "user_message", "output": question.text, "command": command,
                   "createdAt": datetime.now(UTC).isoformat(), "metadata": {}}
        sent = time.perf_counter()
        await self.sio.emit("client_message", {"message": message, "fileReferences": []})

        def finished() -> bool:
            names = [e[1] for e in self.events[start:]]
            return "task_start" in names and "task_end" in names[names.index("task_start"):]

        turn = Turn(question.text, question.follow_up)
        try:
            await self._wait_for(finished, timeout)
        except TimeoutError:
            turn.errors.append(f"no answer within {timeout:.0f} s")
        read_turn(turn, self.events[start:], sent)
        return turn

    async def close(self) -> None:
        await self.sio.disconnect()


def read_turn(turn: Turn, events: Sequence[tuple[float, str, Any]], sent: float) -> None:
    """Fill ``turn`` from the events its question caused (what the page would have shown)."""
    deleted = {d.get("id") for _, name, d in events if name == "delete_message"}
    for t, name, data in events:
        at = round(t - sent, 3)
        if name == "task_start" and turn.running_s is None:
            turn.running_s = at
        if name == "stream_token" and turn.first_words_s is None:
            turn.first_words_s = at
        if name not in ("new_message", "update_message", "stream_start"):
            continue
        kind, output = data.get("type"), str(data.get("output") or "")
        if data.get("isError"):
            turn.errors.append(output)
        elif data.get("name") == "Search" and kind == "tool":
            if turn.search_step_s is None:
                turn.search_step_s = at
            if output:
                turn.search_step = output
                turn.searched = searched_question(output)
        elif kind == "assistant_message" and data.get("id") in deleted:
            if output and output not in turn.notices:
                turn.notices.append(output)
                turn.notice_s = at if turn.notice_s is None else turn.notice_s
        elif kind == "assistant_message":
            if name == "stream_start" and turn.first_words_s is None:
                turn.first_words_s = at
            if "Mode:" in output:
                turn.answer, turn.answer_id, turn.answer_s = output, str(data.get("id")), at
                turn.sources = len(set(_PUBMED_LINK.findall(output)))


async def run_conversation(client: ChatClient, script: Sequence[Question],
                           answer_timeout: float) -> list[Turn]:
    turns = []
    for question in script:
        turn = await client.ask(question, answer_timeout)
        turns.append(turn)
        if turn.errors and turn.answer_s is None:
            break  # the conversation cannot go on sensibly
    return turns


# ---- checks ---------------------------------------------------------------------------------
