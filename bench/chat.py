"""``python -m app bench chat``: many users at once, through the real chat server.

Starts ``python -m app serve`` on 127.0.0.1 (a free port; the given ``--config``, else cfg.yaml:
the default model and the full index), waits until its model is loaded, then opens N
conversations at once over Chainlit's own Socket.IO protocol, as the browser does (connect with
``auth`` = ``{clientType, sessionId, threadId, userEnv, chatProfile}``, emit
``connection_successful``, then one ``client_message`` per question, the mode's button text as
``command``). Each conversation asks Q questions in Conversational mode, every other one a
follow-up that only makes sense with that conversation's history ("Does that hold in women?").

Checked: every question answered (counted), no error message, no mixed histories (each question's
search step, the standalone question the server searched, names its own conversation's topic and
no other conversation's), and, when the server keeps a chat-history database, every answer stored
once (:func:`stored_answers_check`). Reported: time to answer p50/p95 (from sending the question
to the whole answer, queueing included), what a user sees meanwhile and when (the running
indicator, a queued notice, the search step, the first words), and the server's peak RSS (the
process and its children, sampled every 0.2 s).

Bounded: ``--timeout`` for the whole run, ``--answer-timeout`` per answer; loopback only: the
server it starts listens on 127.0.0.1 and nothing else is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from settings.config import REPO_ROOT, Config

HOST = "127.0.0.1"  # the only address this bench ever talks to
SOCKET_PATH = "/ws/socket.io"
MODE_COMMAND = "Conversational"  # the mode's button text (chains.modes.MODE_TABLE)
LOADED_LOG = re.compile(r"language model loaded|assistant not loaded at startup: (.*)")
SERVER_START_TIMEOUT_S = 600  # stall guard: importing torch and loading the model on a busy CPU

# One topic per conversation: (its keyword, as a phrase). The keywords are distinct words, so a
# question searched with another conversation's history names another conversation's keyword.
TOPICS: tuple[tuple[str, str], ...] = (
    ("dementia", "dementia"), ("mortality", "mortality"), ("schizophrenia", "schizophrenia"),
    ("autism", "autism"), ("depression", "depression"), ("obesity", "obesity"),
    ("smoking", "smoking"), ("alcohol", "alcohol use"), ("diabetes", "diabetes"),
    ("stroke", "stroke"), ("epilepsy", "epilepsy"), ("bilingualism", "bilingualism"),
    ("sleep", "sleep duration"), ("breastfeeding", "breastfeeding"),
    ("iodine", "iodine deficiency"), ("anemia", "anemia"), ("preterm", "preterm birth"),
    ("ADHD", "ADHD"), ("music", "music training"), ("exercise", "physical exercise"),
)  # fmt: skip
# A conversation: the topic's question, a follow-up, another topic question, a follow-up, ...
# (a follow-up is searched with the previous question: retrievers.followup.in_context_query)
TEMPLATES: tuple[tuple[str, bool], ...] = (
    ("Is intelligence associated with {phrase}?", False),
    ("Does that hold in women?", True),
    ("Which studies of {phrase} and IQ were longitudinal?", False),
    ("How large is the effect?", True),
    ("Is the link between {phrase} and cognitive ability causal?", False),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conversations", type=int, default=20,
                        help=f"conversations at once (default 20, at most {len(TOPICS)})")
    parser.add_argument("--questions", type=int, default=5,
                        help="questions per conversation, every other one a follow-up (default 5)")
    parser.add_argument("--answer-timeout", type=float, default=900.0,
                        help="seconds one answer may take, queueing included (default 900)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds the whole run may take (default 3600)")
    parser.add_argument("--data-dir", default=None,
                        help="the server's chat-history folder: check every answer is stored "
                        "once in its SQLite database (default: not checked)")
    parser.add_argument("--server-log", default=None,
                        help="keep the server's log here (default: a temporary file)")
    parser.add_argument("--out", default=None, help="also write the report as JSON here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


# ---- the conversations ----------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    text: str
    follow_up: bool


def conversation_script(phrase: str, n_questions: int) -> list[Question]:
    """``n_questions`` questions on ``phrase``: the templates in turn (repeated when more)."""
    return [Question(TEMPLATES[i % len(TEMPLATES)][0].format(phrase=phrase),
                     TEMPLATES[i % len(TEMPLATES)][1]) for i in range(n_questions)]


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
        """Connect as Chainlit's web client does, and wait until the chat has started (its mode
        buttons arrived): a question sent earlier could meet the start's own task_end."""
        auth = {"clientType": "webapp", "sessionId": self.session_id, "threadId": "",
                "userEnv": "{}", "chatProfile": ""}
        await self.sio.connect(self.url, socketio_path=SOCKET_PATH, auth=auth,
                               transports=["websocket"], wait_timeout=timeout)
        await self.sio.emit("connection_successful")
        await self._wait_for(lambda: any(e[1] == "set_commands" for e in self.events), timeout)

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
def _names(text: str, keyword: str) -> bool:
    return re.search(rf"\b{re.escape(keyword)}\b", text, re.IGNORECASE) is not None


