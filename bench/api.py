"""``python -m app bench api``: many API clients at once (and, with ``--chat-users``, chat users
at the same time) through the real server, in one queue.

Starts ``python -m app serve`` on 127.0.0.1 (as ``bench chat`` does; or uses ``--url``, a server
already running, then no memory is measured), waits until its model is loaded, then runs N
clients at once. Each client is a conversation on its own topic over ``POST /api/v1/ask`` in
Conversational mode, carrying its own history (every other question a follow-up that only makes
sense with it: "Does that hold in women?").

Checked: every question answered (HTTP 200 with an answer record), no mixed histories (each
searched question names its own conversation's topic and no other's), each first question's
sources are its own (the PMIDs the retriever alone gives for that question, ``/api/v1/search``,
asked after the load), and the chat users' answers (bench chat's checks). Reported: time to
answer p50/p95/max (queueing included), answers per minute, the server's RSS with the model
loaded and its peak (process and children, sampled every 0.2 s).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.chat import TOPICS, history_folder, history_problems, names_keyword
from bench.chat_client import HOST, ChatClient, conversation_script, run_conversation
from bench.chat_server import ServerProcess
from bench.spread import emit_report, format_spread, spread
from settings.config import Config
from settings.config_file import write_config

MODE = "conversational"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", type=int, default=20,
                        help=f"API clients at once (default 20, at most {len(TOPICS)})")
    parser.add_argument("--questions", type=int, default=3,
                        help="questions per client, every other one a follow-up (default 3)")
    parser.add_argument("--chat-users", type=int, default=0,
                        help="chat users asking at the same time, over the chat's own protocol "
                        "(default 0)")
    parser.add_argument("--url", default=None,
                        help=f"a server already running on {HOST} (default: start one)")
    parser.add_argument("--key", default=None, help="an API key (a server that needs one)")
    parser.add_argument("--answer-timeout", type=float, default=900.0,
                        help="seconds one answer may take, queueing included (default 900)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds the whole run may take (default 3600)")
    parser.add_argument("--out", default=None, help="also write the report as JSON here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


@dataclass
class ApiTurn:
    question: str
    follow_up: bool
    status: int | None = None
    answer_s: float | None = None
    searched: str = ""
    pmids: list[str] = field(default_factory=list)
    answer: str = ""
    refused: bool = False
    errors: list[str] = field(default_factory=list)


async def ask(client: Any, url: str, turn: ApiTurn, history: list[dict[str, str]],
              timeout: float) -> None:
    t0 = time.perf_counter()
    try:
        resp = await client.post(f"{url}/api/v1/ask", timeout=timeout, json={
            "question": turn.question, "mode": MODE, "history": history})
    except Exception as err:  # noqa: BLE001 - reported as this turn's error
        turn.errors.append(f"{type(err).__name__}: {err}")
        return
    turn.status = resp.status_code
    if resp.status_code != 200:
        turn.errors.append(f"HTTP {resp.status_code}: {resp.text[:300]}")
        return
    record = resp.json()
    turn.answer_s = round(time.perf_counter() - t0, 3)
    turn.searched = record["searched_question"]
    turn.pmids = [s["pmid"] for s in record["sources"]]
    turn.answer = record["answer"]
    turn.refused = bool(record["refused"])


async def conversation(client: Any, url: str, phrase: str, n_questions: int,
                       timeout: float) -> list[ApiTurn]:
    history: list[dict[str, str]] = []
    turns = []
    for q in conversation_script(phrase, n_questions):
        turn = ApiTurn(q.text, q.follow_up)
        await ask(client, url, turn, history, timeout)
        turns.append(turn)
        if turn.answer_s is None:
            break
        if not turn.refused:  # as the chat: a refusal stays out of the history
            history.append({"question": turn.question, "answer": turn.answer})
    return turns


def mixed_problems(conversations: list[tuple[str, list[ApiTurn]]]) -> list[str]:
    keywords = [k for k, _ in conversations]
    problems = []
    for i, (keyword, turns) in enumerate(conversations):
        for j, turn in enumerate(turns):
            if turn.answer_s is None:
                continue
            where = f"client {i + 1} ({keyword}), question {j + 1} {turn.question!r}"
            foreign = [k for k in keywords if k != keyword and names_keyword(turn.searched, k)]
            if foreign:
                problems.append(f"{where}: searched {turn.searched!r}, names {foreign}")
            has_context = j > 0 and bool(turns[j - 1].pmids)
            if (not turn.follow_up or has_context) and not names_keyword(turn.searched, keyword):
                problems.append(f"{where}: searched {turn.searched!r}, not its topic")
    return problems


async def own_sources(client: Any, url: str, conversations: list[tuple[str, list[ApiTurn]]],
                      k: int = 3) -> list[str]:
    """Each first question's sources are among what the retriever alone finds for it."""
    problems = []
    for keyword, turns in conversations:
        if not turns or turns[0].answer_s is None or not turns[0].pmids:
            continue
        resp = await client.post(f"{url}/api/v1/search", json={"query": turns[0].question,
                                                               "k": max(k, len(turns[0].pmids))})
        found = {h["pmid"] for h in resp.json()["hits"]} if resp.status_code == 200 else set()
        if not set(turns[0].pmids) <= found:
            problems.append(f"{keyword}: sources {turns[0].pmids} are not the search's "
                            f"{sorted(found)}")
    return problems


