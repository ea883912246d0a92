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
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.chat_client import (  # noqa: F401 - the conversation types, importable from here
    HOST,
    ChatClient,
    Question,
    Turn,
    conversation_script,
    read_turn,
    run_conversation,
)
from bench.chat_server import ServerProcess, free_port  # noqa: F401
from bench.spread import emit_report, format_spread, spread
from settings.config import Config
from settings.config_file import write_config

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
                        help="the chat-history folder the server stores in, checked after the "
                        "run (every answer stored once in its SQLite database); default: a new "
                        "temporary folder, so a run never adds conversations to your own "
                        "history")
    parser.add_argument("--server-log", default=None,
                        help="keep the server's log here (default: a temporary file)")
    parser.add_argument("--out", default=None, help="also write the report as JSON here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


# ---- the checks -----------------------------------------------------------------------------
def names_keyword(text: str, keyword: str) -> bool:
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
            foreign = [k for k in keywords if k != keyword and names_keyword(turn.searched, k)]
            if foreign:
                problems.append(f"{where}: searched {turn.searched!r}, names {foreign}")
            has_context = j > 0 and turns[j - 1].sources > 0
            if turn.follow_up and not has_context:
                continue  # nothing of this conversation for it to use
            if not names_keyword(turn.searched, keyword):
                problems.append(f"{where}: searched {turn.searched!r}, not its topic")
            if turn.follow_up and "Rewritten question" not in turn.search_step:
                problems.append(f"{where}: a follow-up searched without its history")
    return problems


def history_folder(cfg: Config, given: str | None, scratch: Path) -> Path | None:
    """Where the bench's server keeps its SQLite chat history: ``--data-dir``, else a folder in
    the run's ``scratch`` folder, never the user's own ``history.folder`` (None: history off or
    kept in another database, which the run leaves as configured)."""
    if not cfg.history.enabled or cfg.history.url is not None:
        return None
    return Path(given).expanduser().resolve() if given else scratch / "history"


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


# ---- the report -----------------------------------------------------------------------------
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
        "time_to_answer_s": spread([t.answer_s for t in answered]),
        "time_to_running_indicator_s": spread([t.running_s for t in answered]),
        "time_to_notice_s": spread([t.notice_s for t in answered]),
        "time_to_search_step_s": spread([t.search_step_s for t in answered]),
        "time_to_first_words_s": spread([t.first_words_s for t in answered]),
        "waited_before_search_s": spread(waits),
        "notices_shown": notices,
        "questions_with_a_notice": sum(1 for t in answered if t.notices),
        "warmup_answer_s": warmup.answer_s,
        "server_rss_mib": {"model_loaded": round(loaded_rss / 2**20),
                           "peak": round(peak_rss / 2**20)},
        "stored": stored,
        "transcripts": [{"topic": k, "turns": [asdict(t) for t in ts]}
                        for k, ts in conversations],
    }


def print_report(rep: dict[str, Any]) -> None:
    print(f"bench chat: {rep['conversations']} conversations x {rep['questions_each']} "
          f"questions (Conversational mode), {rep['answers']}/{rep['answers_expected']} answered "
          f"in {rep['wall_s']} s ({rep['answers_per_min']} answers/min)")
    print(f"  time to answer (send -> whole answer, queueing included): "
          f"{format_spread(rep['time_to_answer_s'])}")
    print("  what a user sees meanwhile (seconds after sending):")
    print("    running indicator (stop button): "
          f"{format_spread(rep['time_to_running_indicator_s'])}")
    print("    a notice, removed when its answer starts: "
          f"{format_spread(rep['time_to_notice_s'])}; "
          f"{rep['questions_with_a_notice']} questions had one: {rep['notices_shown']}")
    print(f"    the search step: {format_spread(rep['time_to_search_step_s'])}")
    print(f"    first words of the answer: {format_spread(rep['time_to_first_words_s'])}")
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
    history = history_folder(cfg, args.data_dir, folder)
    config_path = args.config
    if history is not None:  # the same config, its history moved to the run's folder
        config_path = str(write_config(cfg, folder / "bench_cfg.yaml",
                                       {"history": {"folder": str(history)}}))
    server = ServerProcess(config_path, log_path)
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
    stored = stored_answers_check(history, ids)
    rep = report(conversations, wall, warmup, server.peak_rss, loaded_rss, stored, args.questions)
    rep["server_log"] = str(log_path)
    return emit_report(rep, args.out, args.json, print_report)


__all__ = ["ChatClient", "history_problems", "stored_answers_check"]