def history_problems(conversations: Sequence[tuple[str, Sequence[Turn]]]) -> list[str]:
    """Each question's searched question names no other conversation's topic keyword, and its
    own: a follow-up names it only through its own history, when the question before it is in
    that history (answered with sources; a refusal stays out of the history)."""
    keywords = [k for k, _ in conversations]
    problems = []
    for i, (keyword, turns) in enumerate(conversations):
        for j, turn in enumerate(turns):
            if turn.answer_s is None:
                continue  # counted as unanswered
            where = f"conversation {i + 1} ({keyword}), question {j + 1} {turn.question!r}"
            if not turn.searched:
                problems.append(f"{where}: no search step")
                continue
            foreign = [k for k in keywords if k != keyword and _names(turn.searched, k)]
            if foreign:
                problems.append(f"{where}: searched {turn.searched!r}, names {foreign}")
            has_context = j > 0 and turns[j - 1].sources > 0
            if turn.follow_up and not has_context:
                continue  # nothing of this conversation for it to use
            if not _names(turn.searched, keyword):
                problems.append(f"{where}: searched {turn.searched!r}, not its topic")
            if turn.follow_up and "Rewritten question" not in turn.search_step:
                problems.append(f"{where}: a follow-up searched without its history")
    return problems


def stored_answers_check(data_dir: Path | None, answer_ids: Iterable[str]) -> dict[str, Any]:
    """The hook for a chat-history database: every answer (its Chainlit step id) stored once.

    ``data_dir``: the server's history folder. Each SQLite file in it (``*.db``, ``*.sqlite``,
    ``*.sqlite3``) with Chainlit's ``steps`` table is searched; ``checked`` is False, with the
    reason, when there is none."""
    ids = [i for i in answer_ids if i]
    if data_dir is None:
        return {"checked": False, "reason": "no --data-dir given"}
    files = sorted(p for pattern in ("*.db", "*.sqlite", "*.sqlite3")
                   for p in Path(data_dir).glob(pattern))
    for path in files:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "steps" not in tables:
                continue
            counts = {i: db.execute("SELECT COUNT(*) FROM steps WHERE id = ?", (i,)).fetchone()[0]
                      for i in ids}
        missing = sorted(i for i, n in counts.items() if n == 0)
        twice = sorted(i for i, n in counts.items() if n > 1)
        return {"checked": True, "database": str(path), "answers": len(ids),
                "missing": missing, "stored_more_than_once": twice,
                "ok": not missing and not twice}
    return {"checked": False, "reason": f"no SQLite file with a steps table in {data_dir}"}