async def until_ready(client: Any, url: str, timeout: float) -> None:
    """Until ``/api/v1/ready`` says the index and model are loaded (a stall guard: ``timeout``)."""
    deadline = time.perf_counter() + timeout
    while True:
        try:
            resp = await client.get(f"{url}/api/v1/ready")
            if resp.status_code == 200:
                return
            reason = resp.json().get("reason", resp.text)
        except Exception as err:  # noqa: BLE001 - not up yet
            reason = str(err)
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the server at {url} was not ready: {reason}")
        await asyncio.sleep(0.5)


async def load(url: str, key: str | None, n_clients: int, n_questions: int, chat_users: int,
               timeout: float) -> dict[str, Any]:
    import httpx

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    limits = httpx.Limits(max_connections=n_clients + 4)
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=timeout) as client:
        await until_ready(client, url, timeout)
        warm = ApiTurn("Is intelligence heritable?", False)
        await ask(client, url, warm, [], timeout)  # the first answer warms caches
        topics = TOPICS[:n_clients]
        chat_topics = TOPICS[n_clients:n_clients + chat_users] if chat_users else ()
        chats = [ChatClient(url) for _ in chat_topics]
        await asyncio.gather(*(c.connect() for c in chats))
        t0 = time.perf_counter()
        try:
            api_runs = asyncio.gather(*(conversation(client, url, phrase, n_questions, timeout)
                                        for _, phrase in topics))
            chat_runs = asyncio.gather(*(
                run_conversation(c, conversation_script(phrase, n_questions), timeout)
                for c, (_, phrase) in zip(chats, chat_topics, strict=True)))
            api_results, chat_results = await asyncio.gather(api_runs, chat_runs)
        finally:
            await asyncio.gather(*(c.close() for c in chats), return_exceptions=True)
        wall = time.perf_counter() - t0
        conversations = [(k, turns) for (k, _), turns in zip(topics, api_results, strict=True)]
        chat_convs = [(k, turns) for (k, _), turns in zip(chat_topics, chat_results,
                                                          strict=True)]
        sources = await own_sources(client, url, conversations)
    return {"api": conversations, "chat": chat_convs, "wall_s": wall, "warmup": warm,
            "sources_problems": sources}