# ---- the server -----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """``python -m app serve`` on 127.0.0.1 in its own process group; its RSS sampled."""

    def __init__(self, config_path: str | None, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.log_path = log_path
        args = [sys.executable, "-m", "app"]
        if config_path:
            args += ["--config", str(Path(config_path).expanduser().resolve())]
        args += ["serve", "--host", HOST, "--port", str(self.port)]
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(args, cwd=REPO_ROOT, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.peak_rss = 0
        self._sampling = threading.Event()
        self._sampler: threading.Thread | None = None

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def rss(self) -> int:
        """Bytes resident in the server and its children now."""
        import psutil

        try:
            proc = psutil.Process(self.proc.pid)
            procs = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0
        total = 0
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def wait_loaded(self, timeout: float = SERVER_START_TIMEOUT_S) -> None:
        """Until /health answers and the log says the model is loaded (or failed to load)."""
        deadline = time.monotonic() + timeout
        healthy = False
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}:\n"
                                   f"{self.log()[-3000:]}")
            if not healthy:
                try:
                    with urllib.request.urlopen(self.url + "/health", timeout=2) as resp:
                        healthy = resp.status == 200
                except OSError:
                    pass
            found = LOADED_LOG.search(self.log())
            if healthy and found:
                if found.group(1):
                    raise RuntimeError(f"the server could not load the assistant: {found.group(1)}")
                return
            time.sleep(0.5)
        raise RuntimeError(f"the server was not ready after {timeout:.0f} s:\n{self.log()[-3000:]}")

    def start_sampling(self, every_s: float = 0.2) -> None:
        def sample() -> None:
            while not self._sampling.wait(every_s):
                self.peak_rss = max(self.peak_rss, self.rss())
        self.peak_rss = self.rss()
        self._sampler = threading.Thread(target=sample, daemon=True)
        self._sampler.start()

    def stop(self) -> None:
        self._sampling.set()
        if self._sampler is not None:
            self._sampler.join(timeout=5)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own process group only
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        self._log.close()


# ---- the run --------------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def _spread(values: Sequence[float | None]) -> dict[str, float | None]:
    seen = [v for v in values if v is not None]
    return {"n": len(seen), "p50": percentile(seen, 50), "p95": percentile(seen, 95),
            "max": max(seen) if seen else None}


async def load(url: str, n_conversations: int, n_questions: int,
               answer_timeout: float) -> tuple[list[tuple[str, list[Turn]]], float, Turn]:
    """Warm up with one question, then run the conversations at once; returns them, the
    wall-clock seconds they took, and the warm-up turn."""
    warm = ChatClient(url)
    await warm.connect()
    warmup = await warm.ask(Question("Is intelligence heritable?", False), answer_timeout)
    await warm.close()
    topics = TOPICS[:n_conversations]
    clients = [ChatClient(url) for _ in topics]
    await asyncio.gather(*(c.connect() for c in clients))
    t0 = time.perf_counter()
    try:
        results = await asyncio.gather(*(
            run_conversation(c, conversation_script(phrase, n_questions), answer_timeout)
            for c, (_, phrase) in zip(clients, topics, strict=True)))
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    wall = time.perf_counter() - t0
    return [(k, turns) for (k, _), turns in zip(topics, results, strict=True)], wall, warmup


def report(conversations: list[tuple[str, list[Turn]]], wall_s: float, warmup: Turn,
           peak_rss: int, loaded_rss: int, stored: dict[str, Any],
           n_questions: int) -> dict[str, Any]:
    turns = [t for _, ts in conversations for t in ts]
    answered = [t for t in turns if t.answer_s is not None]
    notices: dict[str, int] = {}  # each notice text shown, its counts written N
    for t in turns:
        for text in {re.sub(r"\d+", "N", n) for n in t.notices}:
            notices[text] = notices.get(text, 0) + 1
    problems = history_problems(conversations)
    errors = [f"{t.question!r}: {e}" for t in turns for e in t.errors]
    expected = len(conversations) * n_questions
    waits = [t.search_step_s - t.running_s for t in answered
             if t.search_step_s is not None and t.running_s is not None]
    return {
        "conversations": len(conversations), "questions_each": n_questions,
        "answers": len(answered), "answers_expected": expected,
        "errors": errors, "mixed_history_problems": problems,
        "ok": len(answered) == expected and not errors and not problems
              and stored.get("ok", True),
        "wall_s": round(wall_s, 1),
        "answers_per_min": round(60 * len(answered) / wall_s, 1) if wall_s else None,
        "time_to_answer_s": _spread([t.answer_s for t in answered]),
        "time_to_running_indicator_s": _spread([t.running_s for t in answered]),
        "time_to_notice_s": _spread([t.notice_s for t in answered]),
        "time_to_search_step_s": _spread([t.search_step_s for t in answered]),
        "time_to_first_words_s": _spread([t.first_words_s for t in answered]),
        "waited_before_search_s": _spread(waits),
        "notices_shown": notices,
        "questions_with_a_notice": sum(1 for t in answered if t.notices),
        "warmup_answer_s": warmup.answer_s,
        "server_rss_mib": {"model_loaded": round(loaded_rss / 2**20),
                           "peak": round(peak_rss / 2**20)},
        "stored": stored,
        "transcripts": [{"topic": k, "turns": [asdict(t) for t in ts]}
                        for k, ts in conversations],
    }


def _fmt(spread: dict[str, float | None]) -> str:
    if not spread["n"]:
        return "never"
    return (f"p50 {spread['p50']:.2f} s, p95 {spread['p95']:.2f} s, max {spread['max']:.2f} s "
            f"(n={spread['n']})")


def print_report(rep: dict[str, Any]) -> None:
    print(f"bench chat: {rep['conversations']} conversations x {rep['questions_each']} "
          f"questions (Conversational mode), {rep['answers']}/{rep['answers_expected']} answered "
          f"in {rep['wall_s']} s ({rep['answers_per_min']} answers/min)")
    print(f"  time to answer (send -> whole answer, queueing included): "
          f"{_fmt(rep['time_to_answer_s'])}")
    print("  what a user sees meanwhile (seconds after sending):")
    print(f"    running indicator (stop button): {_fmt(rep['time_to_running_indicator_s'])}")
    print(f"    a notice, removed when its answer starts: {_fmt(rep['time_to_notice_s'])}; "
          f"{rep['questions_with_a_notice']} questions had one: {rep['notices_shown']}")
    print(f"    the search step: {_fmt(rep['time_to_search_step_s'])}")
    print(f"    first words of the answer: {_fmt(rep['time_to_first_words_s'])}")
    print(f"  warm-up answer (before the load): {rep['warmup_answer_s']} s")
    rss = rep["server_rss_mib"]
    print(f"  server RSS: {rss['model_loaded']} MiB with the model loaded, peak {rss['peak']} MiB")
    stored = rep["stored"]
    print("  stored answers: " + (
        f"{'ok' if stored.get('ok') else 'NOT ok'} ({stored['database']}: "
        f"{len(stored['missing'])} missing, {len(stored['stored_more_than_once'])} twice)"
        if stored.get("checked") else f"not checked ({stored['reason']})"))
    print(f"  errors: {len(rep['errors'])}; mixed-history problems: "
          f"{len(rep['mixed_history_problems'])}")
    for line in (rep["errors"] + rep["mixed_history_problems"])[:20]:
        print(f"    - {line}")
    print("OK" if rep["ok"] else "FAILED")


def run(cfg: Config, args: argparse.Namespace) -> int:
    import tempfile

    from settings.errors import UserFacingError

    if not 1 <= args.conversations <= len(TOPICS):
        raise UserFacingError(f"--conversations must be between 1 and {len(TOPICS)}")
    if args.questions < 1:
        raise UserFacingError("--questions must be at least 1")
    folder = Path(tempfile.mkdtemp(prefix="bench_chat_"))
    log_path = Path(args.server_log) if args.server_log else folder / "server.log"
    server = ServerProcess(getattr(args, "config", None), log_path)
    try:
        server.wait_loaded()
        loaded_rss = server.rss()
        server.start_sampling()
        conversations, wall, warmup = asyncio.run(asyncio.wait_for(
            load(server.url, args.conversations, args.questions, args.answer_timeout),
            args.timeout))
    except TimeoutError:
        raise UserFacingError(f"the run took longer than --timeout {args.timeout:.0f} s "
                              f"(server log: {log_path})") from None
    finally:
        server.stop()
    ids = [t.answer_id for _, turns in conversations for t in turns]
    stored = stored_answers_check(Path(args.data_dir) if args.data_dir else None, ids)
    rep = report(conversations, wall, warmup, server.peak_rss, loaded_rss, stored, args.questions)
    rep["server_log"] = str(log_path)
    if args.out:
        Path(args.out).write_text(json.dumps(rep, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(rep, indent=2))
    else:
        print_report(rep)
    return 0 if rep["ok"] else 1


__all__ = ["ChatClient", "history_problems", "stored_answers_check"]