def report(run: dict[str, Any], n_questions: int, loaded_rss: int, peak_rss: int
           ) -> dict[str, Any]:
    api: list[tuple[str, list[ApiTurn]]] = run["api"]
    chat = run["chat"]
    turns = [t for _, ts in api for t in ts]
    answered = [t for t in turns if t.answer_s is not None]
    chat_turns = [t for _, ts in chat for t in ts]
    chat_answered = [t for t in chat_turns if t.answer_s is not None]
    errors = [f"{t.question!r}: {e}" for t in turns + chat_turns for e in t.errors]
    mixed = mixed_problems(api) + history_problems(chat)
    expected = len(api) * n_questions
    chat_expected = len(chat) * n_questions
    wall = run["wall_s"]
    return {
        "clients": len(api), "chat_users": len(chat), "questions_each": n_questions,
        "answers": len(answered), "answers_expected": expected,
        "chat_answers": len(chat_answered), "chat_answers_expected": chat_expected,
        "errors": errors, "mixed_history_problems": mixed,
        "sources_problems": run["sources_problems"],
        "ok": (len(answered) == expected and len(chat_answered) == chat_expected and not errors
               and not mixed and not run["sources_problems"]),
        "wall_s": round(wall, 1),
        "answers_per_min": round(60 * (len(answered) + len(chat_answered)) / wall, 1)
        if wall else None,
        "time_to_answer_s": spread([t.answer_s for t in answered if t.answer_s is not None]),
        "chat_time_to_answer_s": spread([t.answer_s for t in chat_answered
                                          if t.answer_s is not None]),
        "warmup_answer_s": run["warmup"].answer_s,
        "server_rss_mib": {"model_loaded": round(loaded_rss / 2**20),
                           "peak": round(peak_rss / 2**20)} if loaded_rss else None,
        "transcripts": [{"topic": k, "turns": [asdict(t) for t in ts]} for k, ts in api],
    }


def print_report(rep: dict[str, Any]) -> None:
    print(f"bench api: {rep['clients']} API clients x {rep['questions_each']} questions "
          f"(Conversational mode), {rep['answers']}/{rep['answers_expected']} answered; "
          f"{rep['chat_users']} chat users at once, {rep['chat_answers']}/"
          f"{rep['chat_answers_expected']} answered; {rep['wall_s']} s "
          f"({rep['answers_per_min']} answers/min)")
    print(f"  API time to answer (request -> answer record, queueing included): "
          f"{format_spread(rep['time_to_answer_s'])}")
    if rep["chat_users"]:
        print(f"  chat time to answer: {format_spread(rep['chat_time_to_answer_s'])}")
    print(f"  warm-up answer (before the load): {rep['warmup_answer_s']} s")
    rss = rep["server_rss_mib"]
    if rss:
        print(f"  server RSS: {rss['model_loaded']} MiB with the model loaded, peak "
              f"{rss['peak']} MiB")
    print(f"  errors: {len(rep['errors'])}; mixed-history problems: "
          f"{len(rep['mixed_history_problems'])}; source problems: "
          f"{len(rep['sources_problems'])}")
    for line in (rep["errors"] + rep["mixed_history_problems"] + rep["sources_problems"])[:20]:
        print(f"    - {line}")
    print("OK" if rep["ok"] else "FAILED")


def run(cfg: Config, args: argparse.Namespace) -> int:
    from settings.errors import UserFacingError

    if not 1 <= args.clients + args.chat_users <= len(TOPICS):
        raise UserFacingError(f"--clients plus --chat-users must be between 1 and {len(TOPICS)}")
    if args.questions < 1:
        raise UserFacingError("--questions must be at least 1")
    server = None
    url = args.url
    loaded_rss = 0
    if url is None:
        folder = Path(tempfile.mkdtemp(prefix="bench_api_"))
        config_path = args.config
        history = history_folder(cfg, None, folder)
        if history is not None:  # the run's own history, never the user's
            config_path = str(write_config(cfg, folder / "bench_cfg.yaml",
                                           {"history": {"folder": str(history)},
                                            # the queue is measured, not the per-address
                                            # rate limit (every client here is 127.0.0.1)
                                            "api": {"max_queue": max(32, args.clients * 2),
                                                    "rate_burst": 1000,
                                                    "rate_limit_per_minute": 6000}}))
        server = ServerProcess(config_path, folder / "server.log")
        url = server.url
    try:
        if server is not None:
            server.wait_loaded()
            loaded_rss = server.rss()
            server.start_sampling()
        result = asyncio.run(asyncio.wait_for(
            load(url.rstrip("/"), args.key, args.clients, args.questions, args.chat_users,
                 args.answer_timeout), args.timeout))
    except TimeoutError:
        raise UserFacingError(f"the run took longer than --timeout {args.timeout:.0f} s") \
            from None
    finally:
        if server is not None:
            server.stop()
    rep = report(result, args.questions, loaded_rss, server.peak_rss if server else 0)
    if server is not None:
        rep["server_log"] = str(server.log_path)
    return emit_report(rep, args.out, args.json, print_report)
